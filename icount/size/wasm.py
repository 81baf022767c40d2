"""WebAssembly modules and object files: sections, function bodies and data segments.

The binary format is a magic number and version (8 bytes) and a list of sections,
each an id byte, a LEB128 payload size and the payload; custom sections (id 0) begin
with their name. Rows carry what llvm-objdump -h calls each section's size (the
payload; for a custom section, the payload after its name), so that icount's figures
can be checked against it; the id, size and name bytes of every section are
`[section headers]`. Wasm maps no file bytes into an address space: the VM column is 0
and a note gives the initial linear memory instead.

Functions are the code section's entries (an entry's size LEB128 plus its body: the
bytes from one function to the next), named by the `name` section, or by the symbol
table of the `linking` section in object files, then by the export section, else
`function[N]` (N: the function index, imports first, as the name section counts).
Data segments are named the same way (`data[N]`). Every count and length is checked
against the bytes left before anything is allocated, and LEB128 numbers longer than
their type allows are refused, so a hostile file is one ParseError, in memory bounded
by its size.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icount.errors import ParseError
from icount.size.model import Image, Region, SymbolTable
from icount.size.source import Blob

MAGIC = b"\0asm"
VERSION = 1
PAGE = 65536
HEADERS = "[section headers]"

# llvm's names for the known sections (llvm-objdump -h, llvm-readobj --sections)
SECTION_NAMES = {
    1: "TYPE",
    2: "IMPORT",
    3: "FUNCTION",
    4: "TABLE",
    5: "MEMORY",
    6: "GLOBAL",
    7: "EXPORT",
    8: "START",
    9: "ELEM",
    10: "CODE",
    11: "DATA",
    12: "DATACOUNT",
    13: "TAG",
}
CODE, DATA, IMPORT, MEMORY, EXPORT = 10, 11, 2, 5, 7
_SEGMENT_OF = {CODE: "code", DATA: "data", 12: "data"}
SYMTAB_FUNCTION, SYMTAB_DATA = 0, 1
SYMBOL_UNDEFINED, SYMBOL_EXPLICIT_NAME = 0x10, 0x40


class Reader:
    """A cursor over [pos, end) of a file's bytes: every read is checked against `end`."""

    def __init__(self, blob: Blob, pos: int, end: int, what: str) -> None:
        self.blob, self.data, self.pos, self.end, self.what = blob, blob.data, pos, end, what

    def fail(self, message: str) -> ParseError:
        return self.blob.fail(f"{self.what}: {message} (offset {self.pos})")

    def left(self) -> int:
        return self.end - self.pos

    def byte(self) -> int:
        if self.pos >= self.end:
            raise self.fail("runs past its end: truncated or corrupt")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def uleb(self, bits: int = 32) -> int:
        """An unsigned LEB128 of at most `bits` bits (ceil(bits / 7) bytes)."""
        result = shift = 0
        data, pos, end = self.data, self.pos, self.end
        for _ in range(-(-bits // 7)):
            if pos >= end:
                self.pos = pos
                raise self.fail("LEB128 number runs past its end: truncated or corrupt")
            b = data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                if result >> bits:
                    self.pos = pos
                    raise self.fail(f"LEB128 number does not fit in {bits} bits")
                self.pos = pos
                return result
        self.pos = pos
        raise self.fail(f"LEB128 number longer than {-(-bits // 7)} bytes")

    def sleb(self, bits: int) -> int:
        """A signed LEB128 (only skipped: its value is not needed)."""
        for _ in range(-(-bits // 7)):
            if self.byte() < 0x80:
                return 0
        raise self.fail(f"LEB128 number longer than {-(-bits // 7)} bytes")

    def skip(self, n: int) -> None:
        if n > self.left():
            raise self.fail(f"{n} bytes run past its end: truncated or corrupt")
        self.pos += n

    def name(self) -> str:
        n = self.uleb()
        start = self.pos
        self.skip(n)
        return bytes(self.data[start : self.pos]).decode("utf-8", "backslashreplace")

    def count(self, least: int, what: str) -> int:
        """A vector length, refused when its entries (`least` bytes each, at the least)
        could not fit in what is left: no loop or list sized by a hostile number."""
        n = self.uleb()
        if n * least > self.left():
            raise self.fail(f"{n} {what} cannot fit in the {self.left()} bytes left")
        return n


@dataclass
class _Section:
    id: int
    label: str
    start: int  # the id byte
    payload: int  # first byte of the payload
    content: int  # first byte after a custom section's name (= payload otherwise)
    end: int


@dataclass
class _Symbols:
    """Functions or data segments: (file offset, size, index) each, and their names."""

    entries: list[tuple[int, int, int]] = field(default_factory=list)
    names: dict[int, str] = field(default_factory=dict)


def is_wasm(head: bytes) -> bool:
    return head[:4] == MAGIC


def read_wasm(blob: Blob, symbols: bool = True) -> Image:
    if blob.size < 8:
        raise blob.fail(f"truncated WebAssembly header: {blob.size} bytes, need 8")
    version = int.from_bytes(blob.read(4, 4, "version"), "little")
    if version != VERSION:
        kind = " (a component, not a core module?)" if version >> 16 else ""
        raise blob.fail(f"WebAssembly version {version:#x}{kind}; icount reads version 1")
    sections = _sections(blob)
    regions = [Region("[Wasm header]", 0, 8, 0)]
    segments = [Region("[Wasm header]", 0, 8, 0)]
    by_id: dict[int, Region] = {}
    for s in sections:
        regions.append(Region(HEADERS, s.start, s.content - s.start, 0))
        region = Region(
            s.label,
            s.content,
            s.end - s.content,
            0,
            executable=s.id == CODE,
            sym_addr=s.content if s.id in (CODE, DATA) else None,
            sym_size=s.end - s.content,
        )
        regions.append(region)
        if s.id in (CODE, DATA):
            by_id[s.id] = region
        group = _SEGMENT_OF.get(s.id) or ("custom sections" if s.id == 0 else "declarations")
        segments.append(Region(group, s.start, s.end - s.start, 0))
    custom = {s.label: s for s in sections if s.id == 0}
    image = Image(
        path=blob.name,
        arch="wasm32",
        fmt="WebAssembly",
        kind="object file" if "linking" in custom else "module",
        file_size=blob.size,
        vm_total=0,
        sections=regions,
        segments=segments,
    )
    known = {s.id: s for s in sections if s.id}
    first_function, imported = _imports(blob, known.get(IMPORT))
    memory = _memory(blob, known.get(MEMORY), image)
    if memory is not None:
        where = f"linear memory starts at {memory} bytes"
    elif imported is not None:
        where = f"linear memory is imported, at least {imported} bytes"
    else:
        where = "no linear memory"
    image.notes.append(f"WebAssembly maps no file bytes into memory (VM 0); {where}")
    if symbols:
        image.symbols = _symbol_table(
            blob, known, custom, regions, by_id, first_function, image.notes
        )
    return image


def _sections(blob: Blob) -> list[_Section]:
    r = Reader(blob, 8, blob.size, "section list")
    out: list[_Section] = []
    seen: set[int] = set()
    while r.left():
        start = r.pos
        sid = r.byte()
        size = r.uleb()
        payload = r.pos
        if size > r.left():
            what = SECTION_NAMES.get(sid, f"section id {sid}")
            raise blob.fail(
                f"{what} section at offset {start} ({size} bytes) runs past the end of the "
                f"file ({blob.size} bytes): truncated or corrupt"
            )
        end = payload + size
        if sid == 0:
            inner = Reader(blob, payload, end, f"custom section at offset {start}")
            label = inner.name() or "[unnamed custom section]"
            content = inner.pos
        elif sid in SECTION_NAMES:
            if sid in seen:
                raise blob.fail(f"{SECTION_NAMES[sid]} section appears twice (offset {start})")
            seen.add(sid)
            label, content = SECTION_NAMES[sid], payload
        else:
            raise blob.fail(f"unknown section id {sid} at offset {start}")
        out.append(_Section(sid, label, start, payload, content, end))
        r.pos = end
    return out


def _memory(blob: Blob, s: _Section | None, image: Image) -> int | None:
    """Initial linear memory of the first memory (bytes); wasm64 when it is 64-bit."""
    if s is None:
        return None
    r = Reader(blob, s.payload, s.end, "MEMORY section")
    if r.count(2, "memories") == 0:
        return None
    wide, pages = _limits(r)
    if wide:
        image.arch = "wasm64"
    return pages * PAGE


def _imports(blob: Blob, s: _Section | None) -> tuple[int, int | None]:
    """How many functions are imported (they come first in the function index space),
    and the initial size of an imported memory (None: no memory is imported)."""
    if s is None:
        return 0, None
    r = Reader(blob, s.payload, s.end, "IMPORT section")
    funcs, memory = 0, None
    for _ in range(r.count(3, "imports")):
        r.name()
        r.name()
        kind = r.byte()
        if kind == 0:  # function: type index
            funcs += 1
            r.uleb()
        elif kind == 1:  # table: reference type, limits
            r.byte()
            _limits(r)
        elif kind == 2:  # memory: limits
            pages = _limits(r)[1]
            memory = pages * PAGE if memory is None else memory
        elif kind == 3:  # global: value type, mutability
            r.byte()
            r.byte()
        elif kind == 4:  # tag: attribute, type index
            r.byte()
            r.uleb()
        else:
            raise r.fail(f"unknown import kind {kind}")
    return funcs, memory


def _limits(r: Reader) -> tuple[bool, int]:
    """(64-bit, minimum) of a table's or memory's limits."""
    flags = r.byte()
    bits = 64 if flags & 0x04 else 32
    least = r.uleb(bits)
    if flags & 0x01:
        r.uleb(bits)
    return bits == 64, least


def _symbol_table(
    blob: Blob,
    known: dict[int, _Section],
    custom: dict[str, _Section],
    regions: list[Region],
    by_id: dict[int, Region],
    first: int,
    notes: list[str],
) -> SymbolTable | None:
    funcs, data = _Symbols(), _Symbols()
    if CODE in known:
        funcs.entries = _bodies(blob, known[CODE], first)
    if DATA in known:
        data.entries = _data_segments(blob, known[DATA], notes)
    source = ""
    if "name" in custom:
        try:
            _name_section(blob, custom["name"], funcs, data)
            source = "the name section"
        except ParseError as e:  # names are optional: engines ignore a bad name section
            notes.append(f"name section ignored: {e.message.split(': ', 1)[-1]}")
            funcs.names.clear()
            data.names.clear()
    if not source and "linking" in custom:
        _linking(blob, custom["linking"], funcs, data)
        source = "the linking section's symbol table"
    if EXPORT in known and _exports(blob, known[EXPORT], funcs) and not source:
        source = "the export section"
    if not funcs.entries and not data.entries:
        return None
    import numpy as np

    rows: list[tuple[int, int, int, str]] = []
    for kind, syms, fallback in ((CODE, funcs, "function"), (DATA, data, "data")):
        region = regions.index(by_id[kind]) if kind in by_id else -1
        for offset, size, index in syms.entries:
            rows.append((region, offset, size, syms.names.get(index) or f"{fallback}[{index}]"))
    names = [r[3].encode("utf-8", "surrogateescape") for r in rows]
    offsets = np.cumsum([0] + [len(n) + 1 for n in names[:-1]], dtype=np.int64)
    return SymbolTable(
        source=source or "function and data indices (no exports)",
        region=np.array([r[0] for r in rows], dtype=np.int64),
        addr=np.array([r[1] for r in rows], dtype=np.uint64),
        size=np.array([r[2] for r in rows], dtype=np.uint64),
        rank=np.zeros(len(rows), dtype=np.int64),
        name_off=offsets,
        strtab=b"\0".join(names) + b"\0",
        sized=True,
        missing="" if "name" in custom or "linking" in custom else "name section",
    )


def _bodies(blob: Blob, s: _Section, first: int) -> list[tuple[int, int, int]]:
    r = Reader(blob, s.payload, s.end, "CODE section")
    out = []
    for k in range(r.count(1, "function bodies")):
        start = r.pos
        size = r.uleb()
        r.skip(size)
        out.append((start, r.pos - start, first + k))
    return out


# Opcodes of constant expressions (data segment offsets) and how to skip their immediate.
_CONST_OPS: dict[int, tuple[str, int]] = {
    0x41: ("sleb", 32),  # i32.const
    0x42: ("sleb", 64),  # i64.const
    0x23: ("uleb", 32),  # global.get
    0xD2: ("uleb", 32),  # ref.func
    0xD0: ("byte", 0),  # ref.null
    0x6A: ("none", 0),  # i32.add (extended constant expressions)
    0x6B: ("none", 0),  # i32.sub
    0x6C: ("none", 0),  # i32.mul
    0x7C: ("none", 0),  # i64.add
    0x7D: ("none", 0),  # i64.sub
    0x7E: ("none", 0),  # i64.mul
}


def _skip_const_expr(r: Reader) -> None:
    while True:
        op = r.byte()
        if op == 0x0B:  # end
            return
        how = _CONST_OPS.get(op)
        if how is None:
            raise r.fail(f"opcode {op:#04x} in a constant expression")
        kind, bits = how
        if kind == "sleb":
            r.sleb(bits)
        elif kind == "uleb":
            r.uleb(bits)
        elif kind == "byte":
            r.byte()


def _data_segments(blob: Blob, s: _Section, notes: list[str]) -> list[tuple[int, int, int]]:
    r = Reader(blob, s.payload, s.end, "DATA section")
    out = []
    for k in range(r.count(1, "data segments")):
        start = r.pos
        flags = r.uleb()
        if flags == 2:
            r.uleb()  # memory index
        if flags in (0, 2):
            _skip_const_expr(r)
        elif flags != 1:
            raise r.fail(f"data segment {k}: unknown flags {flags}")
        size = r.uleb()
        r.skip(size)
        out.append((start, r.pos - start, k))
    return out


def _name_section(blob: Blob, s: _Section, funcs: _Symbols, data: _Symbols) -> None:
    r = Reader(blob, s.content, s.end, "name section")
    while r.left():
        sub = r.byte()
        size = r.uleb()
        if size > r.left():
            raise r.fail(f"subsection {sub} of {size} bytes runs past its end")
        end = r.pos + size
        target = {1: funcs, 9: data}.get(sub)
        if target is not None:
            inner = Reader(blob, r.pos, end, f"name section subsection {sub}")
            for _ in range(inner.count(2, "names")):
                index = inner.uleb()
                target.names[index] = inner.name()
        r.pos = end


def _exports(blob: Blob, s: _Section, funcs: _Symbols) -> bool:
    """Names of exported functions the name section does not name (as llvm-objdump
    names them); whether any was added."""
    r = Reader(blob, s.payload, s.end, "EXPORT section")
    added = False
    for _ in range(r.count(3, "exports")):
        name = r.name()
        kind = r.byte()
        index = r.uleb()
        if kind == 0 and index not in funcs.names:
            funcs.names[index] = name
            added = True
    return added


def _linking(blob: Blob, s: _Section, funcs: _Symbols, data: _Symbols) -> None:
    """Names from an object file's symbol table (WASM_SYMBOL_TABLE, subsection 8)
    and its segment names (WASM_SEGMENT_INFO, subsection 5)."""
    r = Reader(blob, s.content, s.end, "linking section")
    r.uleb()  # metadata version
    while r.left():
        sub = r.byte()
        size = r.uleb()
        if size > r.left():
            raise r.fail(f"subsection {sub} of {size} bytes runs past its end")
        inner = Reader(blob, r.pos, r.pos + size, f"linking subsection {sub}")
        r.pos += size
        if sub == 8:
            _symtab(inner, funcs)
        elif sub == 5:
            for k in range(inner.count(3, "segments")):
                data.names[k] = inner.name()
                inner.uleb()  # alignment
                inner.uleb()  # flags


def _symtab(r: Reader, funcs: _Symbols) -> None:
    for _ in range(r.count(2, "symbols")):
        kind = r.byte()
        flags = r.uleb()
        defined = not flags & SYMBOL_UNDEFINED
        if kind == SYMTAB_DATA:
            r.name()
            if defined:
                r.uleb()  # segment
                r.uleb()  # offset in it
                r.uleb()  # size
        elif kind == 3:  # section
            r.uleb()
        elif kind in (0, 2, 4, 5):  # function, global, tag, table: an index, maybe a name
            index = r.uleb()
            if defined or flags & SYMBOL_EXPLICIT_NAME:
                name = r.name()
                if kind == SYMTAB_FUNCTION and defined:
                    funcs.names.setdefault(index, name)
        else:
            raise r.fail(f"unknown symbol kind {kind}")
