"""Go's function table (`.gopclntab`): every function's entry address and name, which
a Go binary keeps when it is stripped (`-ldflags=-s -w`, Debian's packages), because
the runtime needs it for stack traces and the collector.

The layouts are those of Go's `debug/gosym` (runtime/symtab.go's `pcHeader`): a magic
per format (Go 1.2, 1.16, 1.18, 1.20), a header of pad bytes, the instruction size
quantum, the pointer size, the function count and offsets of the tables; then the
functab, (entry, _func offset) pairs sorted by entry with one more entry closing the
last function, and each `_func`, whose second field is its name's offset. Pairs are
read in bulk with numpy over the mapped file; a name only when it is asked for. Every
count and offset is checked against the section's size first, so a corrupt table is a
one-line ParseError naming the file, never an IndexError or a huge allocation.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from icount.errors import ParseError
from icount.size.source import Blob, open_blob

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

SECTION = ".gopclntab"
# magic -> the Go release that introduced the format
FORMATS = {0xFFFFFFFB: "1.2", 0xFFFFFFFA: "1.16", 0xFFFFFFF0: "1.18", 0xFFFFFFF1: "1.20"}
_MAX_NAME = 1 << 16  # Go's longest names (generic instantiations) run to a few KB


class GoFunctions:
    """The functions of one Go binary: `entries[i]` is function i's first address,
    `entries[-1]` the end of the last; `name(i)` reads its name (once)."""

    def __init__(
        self,
        blob: Blob,
        fmt: str,
        entries: npt.NDArray[np.uint64],
        funcoffs: npt.NDArray[np.uint64],
        where: tuple[int, int, int, int, int, str],
    ) -> None:
        self.blob, self.fmt = blob, fmt
        self.entries, self._funcoffs = entries, funcoffs
        # the section's start and size, where _func offsets and name offsets count from,
        # the width of a _func's entry field (its nameOff follows), the byte order
        self._start, self._size, self._funcdata, self._names, self._entry, self._end = where
        self._cache: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self._funcoffs)

    def _fail(self, message: str) -> ParseError:
        return self.blob.fail(f"{SECTION}: {message}")

    def name(self, i: int) -> str:
        """Function i's name."""
        hit = self._cache.get(i)
        if hit is not None:
            return hit
        at = self._funcdata + int(self._funcoffs[i])
        if at + self._entry + 4 > self._size:
            raise self._fail(
                f"function {i}'s record at {at} lies past the table ({self._size} bytes)"
            )
        (off,) = struct.unpack_from(self._end + "i", self.blob.data, self._start + at + self._entry)
        begin = self._names + off
        if off < 0 or begin >= self._size:
            raise self._fail(
                f"function {i}'s name at {begin} lies outside the table ({self._size} bytes)"
            )
        stop = min(self._size, begin + _MAX_NAME)
        end = self.blob.data.find(b"\0", self._start + begin, self._start + stop)
        if end < 0:
            raise self._fail(f"function {i}'s name at {begin} has no end within the table")
        text = bytes(self.blob.data[self._start + begin : end]).decode("utf-8", "backslashreplace")
        self._cache[i] = text
        return text

    def index(self, addresses: Sequence[int]) -> list[int]:
        """For each address, the function that holds it, or -1 (outside every function)."""
        import numpy as np

        pcs = np.asarray(addresses, dtype=np.uint64)
        i = np.searchsorted(self.entries, pcs, side="right").astype(np.int64) - 1
        inside = (i >= 0) & (i < len(self)) & (pcs < self.entries[-1])
        return np.where(inside, i, -1).tolist()  # type: ignore[no-any-return]


