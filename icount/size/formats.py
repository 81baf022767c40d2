"""The object formats a file or an archive's member is read as (ELF, Mach-O, Wasm),
told apart by their first bytes. `icount.size.load_blob` reads a file by them or as
an archive; the archive reader (icount/size/archive.py) reads each member by them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icount.size.model import Image
    from icount.size.source import Blob


def known(head: bytes) -> bool:
    """Whether the first bytes are those of an ELF, Mach-O or Wasm file."""
    from icount.size import macho, wasm

    return (
        head.startswith(b"\x7fELF")
        or macho.is_thin(head)
        or macho.is_fat(head)
        or wasm.is_wasm(head)
    )


def read_object(blob: Blob, symbols: bool = True) -> list[Image] | None:
    """Every image of an ELF, Mach-O or Wasm file (one per architecture of a fat
    Mach-O file); None when the file is none of them."""
    head = bytes(blob.data[:8])
    if head.startswith(b"\x7fELF"):
        from icount.size.elf import read_elf

        return [read_elf(blob, symbols)]
    from icount.size import macho

    if macho.is_fat(head) or macho.is_thin(head):
        return macho.read_macho(blob, symbols)
    from icount.size import wasm

    if wasm.is_wasm(head):
        return [wasm.read_wasm(blob, symbols)]
    return None
