"""`ar` archives (static libraries, `.a`): each member read by the ELF, Mach-O or Wasm
reader, and the members summed into one Image.

The format: the global header `!<arch>\\n`, then members, each a 60-byte header (name 16,
dates and modes 32, decimal size 10, the terminator "`\\n") and its data, padded to an
even offset. GNU names a member `NAME/`, or `/N` for the name at offset N of the `//`
member (the long-name table, entries ending "/\\n"); `/` and `/SYM64/` are the symbol
index. BSD names one `#1/N`, its name the first N bytes of the data, and its symbol
index `__.SYMDEF`. Every size and offset is checked against the file's length before
anything is read.

Each member's sections keep their names, so the views sum `.text` across members; the
segments view has one row per member, `lib.a(member.o)`. The ar headers, the symbol
index and the long-name table are rows of their own, so the file column still sums to
the archive's size.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, NamedTuple

from icount.size.model import Container, Image, Region, SymbolTable

if TYPE_CHECKING:
    from icount.size.source import Blob

MAGIC = b"!<arch>\n"
THIN = b"!<thin>\n"
HEADER = 60
KIND = "archive"
HEADERS = "[ar headers]"
INDEX = "[ar symbol index]"
NAMES = "[ar long names]"
OTHER = "[members not ELF, Mach-O or Wasm]"


def is_archive(head: bytes) -> bool:
    return head.startswith((MAGIC, THIN))


class Member(NamedTuple):
    name: str
    header: int  # offset of its 60-byte header
    start: int  # offset of its data (past a BSD name)
    size: int  # bytes of data (a BSD name excluded)
    special: str  # INDEX or NAMES for the archive's own tables, "" for a member


def members(blob: Blob) -> list[Member]:
    """The members in file order, the symbol index and long-name table included."""
    if bytes(blob.data[:8]) == THIN:
        raise blob.fail(
            "a thin archive (!<thin>): its members are files elsewhere; give icount those files"
        )
    out: list[Member] = []
    names = b""
    pos = len(MAGIC)
    while pos < blob.size:
        if blob.size - pos == 1 and blob.data[pos : pos + 1] == b"\n":
            break  # the last member's padding
        raw = blob.read(pos, HEADER, "archive member header")
        if raw[58:60] != b"`\n":
            raise blob.fail(f'archive member header at offset {pos} does not end in "`\\n"')
        field = raw[:16].decode("latin-1").rstrip(" ")
        size = _decimal(blob, raw[48:58], pos, "size")
        data = pos + HEADER
        blob.check(data, size, f"archive member at offset {pos}")
        start, special = data, ""
        if field in ("/", "/SYM64/"):
            name, special = field, INDEX
        elif field == "//":
            name, special = field, NAMES
            names = blob.read(data, size, "archive long-name table")
        elif field.startswith("#1/"):
            n = _decimal(blob, raw[3:16], pos, "BSD name length")
            if n > size:
                raise blob.fail(
                    f"archive member at offset {pos}: its name ({n} bytes) is longer than "
                    f"the member ({size} bytes)"
                )
            name = blob.read(data, n, "member name").rstrip(b"\0").decode("utf-8", "replace")
            start = data + n
            special = INDEX if name.startswith("__.SYMDEF") else ""
        elif field.startswith("/") and _DIGITS.fullmatch(raw[1:16].rstrip(b" ")):
            name = _long_name(blob, names, int(raw[1:16]), pos)
        else:
            name = field.removesuffix("/")
            special = INDEX if name.startswith("__.SYMDEF") else ""
        out.append(Member(name, pos, start, data + size - start, special))
        pos = data + size + (size & 1)
    return out


# ASCII digits of the raw bytes: str.isdigit() takes '²' (0xB2 in latin-1), int() not
_DIGITS = re.compile(rb"[0-9]{1,12}")


def _decimal(blob: Blob, raw: bytes, pos: int, what: str) -> int:
    digits = raw.strip(b" ")
    if not _DIGITS.fullmatch(digits):
        text = digits.decode("latin-1")
        raise blob.fail(f"archive member header at offset {pos}: {what} {text!r} is not a number")
    return int(digits)


def _long_name(blob: Blob, names: bytes, offset: int, pos: int) -> str:
    if offset >= len(names):
        raise blob.fail(
            f"archive member at offset {pos}: its name is at offset {offset} of a long-name "
            f"table of {len(names)} bytes"
        )
    end = names.find(b"\n", offset)
    raw = names[offset : end if end >= 0 else len(names)]
    return raw.decode("utf-8", "replace").removesuffix("/")


def read_archive(blob: Blob, symbols: bool = True) -> Image:
    """One Image of the whole archive: its members' sections, summed by the views."""
    from icount.size.formats import known, read_object
    from icount.size.source import Blob as MemberBlob

    listed = members(blob)
    base = os.path.basename(blob.name) or blob.name
    heads = [Region(HEADERS, 0, len(MAGIC), 0)]
    heads += [Region(HEADERS, m.header, m.start - m.header, 0) for m in listed]
    sections: list[Region] = []
    containers: list[Container] = []
    segments: list[Region] = []
    tables: list[tuple[SymbolTable, int]] = []
    fmts: set[str] = set()
    archs: set[str] = set()
    vm_total, objects, other = 0, 0, 0
    for m in listed:
        if m.special:
            sections.append(Region(m.special, m.start, m.size, 0))
            segments.append(Region(m.special, m.start, m.size, 0))
            continue
        data = bytes(blob.data[m.start : m.start + m.size])
        if not known(data[:8]):
            other += 1
            sections.append(Region(OTHER, m.start, m.size, 0))
            segments.append(Region(OTHER, m.start, m.size, 0))
            continue
        images = read_object(MemberBlob(f"{blob.name}({m.name})", data), symbols) or []
        if len(images) != 1:
            raise blob.fail(f"member {m.name} is a fat Mach-O file: one architecture a member")
        image = images[0]
        objects += 1
        fmts.add(image.fmt)
        archs.add(image.arch)
        vm_total += image.vm_total
        if image.symbols is not None:
            tables.append((image.symbols, len(sections)))
        sections += [_shifted(r, m.start) for r in image.sections]
        containers += [
            Container(c.label, c.start + m.start, c.length, c.vm) for c in image.section_containers
        ]
        segments.append(Region(f"{base}({m.name})", m.start, m.size, image.vm_total))
    out = Image(
        path=blob.name,
        arch=archs.pop() if len(archs) == 1 else ("mixed" if archs else "none"),
        fmt=fmts.pop() if len(fmts) == 1 else ("mixed formats" if fmts else "ar"),
        kind=KIND,
        file_size=blob.size,
        vm_total=vm_total,
        sections=sections + heads,
        section_containers=containers,
        segments=segments + heads,
    )
    said = f"{objects} member{'s' if objects != 1 else ''} summed (--by segments lists each)"
    if other:
        said += f"; {other} not ELF, Mach-O or Wasm, counted whole as {OTHER}"
    out.notes.append(said)
    if symbols:
        out.symbols = _merged(blob, tables)
    return out


