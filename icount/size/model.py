"""What the ELF and Mach-O readers produce, independent of the format.

A reader turns one file (or one slice of a fat file) into an `Image`: labelled byte
ranges of the file (`Region`s) for the sections view and for the segments view, plus
the raw symbol table as numpy arrays. The views (views.py) do the attribution, so the
rules that make the file-size column sum to the file size live in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from icount.size.dwarf import Attribution
    from icount.size.source import Buffer, Strings

PADDING = "[padding]"


@dataclass
class Region:
    """A labelled byte range of the file (absolute offsets) and the VM bytes it stands for.

    `length` is 0 for NOBITS / zerofill sections, which have no file bytes. A region with
    `sym_addr` set is a section symbols can be charged to: [sym_addr, sym_addr+sym_size)
    is the address range (ELF object files: section-relative) its symbols fall in.
    `compressed` is (algorithm, uncompressed size) for an ELF SHF_COMPRESSED section,
    whose `length` is what it takes in the file.
    """

    label: str
    start: int
    length: int
    vm: int
    executable: bool = False
    sym_addr: int | None = None
    sym_size: int = 0
    compressed: tuple[str, int] | None = None


@dataclass
class Container:
    """A range (a Mach-O segment) whose bytes not claimed by any region take its label."""

    label: str
    start: int
    length: int
    vm: int  # VM bytes of the container not already counted by its regions


@dataclass
class SymbolTable:
    """Symbols in bulk: one numpy array per field, parallel.

    `region` indexes Image.sections (-1: not in a section icount knows). `size` is 0
    where the format records no size (Mach-O): views size those by the next symbol.
    `rank` orders aliases at one address (0 = global, 1 = weak / private extern,
    2 = local): the best-ranked name is kept, the others count nothing.
    """

    source: str  # ".symtab", ".dynsym", "LC_SYMTAB"
    region: npt.NDArray[np.int64]
    addr: npt.NDArray[np.uint64]
    size: npt.NDArray[np.uint64]
    rank: npt.NDArray[np.int64]
    name_off: npt.NDArray[np.int64]
    strtab: bytes | Strings  # Strings: read in place in the mapped file
    sized: bool
    strip_underscore: bool = False  # Mach-O C names carry a leading '_'

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


@dataclass
class Image:
    """One file, or one architecture of a fat file, ready for the views."""

    path: str
    arch: str
    fmt: str  # "ELF64", "Mach-O 64-bit", ...
    kind: str  # "executable", "shared library", "object file", ...
    file_size: int  # of the whole file, fat header and other slices included
    vm_total: int  # the address space the image maps (PT_LOAD / segments; objects: sections)
    sections: list[Region] = field(default_factory=list)
    section_containers: list[Container] = field(default_factory=list)
    segments: list[Region] = field(default_factory=list)
    symbols: SymbolTable | None = None
    notes: list[str] = field(default_factory=list)
    fat: bool = False  # a slice of a universal file
    dwarf: Attribution | None = None  # read only for the compileunits and files views

    @property
    def name(self) -> str:
        return f"{self.path} [{self.arch}]" if self.fat else self.path

    def text_bytes(self) -> int:
        """VM size of the executable sections (what the serve tables show)."""
        return sum(r.vm for r in self.sections if r.executable)


@dataclass(frozen=True)
class Row:
    label: str
    file: int
    vm: int


@dataclass
class Breakdown:
    """One image seen through one view: rows whose file column sums to the file size."""

    path: str
    arch: str
    fmt: str
    kind: str
    file_size: int
    rows: list[Row]
    notes: list[str] = field(default_factory=list)
    gzip_bytes: int | None = None
    fat: bool = False

    @property
    def name(self) -> str:
        return f"{self.path} [{self.arch}]" if self.fat else self.path

    @property
    def file_total(self) -> int:
        return sum(r.file for r in self.rows)

    @property
    def vm_total(self) -> int:
        return sum(r.vm for r in self.rows)
