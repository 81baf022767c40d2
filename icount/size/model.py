"""What the ELF and Mach-O readers produce, independent of the format.

A reader turns one file (or one slice of a fat file) into an `Image`: labelled byte
ranges of the file (`Region`s) for the sections view and for the segments view, plus
the raw symbol table as numpy arrays. The views (views.py) do the attribution, so the
rules that make the file-size column sum to the file size live in one place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from icount.size.dwarf import Attribution
    from icount.size.source import Buffer, Strings

PADDING = "[padding]"
STRIPPED = "stripped: "
NO_SYMBOLS = "no symbols: "


def symbols_said(table: SymbolTable | None, count: int) -> str:
    """What a view of symbols says it read: `table` (None: the file has none), `count`
    the named symbols that got bytes."""
    if table is None or count == 0:
        why = f"{table.source} names none in a section" if table else "no symbol table"
        return f"{NO_SYMBOLS}only sections ({why})"
    named = f"{count} symbol{'s' if count != 1 else ''} from {table.source}"
    return f"{STRIPPED}no {table.missing}; {named}" if table.missing else named


# Plain classes, not dataclasses: building a dataclass costs ~0.7 ms at import, and
# these six are imported by every `icount size` run (~0.14 s in all).


class Region:
    """A labelled byte range of the file (absolute offsets) and the VM bytes it stands for.

    `length` is 0 for NOBITS / zerofill sections, which have no file bytes. A region with
    `sym_addr` set is a section symbols can be charged to: [sym_addr, sym_addr+sym_size)
    is the address range (ELF object files: section-relative) its symbols fall in.
    `compressed` is (algorithm, uncompressed size) for an ELF SHF_COMPRESSED section,
    whose `length` is what it takes in the file.
    """

    __slots__ = (
        "compressed",
        "executable",
        "label",
        "length",
        "start",
        "sym_addr",
        "sym_size",
        "vm",
    )

    def __init__(
        self,
        label: str,
        start: int,
        length: int,
        vm: int,
        executable: bool = False,
        sym_addr: int | None = None,
        sym_size: int = 0,
        compressed: tuple[str, int] | None = None,
    ) -> None:
        self.label, self.start, self.length, self.vm = label, start, length, vm
        self.executable, self.sym_addr, self.sym_size = executable, sym_addr, sym_size
        self.compressed = compressed

    def __repr__(self) -> str:
        return f"Region({self.label!r}, {self.start}, {self.length}, {self.vm})"


class Container:
    """A range (a Mach-O segment) whose bytes not claimed by any region take its label;
    `vm`: VM bytes of the container not already counted by its regions."""

    __slots__ = ("label", "length", "start", "vm")

    def __init__(self, label: str, start: int, length: int, vm: int) -> None:
        self.label, self.start, self.length, self.vm = label, start, length, vm


class SymbolTable:
    """Symbols in bulk: one numpy array per field, parallel.

    `source` is ".symtab", ".dynsym", "LC_SYMTAB", ... `region` indexes Image.sections
    (-1: not in a section icount knows). `size` is 0 where the format records no size
    (Mach-O, `sized` False): views size those by the next symbol. `rank` orders aliases
    at one address (0 = global, 1 = weak / private extern, 2 = local): the best-ranked
    name is kept, the others count nothing. `strtab` is bytes, or Strings read in place
    in the mapped file; `strip_underscore`: Mach-O C names carry a leading '_'.
    `missing`: the fuller table a stripped file lacks (".symtab" where this is the
    `.dynsym`), "" when this is the file's full table.
    """

    __slots__ = (
        "addr",
        "missing",
        "name_off",
        "rank",
        "region",
        "size",
        "sized",
        "source",
        "strip_underscore",
        "strtab",
    )

    def __init__(
        self,
        source: str,
        region: npt.NDArray[np.int64],
        addr: npt.NDArray[np.uint64],
        size: npt.NDArray[np.uint64],
        rank: npt.NDArray[np.int64],
        name_off: npt.NDArray[np.int64],
        strtab: bytes | Strings,
        sized: bool,
        strip_underscore: bool = False,
        missing: str = "",
    ) -> None:
        self.source, self.region, self.addr, self.size = source, region, addr, size
        self.rank, self.name_off, self.strtab, self.sized = rank, name_off, strtab, sized
        self.strip_underscore, self.missing = strip_underscore, missing

    def name(self, i: int) -> str:
        off = int(self.name_off[i])
        tab = self.strtab
        data: Buffer
        # one function, no helper calls: icount inline names every symbol of a binary
        if isinstance(tab, bytes):
            data, start, end = tab, off, len(tab)
        else:
            data, start, end = tab.data, tab.start + off, tab.start + tab.size
        if off < 0 or start >= end:
            return f"<bad name offset {off}>"
        stop = data.find(b"\0", start, end)
        text = data[start : stop if stop >= 0 else end].decode("utf-8", "backslashreplace")
        if self.strip_underscore and text.startswith("_"):
            text = text[1:]
        return text


class _Described:
    """What names one image: its file, architecture, format and kind, in a fat file or
    not; and the notes shown under its table."""

    __slots__ = ("arch", "fat", "file_size", "fmt", "kind", "notes", "path")

    def __init__(
        self,
        path: str,
        arch: str,
        fmt: str,
        kind: str,
        file_size: int,
        notes: list[str] | None,
        fat: bool,
    ) -> None:
        self.path, self.arch, self.fmt, self.kind = path, arch, fmt, kind
        self.file_size, self.fat = file_size, fat
        self.notes = notes if notes is not None else []

    @property
    def name(self) -> str:
        return f"{self.path} [{self.arch}]" if self.fat else self.path


class Image(_Described):
    """One file, or one architecture of a fat file, ready for the views.

    `fmt`: "ELF64", "Mach-O 64-bit", ...; `kind`: "executable", "shared object", ...;
    `file_size` of the whole file (fat header and other slices included); `vm_total`:
    the address space the image maps (PT_LOAD / segments; objects: sections); `fat`: a
    slice of a universal file; `dwarf`: read only for the compileunits and files views.
    """

    __slots__ = ("dwarf", "section_containers", "sections", "segments", "symbols", "vm_total")

    def __init__(
        self,
        path: str,
        arch: str,
        fmt: str,
        kind: str,
        file_size: int,
        vm_total: int,
        sections: list[Region] | None = None,
        section_containers: list[Container] | None = None,
        segments: list[Region] | None = None,
        symbols: SymbolTable | None = None,
        notes: list[str] | None = None,
        fat: bool = False,
        dwarf: Attribution | None = None,
    ) -> None:
        super().__init__(path, arch, fmt, kind, file_size, notes, fat)
        self.vm_total = vm_total
        self.sections = sections if sections is not None else []
        self.section_containers = section_containers if section_containers is not None else []
        self.segments = segments if segments is not None else []
        self.symbols, self.dwarf = symbols, dwarf

    def text_bytes(self) -> int:
        """VM size of the executable sections (what the serve tables show)."""
        return sum(r.vm for r in self.sections if r.executable)


class Row(NamedTuple):
    label: str
    file: int
    vm: int


class Breakdown(_Described):
    """One image seen through one view: rows whose file column sums to the file size.

    `symbols`: for a view of symbols, what they came from (`symbols_said`); "" for the
    other views."""

    __slots__ = ("gzip_bytes", "rows", "symbols")

    def __init__(
        self,
        path: str,
        arch: str,
        fmt: str,
        kind: str,
        file_size: int,
        rows: list[Row],
        notes: list[str] | None = None,
        gzip_bytes: int | None = None,
        fat: bool = False,
        symbols: str = "",
    ) -> None:
        super().__init__(path, arch, fmt, kind, file_size, notes, fat)
        self.rows, self.gzip_bytes, self.symbols = rows, gzip_bytes, symbols

    @property
    def stripped(self) -> bool:
        """A view of symbols of a file without its full symbol table."""
        return self.symbols.startswith((STRIPPED, NO_SYMBOLS))

    @property
    def file_total(self) -> int:
        return sum(r.file for r in self.rows)

    @property
    def vm_total(self) -> int:
        return sum(r.vm for r in self.rows)
