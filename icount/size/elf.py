"""ELF: sections, segments and the symbol table of one file, as an Image.

The ELF header of the common case (a known class, byte order, file type and machine)
is read with struct; any other header goes to pyelftools, which names every machine
and reports what is wrong with a bad header. Importing pyelftools' ELFFile costs
~25 ms, 7% of `nm -S` on a 200 MB library, and the common case needs a dozen fields.
The section and program header tables are read with struct (a few dozen entries in
most files: importing numpy for them would cost more than a small file's whole
breakdown); the symbol table, which runs to a million entries, is read in bulk as a
numpy structured array over the mapped file, only when a view needs it.
pyelftools' per-entry objects cost ~30x what `nm` does on a large library, and its
lazily linked section objects recurse through hostile `sh_link` cycles.
"""

from __future__ import annotations

import io
import struct
from typing import TYPE_CHECKING, Any, NamedTuple

from icount.size.model import Image, Region, SymbolTable
from icount.size.source import Blob

if TYPE_CHECKING:
    import numpy as np

SHT_NOBITS = 8
SHT_SYMTAB = 2
SHT_DYNSYM = 11
SHT_SYMTAB_SHNDX = 18
SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4
SHF_TLS = 0x400
SHF_COMPRESSED = 0x800
PT_LOAD = 1
PT_DYNAMIC = 2
PT_TLS = 7
DT_FLAGS_1 = 0x6FFFFFFB
DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_RPATH, DT_RUNPATH = 1, 5, 10, 15, 29
DF_1_PIE = 0x08000000
SHN_LORESERVE = 0xFF00
SHN_XINDEX = 0xFFFF
PN_XNUM = 0xFFFF
ET_REL = 1

# More sections than this is not a real file (the largest -ffunction-sections objects
# hold a few hundred thousand); refusing early bounds time and memory.
MAX_SECTIONS = 1 << 20

_KINDS = {1: "object file", 2: "executable", 3: "shared object", 4: "core file"}
# readelf: "DYN (Position-Independent Executable file)" when DT_FLAGS_1 has DF_1_PIE
PIE = "position-independent executable"
_COMPRESSION = {1: "zlib", 2: "zstd"}  # ELFCOMPRESS_*
_SYMBOL_TYPES = (0, 1, 2, 6, 10)  # NOTYPE, OBJECT, FUNC, TLS, GNU_IFUNC
_RANK = {1: 0, 10: 0, 2: 1, 0: 2}  # GLOBAL, GNU_UNIQUE, WEAK, LOCAL


# Field layouts (ELF gABI), "name:type" in file order; 32-bit files reorder some fields.
_SHDR = {
    64: "name:u4 type:u4 flags:u8 addr:u8 offset:u8 size:u8 link:u4 info:u4 addralign:u8"
    " entsize:u8",
    32: "name:u4 type:u4 flags:u4 addr:u4 offset:u4 size:u4 link:u4 info:u4 addralign:u4"
    " entsize:u4",
}
_PHDR = {
    64: "type:u4 flags:u4 offset:u8 vaddr:u8 paddr:u8 filesz:u8 memsz:u8 align:u8",
    32: "type:u4 offset:u4 vaddr:u4 paddr:u4 filesz:u4 memsz:u4 flags:u4 align:u4",
}
_SYM = {
    64: "name:u4 info:u1 other:u1 shndx:u2 value:u8 size:u8",
    32: "name:u4 value:u4 size:u4 info:u1 other:u1 shndx:u2",
}
_STRUCT_CODES = {"u1": "B", "u2": "H", "u4": "I", "u8": "Q"}


class Shdr(NamedTuple):
    name: int
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    addralign: int
    entsize: int


class Phdr(NamedTuple):
    type: int
    flags: int
    offset: int
    vaddr: int
    paddr: int
    filesz: int
    memsz: int
    align: int


def _layout(spec: str, end: str, fields: tuple[str, ...]) -> tuple[struct.Struct, list[int]]:
    """The struct of one entry, and where each of `fields` sits among its values."""
    pairs = [x.split(":") for x in spec.split()]
    st = struct.Struct(end + "".join(_STRUCT_CODES[t] for _, t in pairs))
    order = [f for f, _ in pairs]
    return st, [order.index(f) for f in fields]


def _dtype(spec: str, end: str) -> np.dtype[Any]:
    """A packed structured dtype from "name:type ..." in byte order `end` ('<' or '>')."""
    import numpy as np

    return np.dtype([(f, end + t) for f, t in (x.split(":") for x in spec.split())])


