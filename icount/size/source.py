"""Bounded access to the bytes of one input file.

Every reader goes through `Blob`: each read is checked against the file's length
first, so a hostile offset or count becomes a one-line ParseError naming the file,
never an IndexError, a short read or a huge allocation. Files are memory-mapped
(read-only) so that a 200 MB library costs no copy; tests pass bytes instead.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
import struct
from pathlib import Path
from typing import Any

from icount.errors import ParseError

Buffer = bytes | mmap.mmap
NOT_BINARY = "not an ELF or Mach-O file, nor a WebAssembly module or an ar archive"


class Blob:
    """The bytes of one file plus its display name, with checked reads."""

    def __init__(self, name: str, data: Buffer) -> None:
        self.name = name
        self.data = data
        self.size = len(data)
        self._mm = data if isinstance(data, mmap.mmap) else None

    def fail(self, message: str) -> ParseError:
        return ParseError(message, source=self.name)

    def check(self, offset: int, length: int, what: str) -> None:
        """Raise unless [offset, offset+length) lies inside the file."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise self.fail(
                f"{what} at offset {offset} ({length} bytes) runs past the end of the "
                f"file ({self.size} bytes): truncated or corrupt"
            )

    def unpack(self, fmt: str, offset: int, what: str) -> tuple[Any, ...]:
        self.check(offset, struct.calcsize(fmt), what)
        return struct.unpack_from(fmt, self.data, offset)

    def read(self, offset: int, length: int, what: str) -> bytes:
        self.check(offset, length, what)
        return bytes(self.data[offset : offset + length])

    def strings(self, offset: int, length: int, what: str) -> Strings:
        """A string table read in place, not copied: `icount size` shows a few hundred
        names of a 17 MB table. It keeps the map open; close() leaves it to the GC."""
        self.check(offset, length, what)
        return Strings(self.data, offset, length)

    def close(self) -> None:
        if self._mm is not None:
            # BufferError: a view still points into the map; the GC closes it later
            with contextlib.suppress(BufferError):
                self._mm.close()


class Strings:
    """NUL-terminated strings in a window [start, start+size) of a file's bytes."""

    def __init__(self, data: Buffer, start: int, size: int) -> None:
        self.data, self.start, self.size = data, start, size
        # An exported view makes mmap.close() refuse (Blob.close() then leaves the map
        # to the GC), so the bytes stay readable as long as this table lives.
        self._pin = memoryview(data)

    def __len__(self) -> int:
        return self.size


def open_blob(path: str | Path) -> Blob:
    """Map `path` read-only; missing, directory, unreadable and empty files are one-liners."""
    name = str(path)
    try:
        st = os.stat(name)
    except FileNotFoundError:
        raise ParseError("no such file", source=name) from None
    except OSError as e:
        raise ParseError(f"cannot read: {e.strerror}", source=name) from None
    if os.path.isdir(name):
        raise ParseError(f"is a directory, {NOT_BINARY}", source=name)
    if not stat.S_ISREG(st.st_mode):
        # a FIFO or a device (/dev/zero) has no size to bound what we would read
        raise ParseError(f"not a regular file, so {NOT_BINARY}", source=name)
    if st.st_size == 0:
        raise ParseError(f"empty file, {NOT_BINARY}", source=name)
    try:
        with open(name, "rb") as f:
            data: Buffer = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise ParseError(f"cannot read: {e.strerror or e}", source=name) from None
    except ValueError as e:  # mmap of a file that shrank to 0 meanwhile
        raise ParseError(f"cannot map: {e}", source=name) from None
    if len(data) == 0:
        raise ParseError(f"empty file, {NOT_BINARY}", source=name)
    return Blob(name, data)


def cstr(raw: bytes) -> str:
    """A fixed-size name field: up to the first NUL (16-byte Mach-O names may lack one)."""
    end = raw.find(b"\0")
    if end >= 0:
        raw = raw[:end]
    return raw.decode("utf-8", "backslashreplace")
