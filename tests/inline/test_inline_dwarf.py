"""DWARF inline sites of `icount inline` against readelf's DIE dump."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from icount.inline.binary import read_binary
from icount.inline.dwarf import match_key, read_inline_sites

from .common import EXE_A, EXE_B


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) is not installed")
@pytest.mark.parametrize("exe", [EXE_A, EXE_B])
def test_inline_copies_agree_with_readelf(exe: Path) -> None:
    # Independent count: readelf's DIE dump, inlined_subroutine entries by origin name.
    dump = subprocess.run(
        ["readelf", "--debug-dump=info", str(exe)], capture_output=True, text=True, check=True
    ).stdout
    names = dict(
        re.findall(
            r"<1><([0-9a-f]+)>: Abbrev Number: \d+ \(DW_TAG_subprogram\)\n"
            r"(?:    <[0-9a-f]+> +DW_AT_external *: 1\n)?"
            r"    <[0-9a-f]+> +DW_AT_name *: (?:\(indirect string, offset: 0x[0-9a-f]+\): )?(\S+)",
            dump,
        )
    )
    origins = re.findall(
        r"\(DW_TAG_inlined_subroutine\)\n    <[0-9a-f]+> +DW_AT_abstract_origin: <0x([0-9a-f]+)>",
        dump,
    )
    expected: dict[str, int] = {}
    for off in origins:
        expected[names[off]] = expected.get(names[off], 0) + 1
    sites = read_inline_sites(exe, read_binary(exe).names_at)
    mine: dict[str, int] = {}
    for counter in sites.copies.values():
        for callee, n in counter.items():
            mine[callee] = mine.get(callee, 0) + n
    assert mine == expected
    if exe == EXE_A:
        assert mine["mix"] == 1 and mine["fib"] > 0


def test_match_key_meets_dwarf_names() -> None:
    assert match_key("calc::mix(long)") == "calc::mix"
    assert match_key("calc::Acc<long>::add(long) const") == "calc::Acc<long>::add"
    assert match_key("Foo::operator()(int) &&") == "Foo::operator()"
    assert match_key("(below main)") == "(below main)"
    assert match_key("fib") == "fib"