# pyelftools' names (ENUM_E_TYPE, ENUM_E_MACHINE) of the file types and machines read
# without it; tests/size/test_elf.py checks them against pyelftools.
_TYPE_NAMES = {1: "ET_REL", 2: "ET_EXEC", 3: "ET_DYN", 4: "ET_CORE"}
MACHINE_NAMES = {
    2: "EM_SPARC",
    3: "EM_386",
    8: "EM_MIPS",
    20: "EM_PPC",
    21: "EM_PPC64",
    22: "EM_S390",
    40: "EM_ARM",
    43: "EM_SPARCV9",
    62: "EM_X86_64",
    183: "EM_AARCH64",
    243: "EM_RISCV",
    247: "EM_BPF",
    258: "EM_LOONGARCH",
}
# after e_ident: e_type, e_machine, e_version, e_entry, e_phoff, e_shoff, e_flags, e_ehsize,
# e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx
_EHDR = {64: "HHIQQQIHHHHHH", 32: "HHIIIIIHHHHHH"}
_EHDR_FIELDS = (
    "e_ehsize",
    "e_phentsize",
    "e_phnum",
    "e_shentsize",
    "e_shnum",
    "e_shstrndx",
)


def _header(blob: Blob) -> dict[str, Any]:
    return _plain_header(blob) or _header_by_pyelftools(blob)


def _plain_header(blob: Blob) -> dict[str, Any] | None:
    """The header fields read_elf uses, as pyelftools gives them; None when the class,
    byte order, file type or machine is one this reader does not name itself."""
    if blob.size < 6 or blob.data[4] not in (1, 2) or blob.data[5] not in (1, 2):
        return None
    bits = 64 if blob.data[4] == 2 else 32
    fmt = ("<" if blob.data[5] == 1 else ">") + _EHDR[bits]
    if blob.size < 16 + struct.calcsize(fmt):
        return None
    f = struct.unpack_from(fmt, blob.data, 16)
    typ, machine = _TYPE_NAMES.get(f[0]), MACHINE_NAMES.get(f[1])
    if typ is None or machine is None:
        return None
    return {
        "bits": bits,
        "little": blob.data[5] == 1,
        "type": typ,
        "machine": machine,
        "e_phoff": f[4],
        "e_shoff": f[5],
        **dict(zip(_EHDR_FIELDS, f[7:], strict=True)),
    }


def _header_by_pyelftools(blob: Blob) -> dict[str, Any]:
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    need = 64 if blob.size > 4 and blob.data[4] == 2 else 52
    if blob.size < need:
        raise blob.fail(f"truncated ELF header: {blob.size} bytes, need {need}")
    stream: Any = blob.data if not isinstance(blob.data, bytes) else io.BytesIO(blob.data)
    try:
        elf = ELFFile(stream)
        h = elf.header
        out = {
            "bits": elf.elfclass,
            "little": elf.little_endian,
            "type": h["e_type"],
            "machine": h["e_machine"],
            **{
                k: int(h[k])
                for k in (
                    "e_shoff",
                    "e_shnum",
                    "e_shentsize",
                    "e_shstrndx",
                    "e_phoff",
                    "e_phnum",
                    "e_phentsize",
                    "e_ehsize",
                )
            },
        }
    except ELFError as e:
        raise blob.fail(f"invalid ELF header: {e}") from None
    except Exception as e:  # pyelftools' struct layer raises assorted errors on garbage
        raise blob.fail(f"invalid ELF header ({type(e).__name__}: {e})") from None
    finally:
        stream.seek(0)
    return out


def _table(
    blob: Blob,
    offset: int,
    count: int,
    entsize: int,
    dtype: np.dtype[Any],
    what: str,
    limit: int | None = MAX_SECTIONS,
    copy: bool = True,
) -> Any:
    """`count` entries at `offset`: a copy, or (copy=False) a view into the file for a
    caller that converts every field anyway."""
    import numpy as np

    if count == 0:
        return np.zeros(0, dtype=dtype)
    if entsize != dtype.itemsize:
        raise blob.fail(f"{what}: entry size {entsize}, expected {dtype.itemsize}")
    if limit is not None and count > limit:
        raise blob.fail(f"{what}: {count} entries is more than icount accepts ({limit})")
    blob.check(offset, count * entsize, what)
    table = np.frombuffer(blob.data, dtype=dtype, count=count, offset=offset)
    return table.copy() if copy else table


