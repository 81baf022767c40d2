"""A Mach-O image's function starts (LC_FUNCTION_STARTS) against its symbols, on small
images written here: a function no symbol starts at makes the views of symbols say the
file is stripped; starts that do not decode claim nothing."""

from __future__ import annotations

import struct

import pytest

from icount.size import load_bytes, views

TEXT_ADDR = 0x100000000
MAIN = TEXT_ADDR + 0x400  # __text holds 0x400-0x500


def uleb(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def image(starts: bytes, symbols: list[tuple[int, int]] | None) -> bytes:
    """A 64-bit arm64 executable: __TEXT (fileoff 0) with one section __text, then
    LC_FUNCTION_STARTS holding `starts` and LC_SYMTAB holding `symbols` (n_type, value)
    named f0, f1, ..., all in section 1 (None: no LC_SYMTAB)."""
    seg = struct.pack("<II16sQQQQiiII", 0x19, 72 + 80, b"__TEXT", TEXT_ADDR, 0x1000, 0,
                      0x1000, 5, 5, 1, 0)  # fmt: skip
    sect = struct.pack("<16s16sQQIIIIIIII", b"__text", b"__TEXT", MAIN, 0x100, 0x400, 2,
                       0, 0, 0x80000400, 0, 0, 0)  # fmt: skip
    cmds_size = len(seg) + len(sect) + 16 + (24 if symbols is not None else 0)
    data_at = 0x1000
    names = b"\0" + b"".join(f"f{i}\0".encode() for i in range(len(symbols or ())))
    syms = b"".join(struct.pack("<IBBHQ", 1 + 3 * i, t, 1, 0, v)
                    for i, (t, v) in enumerate(symbols or ()))  # fmt: skip
    starts_at, syms_at = data_at, data_at + len(starts)
    names_at = syms_at + len(syms)
    fs = struct.pack("<IIII", 0x26, 16, starts_at, len(starts))
    symtab = b""
    if symbols is not None:
        symtab = struct.pack("<IIIIII", 0x2, 24, syms_at, len(symbols), names_at, len(names))
    ncmds = 3 if symbols is not None else 2
    header = struct.pack("<IiiIIII", 0xFEEDFACF, 0x0100000C, 0, 2, ncmds, cmds_size, 0)
    header += b"\0" * 4
    head = header + seg + sect + fs + symtab
    return head + b"\0" * (data_at - len(head)) + starts + syms + names


def said(data: bytes) -> str:
    return views.by_symbols(load_bytes("t", data)[0], 0).symbols


EXT, LOCAL = 0x0F, 0x0E  # N_SECT | N_EXT, N_SECT
STARTS = uleb(0x400) + uleb(0x20) + uleb(0x40) + b"\0\0\0"  # 0x400, 0x420, 0x460


def test_every_function_named_is_not_stripped() -> None:
    named = [(EXT, MAIN), (LOCAL, MAIN + 0x20), (LOCAL, MAIN + 0x60)]
    assert said(image(STARTS, named)) == "3 symbols from LC_SYMTAB"


def test_functions_without_a_symbol_make_it_stripped() -> None:
    b = views.by_symbols(load_bytes("t", image(STARTS, [(EXT, MAIN)]))[0], 0)
    assert b.stripped
    assert b.symbols == "stripped: no names for 2 of 3 functions; 1 symbol from LC_SYMTAB"


@pytest.mark.parametrize(
    "starts",
    [
        b"",  # none listed
        b"\x80" * 10 + b"\x01",  # a delta past 64 bits
        b"\x80\x80",  # never ends
        b"\0" + uleb(0x400),  # a list that ends before its first start
    ],
)
def test_starts_that_do_not_decode_claim_nothing(starts: bytes) -> None:
    assert said(image(starts, [(EXT, MAIN)])) == "1 symbol from LC_SYMTAB"


def test_no_symbol_table_is_only_sections() -> None:
    b = views.by_symbols(load_bytes("t", image(STARTS, None))[0], 0)
    assert b.stripped and b.symbols == "no symbols: only sections (no symbol table)"