def read_table(blob: Blob, start: int, size: int, text_addr: int) -> GoFunctions | None:
    """The table in [start, start+size) of `blob`; None when it starts with no magic of
    a known format. `text_addr` (the `.text` section's address) places the entries of
    Go 1.18+ where the header's text start is 0 (a relocation fills it at load time)."""
    import numpy as np

    blob.check(start, size, f"section {SECTION}")

    def fail(message: str) -> ParseError:
        return blob.fail(f"{SECTION}: {message}")

    if size < 8:
        return None
    head = bytes(blob.data[start : start + 8])
    end = "<"
    fmt = FORMATS.get(struct.unpack_from("<I", head)[0])
    if fmt is None:
        end = ">"
        fmt = FORMATS.get(struct.unpack_from(">I", head)[0])
    if fmt is None:
        return None
    quantum, ptr = head[6], head[7]
    if head[4:6] != b"\0\0" or quantum not in (1, 2, 4) or ptr not in (4, 8):
        raise fail(
            f"Go {fmt} header with pad {head[4:6].hex()}, quantum {quantum}, pointer size {ptr}"
        )
    word = end + ("Q" if ptr == 8 else "I")
    fields = {"1.2": 1, "1.16": 7}.get(fmt, 8)  # nfunc and the offsets after it
    if 8 + fields * ptr > size:
        raise fail(f"Go {fmt} header runs past the table ({size} bytes)")
    header = struct.unpack_from(end + word[1] * fields, blob.data, start + 8)
    nfunc = header[0]
    text = 0
    if fmt == "1.2":
        functab, names = 8 + ptr, 0
    elif fmt == "1.16":
        functab, names = header[6], header[2]
    else:
        text = header[2] or text_addr
        functab, names = header[7], header[3]
    cell = ptr if fmt in ("1.2", "1.16") else 4  # Go 1.18+ keeps 32-bit offsets from text
    if functab > size or nfunc > (size - functab) // (2 * cell):
        raise fail(f"{nfunc} functions from offset {functab} run past the table ({size} bytes)")
    if names > size:
        raise fail(f"function names at offset {names} lie past the table ({size} bytes)")
    pairs = np.frombuffer(
        blob.data, dtype=f"{end}u{cell}", count=2 * nfunc + 1, offset=start + functab
    ).astype(np.uint64)
    entries = pairs[0::2] + np.uint64(text)
    if bool((entries[1:] < entries[:-1]).any()):
        raise fail("function entries are not in address order")
    funcdata = 0 if fmt == "1.2" else functab
    return GoFunctions(blob, fmt, entries, pairs[1::2], (start, size, funcdata, names, cell, end))


def read_elf_table(blob: Blob) -> GoFunctions | None:
    """The function table of an ELF file, None when it has none of a known format: the
    `.gopclntab` section (`.data.rel.ro.gopclntab` in a position-independent executable
    Go linked itself), else found by its header inside `.data.rel.ro` (where an external
    linker merges it) or, in a file without section headers, anywhere in the file."""
    from icount.size.elf import read_elf

    if bytes(blob.data[:4]) != b"\x7fELF":
        return None
    image = read_elf(blob, symbols=False)
    found = {r.label: r for r in image.sections}
    text = found.get(".text")
    text_addr = (text.sym_addr or 0) if text else 0
    table = found.get(SECTION) or found.get(".data.rel.ro" + SECTION)
    if table is not None and table.length:
        return read_table(blob, table.start, table.length, text_addr)
    within = found.get(".data.rel.ro")
    if within is not None and within.length:
        return _search(blob, within.start, within.length, text_addr)
    if not any(r.length for r in image.sections if r.label.startswith(".")):
        return _search(blob, 0, blob.size, text_addr)
    return None


_MAX_CANDIDATES = 64  # places that start like a header but are not one, tried at most


def _search(blob: Blob, start: int, size: int, text_addr: int) -> GoFunctions | None:
    """The first table of a known format in [start, start+size): a place that starts
    with a magic and reads as a whole table (the functions' entries in order)."""
    heads = [struct.pack(end + "I", magic) + b"\0\0" for magic in FORMATS for end in "<>"]
    stop = start + size
    tried = 0
    for head in heads:
        at = blob.data.find(head, start, stop)
        while at >= 0 and tried < _MAX_CANDIDATES:
            tried += 1
            try:
                got = read_table(blob, at, stop - at, text_addr)
            except ParseError:
                got = None
            if got is not None and len(got):
                return got
            at = blob.data.find(head, at + 1, stop)
    return None


@lru_cache(maxsize=16)
def _cached(path: str, stamp: tuple[int, int]) -> GoFunctions | None:
    return read_elf_table(open_blob(path))


def go_functions(path: str) -> GoFunctions | None:
    """The function table of the binary at `path` (read once per version of the file);
    None when it is not an ELF file with one."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _cached(path, (st.st_mtime_ns, st.st_size))