def _entries(
    blob: Blob, offset: int, count: int, entsize: int, spec: str, end: str, kind: Any, what: str
) -> list[Any]:
    """`count` header table entries at `offset` as `kind` tuples, after checking that
    they lie inside the file and that there are no more than MAX_SECTIONS."""
    st, order = _layout(spec, end, kind._fields)
    if count == 0:
        return []
    if entsize != st.size:
        raise blob.fail(f"{what}: entry size {entsize}, expected {st.size}")
    if count > MAX_SECTIONS:
        raise blob.fail(f"{what}: {count} entries is more than icount accepts ({MAX_SECTIONS})")
    blob.check(offset, count * entsize, what)
    raw = memoryview(blob.data)[offset : offset + count * entsize]
    try:
        return [kind._make([v[k] for k in order]) for v in st.iter_unpack(raw)]
    finally:
        raw.release()


def read_elf(blob: Blob, symbols: bool = True) -> Image:
    """The Image of an ELF file; `symbols=False` leaves the symbol table unread."""
    h = _header(blob)
    bits, end = h["bits"], "<" if h["little"] else ">"
    shent, phent = struct.calcsize(_fmt(_SHDR[bits])), struct.calcsize(_fmt(_PHDR[bits]))
    shoff, shnum, shstrndx, phnum = h["e_shoff"], h["e_shnum"], h["e_shstrndx"], h["e_phnum"]
    if shoff and (shnum == 0 or shstrndx == SHN_XINDEX or phnum == PN_XNUM):
        # extended numbering: the real counts live in section header 0
        s0 = _entries(blob, shoff, 1, h["e_shentsize"], _SHDR[bits], end, Shdr, "section header 0")
        shnum = shnum or s0[0].size
        shstrndx = s0[0].link if shstrndx == SHN_XINDEX else shstrndx
        phnum = s0[0].info if phnum == PN_XNUM else phnum
    shdrs: list[Shdr] = _entries(
        blob,
        shoff,
        shnum if shoff else 0,
        h["e_shentsize"],
        _SHDR[bits],
        end,
        Shdr,
        "section header table",
    )
    phdrs: list[Phdr] = _entries(
        blob, h["e_phoff"], phnum, h["e_phentsize"], _PHDR[bits], end, Phdr, "program header table"
    )
    shnum = len(shdrs)

    names = _section_names(blob, shdrs, shstrndx)
    loads = [p for p in phdrs if p.type == PT_LOAD]
    for k, p in enumerate(loads):
        blob.check(p.offset, p.filesz, f"LOAD segment #{k}")
    load_ranges = [(p.offset, p.offset + p.filesz) for p in loads]
    is_rel = h["type"] == "ET_REL"

    def mapped(start: int, length: int) -> int:
        return sum(max(0, min(start + length, b) - max(start, a)) for a, b in load_ranges)

    sections: list[Region] = []
    region_of = [-1] * max(shnum, 1)
    for i in range(1, shnum):
        s = shdrs[i]
        length = 0 if s.type == SHT_NOBITS else s.size
        label = names[i] or f"[section {i}]"
        if length:
            blob.check(s.offset, length, f"section {label}")
        alloc = bool(s.flags & SHF_ALLOC)
        # per-thread: no image address space
        tbss = s.type == SHT_NOBITS and bool(s.flags & SHF_TLS)
        vm = s.size if alloc and not tbss else 0
        region_of[i] = len(sections)
        sections.append(
            Region(
                label,
                s.offset,
                length,
                vm,
                executable=alloc and bool(s.flags & SHF_EXECINSTR),
                sym_addr=0 if is_rel else s.addr,
                sym_size=s.size,
                compressed=_compression(blob, s, bits, end) if length else None,
            )
        )
    headers = [
        Region("[ELF header]", 0, h["e_ehsize"], mapped(0, h["e_ehsize"])),
        Region(
            "[program headers]",
            h["e_phoff"],
            len(phdrs) * phent,
            mapped(h["e_phoff"], len(phdrs) * phent),
        ),
        Region("[section headers]", shoff, shnum * shent, 0),
    ]
    vm_total = sum(p.memsz for p in loads) if loads else sum(r.vm for r in sections)

    segments: list[Region] = []
    for k, p in enumerate(loads):
        rwx = "".join(c if p.flags & bit else "-" for c, bit in (("R", 4), ("W", 2), ("X", 1)))
        segments.append(Region(f"LOAD #{k} [{rwx}]", p.offset, p.filesz, p.memsz))
    segments += [Region(r.label, r.start, r.length, 0) for r in headers]
    for r in sections:
        # inside a LOAD these get no bytes (the LOAD row starts first); outside: unmapped
        if r.vm and not loads:
            segments.append(Region("[loadable sections]", r.start, r.length, r.vm))
        else:
            segments.append(Region("[sections outside segments]", r.start, r.length, 0))

    machine = str(h["machine"]).removeprefix("EM_").lower()
    machine = {"386": "i386"}.get(machine, machine)
    kind = _KINDS.get(int(_type_number(h["type"])), str(h["type"]))
    if h["type"] == "ET_DYN" and _is_pie(blob, phdrs, bits, end):
        kind = PIE
    image = Image(
        path=blob.name,
        arch=machine,
        fmt=f"ELF{bits}",
        kind=kind,
        file_size=blob.size,
        vm_total=vm_total,
        sections=sections + headers,
        segments=segments,
    )
    if symbols:
        tls = [p for p in phdrs if p.type == PT_TLS]
        tls_base = tls[0].vaddr if tls and not is_rel else 0
        image.symbols = _symbols(blob, shdrs, region_of, bits, end, tls_base)
    return image


