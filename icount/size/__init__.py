"""Binary-size breakdowns of ELF, Mach-O and WebAssembly files and `ar` archives of
them (`icount size`).

`load(path)` gives one Image per file (one per architecture for fat Mach-O files);
`views` turns an Image into rows, `render` prints them. `summarize(path)` is the small
summary the serve tables show. numpy and pyelftools are imported on first use.
"""

from __future__ import annotations

import platform
from pathlib import Path
from typing import TYPE_CHECKING

from icount.errors import ParseError
from icount.size.source import NOT_BINARY

if TYPE_CHECKING:
    from icount.size.model import Image
    from icount.size.source import Blob


def load(path: str | Path, symbols: bool = True, dwarf: str | None = None) -> list[Image]:
    """Every image in the file: one, or one per architecture of a fat file.

    `symbols=False` skips the symbol tables (and numpy): the sections and segments
    views do not need them. `dwarf` ("compileunits" or "files") also reads what the
    DWARF of an ELF file attributes to each compile unit or source file."""
    from icount.size.source import open_blob

    blob = open_blob(path)
    try:
        images = load_blob(blob, symbols)
        if dwarf is not None:
            _read_dwarf(blob, images, dwarf == "files")
        return images
    finally:
        blob.close()


def _read_dwarf(blob: Blob, images: list[Image], files: bool) -> None:
    from icount.size import dwarf

    for image in images:
        if not image.fmt.startswith("ELF"):
            image.notes.append(f"no DWARF read: icount reads DWARF in ELF files, not {image.fmt}")
        elif image.kind in ("object file", "archive"):
            image.notes.append(
                "no DWARF read: an object file's DWARF addresses are relocated at link time"
            )
        else:
            image.dwarf = dwarf.read(blob, files)
            if image.dwarf is None:
                image.notes.append("no DWARF (.debug_info): build with -g")


def load_bytes(
    name: str, data: bytes, symbols: bool = True, dwarf: str | None = None
) -> list[Image]:
    """Same as load() for bytes in memory (tests, fuzzing)."""
    from icount.size.source import Blob

    if not data:
        raise ParseError(f"empty file, {NOT_BINARY}", source=name)
    blob = Blob(name, data)
    images = load_blob(blob, symbols)
    if dwarf is not None:
        _read_dwarf(blob, images, dwarf == "files")
    return images


def load_blob(blob: Blob, symbols: bool = True) -> list[Image]:
    from icount.size.formats import read_object

    images = read_object(blob, symbols)
    if images is not None:
        return images
    head = bytes(blob.data[:8])
    from icount.size import archive

    if archive.is_archive(head):
        return [archive.read_archive(blob, symbols)]
    if head.startswith(b"\xca\xfe\xba\xbe"):
        raise blob.fail(f"{NOT_BINARY} (0xcafebabe but not a fat header: a Java class file?)")
    raise blob.fail(NOT_BINARY)


def host_arch() -> str:
    machine = platform.machine().lower()
    return {"aarch64": "arm64", "amd64": "x86_64"}.get(machine, machine)


def pick_host(images: list[Image]) -> Image:
    """The slice of a fat file this machine would run, else the first."""
    host = host_arch()
    return next((i for i in images if i.arch == host), images[0])


def summarize(path: str | Path) -> dict[str, int]:
    """Sizes for a one-line summary; for fat files, of the host's slice (or the first).

    file_bytes is the whole file; vm_bytes what the image maps; text_bytes the VM size
    of executable sections. Raises ParseError (or UsageError for a missing file).
    """
    image = pick_host(load(path, symbols=False))
    return {
        "file_bytes": image.file_size,
        "vm_bytes": image.vm_total,
        "text_bytes": image.text_bytes(),
    }
