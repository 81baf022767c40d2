"""Go's function table read from `.gopclntab` (icount/size/gopclntab.py) in each of its
formats, its corrupt forms refused in one line, and callgrind's address-named code of a
stripped Go binary named and merged from it (icount/callgrind/stripped.py)."""

from __future__ import annotations

import pytest

from icount.callgrind import stripped
from icount.callgrind.functions import window_profile
from icount.callgrind.parser import parse_bytes
from icount.errors import ParseError
from icount.runtimes import runtime_work
from icount.size.gopclntab import GoFunctions, _search, read_table
from icount.size.source import Blob
from tests.callgrind.gopclntab_tables import table

FUNCS = [
    (0x401000, "internal/cpu.Initialize"),
    (0x401060, "runtime.mallocgc"),
    (0x4015C0, "runtime.gcBgMarkWorker"),
    (0x401E00, "main.main"),
]
END = 0x402000


def _read(data: bytes, text_addr: int = 0) -> GoFunctions:
    got = read_table(Blob("prog", data), 0, len(data), text_addr)
    assert got is not None
    return got


@pytest.mark.parametrize(
    ("fmt", "ptr", "big"),
    [("1.2", 8, False), ("1.2", 4, True), ("1.16", 8, False), ("1.16", 4, False),
     ("1.18", 8, False), ("1.20", 8, False), ("1.20", 4, True)],
)  # fmt: skip
def test_every_format_gives_each_functions_entry_and_name(fmt: str, ptr: int, big: bool) -> None:
    t = _read(table(fmt, FUNCS, END, ptr=ptr, big=big))
    assert t.fmt == fmt
    assert [int(x) for x in t.entries] == [pc for pc, _ in FUNCS] + [END]
    assert [t.name(i) for i in range(len(t))] == [n for _, n in FUNCS]


def test_an_address_maps_to_the_function_holding_it() -> None:
    t = _read(table("1.20", FUNCS, END))
    at = t.index([0x401000, 0x40105F, 0x401060, 0x4015C1, 0x401FFF, 0x402000, 0x400FFF])
    assert at == [0, 0, 1, 2, 3, -1, -1]


def test_a_text_start_left_to_a_relocation_is_the_text_sections_address() -> None:
    data = table("1.18", FUNCS, END, text_start=0)
    assert [int(x) for x in _read(data, text_addr=0).entries][:2] == [0x401000, 0x401060]
    # entries written relative to 0 read relative to .text's address when the header has none
    moved = table("1.18", [(pc - 0x400000, n) for pc, n in FUNCS], END - 0x400000, text_start=0)
    assert int(_read(moved, text_addr=0x400000).entries[1]) == 0x401060


def test_a_table_of_no_known_format_is_none() -> None:
    assert read_table(Blob("prog", b"\x01\x02\x03\x04" + bytes(60)), 0, 64, 0) is None
    assert read_table(Blob("prog", b"\xfb\xff"), 0, 2, 0) is None


@pytest.mark.parametrize(
    ("patch", "says"),
    [
        # nfunc at offset 8: a count the table cannot hold, refused before any allocation
        (lambda d: d[:8] + (1 << 60).to_bytes(8, "little") + d[16:], "run past the table"),
        (lambda d: d[:6] + b"\x03" + d[7:], "quantum 3"),
        (lambda d: d[:4] + b"\x01" + d[5:], "pad 0100"),
        (lambda d: d[:20], "header runs past the table"),
        # the functab's offset (the header's last word) past the end
        (lambda d: d[:8 + 7 * 8] + (1 << 40).to_bytes(8, "little") + d[8 + 8 * 8:],
         "run past the table"),
    ],
)  # fmt: skip
def test_a_corrupt_table_is_one_line_naming_the_file(patch, says) -> None:  # type: ignore[no-untyped-def]
    data = patch(table("1.20", FUNCS, END))
    with pytest.raises(ParseError) as e:
        read_table(Blob("prog", data), 0, len(data), 0)
    assert str(e.value).startswith("prog: .gopclntab: ")
    assert says in str(e.value)
    assert "\n" not in str(e.value)