def _fmt(spec: str) -> str:
    return "<" + "".join(_STRUCT_CODES[x.split(":")[1]] for x in spec.split())


def _compression(blob: Blob, s: Shdr, bits: int, end: str) -> tuple[str, int] | None:
    """(algorithm, uncompressed size) of an SHF_COMPRESSED section, from its Chdr."""
    if not s.flags & SHF_COMPRESSED:
        return None
    fmt = end + ("IIQQ" if bits == 64 else "III")
    if s.size < struct.calcsize(fmt):
        return ("unknown", 0)
    f = blob.unpack(fmt, s.offset, "compression header")
    return (_COMPRESSION.get(f[0], f"type {f[0]}"), f[2] if bits == 64 else f[1])


def _is_pie(blob: Blob, phdrs: list[Phdr], bits: int, end: str) -> bool:
    """Whether the dynamic segment's DT_FLAGS_1 has DF_1_PIE (what readelf -h looks at)."""
    flags = [value for tag, value in _dynamic(blob, phdrs, bits, end) if tag == DT_FLAGS_1]
    return bool(flags and flags[0] & DF_1_PIE)


def _dynamic(blob: Blob, phdrs: list[Phdr], bits: int, end: str) -> list[tuple[int, int]]:
    """The dynamic segment's (tag, value) entries, up to DT_NULL."""
    dyn = next((p for p in phdrs if p.type == PT_DYNAMIC), None)
    if dyn is None:
        return []
    entry = struct.Struct(end + ("qQ" if bits == 64 else "iI"))
    out = []
    # a hostile segment may claim more than the file holds: read only what is there
    stop = min(dyn.offset + dyn.filesz, blob.size)
    for at in range(dyn.offset, stop - entry.size + 1, entry.size):
        tag, value = entry.unpack_from(blob.data, at)
        if tag == 0:  # DT_NULL
            break
        out.append((tag, value))
    return out


class Needs(NamedTuple):
    """What the dynamic loader reads to find a file's libraries."""

    needed: list[str]  # DT_NEEDED, in order
    rpath: list[str]  # DT_RPATH's directories (used only without a DT_RUNPATH)
    runpath: list[str]  # DT_RUNPATH's


def needs(blob: Blob) -> Needs:
    """The libraries an ELF file names (DT_NEEDED) and where it says to look for them;
    empty for a static file. The strings are in DT_STRTAB, found through the PT_LOAD
    that maps its address, as the loader finds it (a stripped file may have no
    section headers)."""
    h = _header(blob)
    bits, end = h["bits"], "<" if h["little"] else ">"
    phdrs: list[Phdr] = _entries(
        blob,
        h["e_phoff"],
        h["e_phnum"],
        h["e_phentsize"],
        _PHDR[bits],
        end,
        Phdr,
        "program header table",
    )
    entries = _dynamic(blob, phdrs, bits, end)
    strtab = next((v for t, v in entries if t == DT_STRTAB), None)
    size = next((v for t, v in entries if t == DT_STRSZ), 0)
    load = [p for p in phdrs if p.type == PT_LOAD and p.vaddr <= (strtab or 0) < p.vaddr + p.filesz]
    if strtab is None or not load:
        return Needs([], [], [])
    start = load[0].offset + strtab - load[0].vaddr
    table = blob.read(start, min(size, load[0].vaddr + load[0].filesz - strtab), "DT_STRTAB")

    def text(offset: int) -> str:
        stop = table.find(b"\0", offset)
        return table[offset : stop if stop >= 0 else len(table)].decode("utf-8", "replace")

    def strings(tag: int) -> list[str]:
        return [text(v) for t, v in entries if t == tag and v < len(table)]

    def dirs(tag: int) -> list[str]:
        return [d for s in strings(tag) for d in s.split(":") if d]

    return Needs(strings(DT_NEEDED), dirs(DT_RPATH), dirs(DT_RUNPATH))