def _shifted(r: Region, by: int) -> Region:
    """A member's region at its offset in the archive; its symbol range stays the
    member's own (symbols are read from the member)."""
    return Region(
        r.label, r.start + by, r.length, r.vm, r.executable, r.sym_addr, r.sym_size, r.compressed
    )


def _merged(blob: Blob, tables: list[tuple[SymbolTable, int]]) -> SymbolTable | None:
    """The members' symbol tables as one: regions renumbered into the archive's
    sections, string tables concatenated (each name offset kept inside its own)."""
    import numpy as np

    if not tables:
        return None
    kinds = {(t.sized, t.strip_underscore) for t, _ in tables}
    if len(kinds) > 1:
        raise blob.fail("members of more than one object format (ELF and Mach-O)")
    strtab = bytearray()
    regions, addrs, sizes, ranks, offsets = [], [], [], [], []
    for t, first in tables:
        tab = t.strtab
        raw = tab if isinstance(tab, bytes) else bytes(tab.data[tab.start : tab.start + tab.size])
        inside = (t.name_off >= 0) & (t.name_off < len(raw))
        offsets.append(np.where(inside, t.name_off + len(strtab), -1))
        strtab += raw + b"\0"  # a table without a final NUL ends at its own end
        regions.append(np.where(t.region >= 0, t.region + first, -1))
        addrs.append(t.addr)
        sizes.append(t.size)
        ranks.append(t.rank)
    sources = sorted({t.source for t, _ in tables})
    sized, underscore = kinds.pop()
    return SymbolTable(
        source=", ".join(sources),
        region=np.concatenate(regions).astype(np.int64),
        addr=np.concatenate(addrs).astype(np.uint64),
        size=np.concatenate(sizes).astype(np.uint64),
        rank=np.concatenate(ranks).astype(np.int64),
        name_off=np.concatenate(offsets).astype(np.int64),
        strtab=bytes(strtab),
        sized=sized,
        strip_underscore=underscore,
        missing=tables[0][0].missing if all(t.missing for t, _ in tables) else "",
    )