def test_entries_out_of_order_are_refused() -> None:
    data = table("1.20", [FUNCS[1], FUNCS[0]], END, text_start=0x400000)
    with pytest.raises(ParseError, match="not in address order"):
        _read(data)


def test_a_name_outside_the_table_is_refused_when_asked_for() -> None:
    data = bytearray(table("1.2", FUNCS, END))
    # function 0's _func follows the functab; its nameoff after its 8-byte entry
    at = 8 + 8 + (2 * len(FUNCS) + 1) * 8 + 8
    data[at : at + 4] = (1 << 30).to_bytes(4, "little")
    t = _read(bytes(data))
    assert t.name(1) == "runtime.mallocgc"
    with pytest.raises(ParseError, match=r"function 0.s name at \d+ lies outside the table"):
        t.name(0)


def test_a_table_merged_into_another_section_is_found_by_its_header() -> None:
    """An external linker merges the table into .data.rel.ro: found by its magic, past a
    place that starts like a header (the 1.20 magic, then pad bytes) but is not one."""
    real = table("1.18", FUNCS, END)
    decoy = (0xFFFFFFF1).to_bytes(4, "little") + b"\0\0\x01\x08" + b"\xff" * 56
    data = b"\x11" * 40 + decoy + real + b"\x22" * 24
    got = _search(Blob("prog", data), 0, len(data), 0)
    assert got is not None
    assert got.fmt == "1.18"
    assert [got.name(i) for i in range(len(got))] == [n for _, n in FUNCS]
    assert _search(Blob("prog", decoy + b"\x22" * 24), 0, 88, 0) is None


PROFILE = b"""\
version: 1
creator: callgrind-3.19.0
pid: 7
cmd: /srv/prog
positions: line
events: Ir
summary: 1000
ob=(1) /srv/prog
fl=(1) ???
fn=(1) 0x0000000000401e00
0 100
cfn=(2) 0x0000000000401e40
calls=3 0
0 600
fn=(2) 0x0000000000401e40
0 200
cfn=(3) 0x0000000000401060
calls=2 0
0 400
fn=(3) 0x0000000000401060
0 250
cfn=(4) 0x00000000004015c0
calls=1 0
0 150
fn=(4) 0x00000000004015c0
0 150
fn=(5) 0x0000000000500000
0 300
ob=(2) /lib/libc.so.6
fn=(6) 0x0000000000001000
0 0
totals: 1000
"""


def test_a_stripped_go_profile_is_named_merged_and_its_runtime_detected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tables = {"/srv/prog": _read(table("1.20", FUNCS, END))}
    monkeypatch.setattr(stripped, "go_functions", tables.get)
    prof = parse_bytes(PROFILE, "callgrind.out.7")
    assert runtime_work(prof).runtime is None  # by address alone, Go is not seen
    named = stripped.name_go_functions(prof)
    assert [f.name for f in named.functions] == [
        "main.main", "runtime.mallocgc", "runtime.gcBgMarkWorker", "0x0000000000500000",
        "0x0000000000001000",
    ]  # fmt: skip
    # main.main's two blocks: one function, the jump between them a call to itself
    costs = window_profile(named).costs
    assert costs["main.main"].self_ir == 300
    assert costs["main.main"].inclusive == 700  # 300 + the 400 of its call into mallocgc
    assert costs["runtime.mallocgc"].inclusive == 400
    assert int(named.self_cost.sum()) == int(prof.self_cost.sum()) == 1000
    work = runtime_work(named)
    assert work.runtime == "go"
    assert work.collector == 150  # gcBgMarkWorker's self cost


def test_a_profile_with_nothing_to_name_is_returned_as_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stripped, "go_functions", lambda path: None)
    prof = parse_bytes(PROFILE, "callgrind.out.7")
    assert stripped.name_go_functions(prof) is prof


def test_an_unreadable_table_leaves_the_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(path: str) -> GoFunctions:
        raise ParseError("corrupt", source=path)

    monkeypatch.setattr(stripped, "go_functions", broken)
    prof = parse_bytes(PROFILE, "callgrind.out.7")
    assert stripped.name_go_functions(prof) is prof