def _type_number(t: Any) -> int:
    table = {"ET_NONE": 0, "ET_REL": 1, "ET_EXEC": 2, "ET_DYN": 3, "ET_CORE": 4}
    return table.get(str(t), -1) if isinstance(t, str) else int(t)


def _section_names(blob: Blob, shdrs: list[Shdr], shstrndx: int) -> list[str]:
    if len(shdrs) == 0:
        return []
    if not 0 < shstrndx < len(shdrs):
        raise blob.fail(f"section name table index {shstrndx} is not a section (of {len(shdrs)})")
    st = shdrs[shstrndx]
    strtab = blob.read(st.offset, st.size, "section name table")
    out = []
    for s in shdrs:
        off = s.name
        if off >= len(strtab):
            raise blob.fail(f"section name offset {off} is past the section name table")
        stop = strtab.find(b"\0", off)
        out.append(strtab[off : stop if stop >= 0 else None].decode("utf-8", "backslashreplace"))
    return out


def _symbols(
    blob: Blob, shdrs: list[Shdr], region_list: list[int], bits: int, end: str, tls_base: int
) -> SymbolTable | None:
    """`.symtab`, or `.dynsym` when there is none (it repeats `.symtab`'s exports)."""
    import numpy as np

    found = [
        (next(i for i, s in enumerate(shdrs) if s.type == wanted), source)
        for wanted, source in ((SHT_SYMTAB, ".symtab"), (SHT_DYNSYM, ".dynsym"))
        if any(s.type == wanted for s in shdrs)
    ]
    if not found:
        return None
    index, source = found[0]
    s = shdrs[index]
    dtype = _dtype(_SYM[bits], end)
    entsize = s.entsize or dtype.itemsize
    count = s.size // dtype.itemsize
    # no count limit: the table must lie inside the file, which bounds it
    syms = _table(blob, s.offset, count, entsize, dtype, source, None, copy=False)
    link = s.link
    if not 0 < link < len(shdrs):
        raise blob.fail(f"{source}: string table index {link} is not a section")
    st = shdrs[link]
    strtab = blob.strings(st.offset, st.size, f"{source} string table")

    region_of = np.array(region_list, dtype=np.int64)
    shndx = syms["shndx"].astype(np.int64)
    xindex = [x for x in shdrs if x.type == SHT_SYMTAB_SHNDX and x.link == index]
    if xindex and (shndx == SHN_XINDEX).any():
        ext = _table(
            blob, xindex[0].offset, count, 4, np.dtype(end + "u4"), "extended section indices", None
        )
        shndx = np.where(shndx == SHN_XINDEX, ext.astype(np.int64), shndx)
    info = syms["info"].astype(np.int64)
    typ, bind = info & 0xF, info >> 4
    # typ and bind are 4-bit fields: lookup tables instead of isin and one mask per value
    wanted = np.zeros(16, dtype=bool)
    wanted[list(_SYMBOL_TYPES)] = True
    usable = wanted[typ] & (shndx > 0) & (shndx < len(shdrs))
    usable &= (shndx < SHN_LORESERVE) | bool(xindex)
    region = np.where(usable, region_of[np.clip(shndx, 0, len(region_of) - 1)], -1)
    addr = syms["value"].astype(np.uint64)
    if tls_base:
        # executables give TLS symbols as offsets into the TLS template
        is_tls = typ == 6
        addr = np.where(is_tls, addr + np.uint64(tls_base), addr)
    rank_of = np.full(16, 3, dtype=np.int64)
    for b, r in _RANK.items():
        rank_of[b] = r
    rank = rank_of[bind]
    return SymbolTable(
        source=source,
        region=region.astype(np.int64),
        addr=addr,
        size=syms["size"].astype(np.uint64),
        rank=rank,
        name_off=syms["name"].astype(np.int64),
        strtab=strtab,
        sized=True,
        missing=".symtab" if source == ".dynsym" else "",
    )
