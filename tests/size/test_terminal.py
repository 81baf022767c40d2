"""The terminal renderer: rich's layout where a table fits; labels shortened, then
columns wrapped, and never a number cut, where it does not (issue 16)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icount import terminal
from icount.numfmt import human_bytes
from icount.size import render
from icount.size.model import Breakdown, Row
from icount.tables import Column, Table, render_terminal

from .conftest import ROOT, Built
from .test_render import check

_TEXT = st.text(alphabet="abcdefgh_.[]:<>, ΔéK0123456789", min_size=1, max_size=30)


@st.composite
def tables(draw: st.DrawFn) -> tuple[Table, int]:
    ncols = draw(st.integers(2, 6))
    columns = [Column(draw(_TEXT).strip() or "x", "left")]
    columns += [Column(draw(_TEXT).strip() or "y") for _ in range(ncols - 1)]
    title = draw(st.one_of(st.none(), _TEXT.map(lambda t: t.strip() or "t")))
    t = Table(columns, title=title)
    for _ in range(draw(st.integers(0, 6))):
        t.add_row([draw(_TEXT).strip() or "-" for _ in range(ncols)])
    t.notes += [draw(st.text(alphabet="ab cd,e:", max_size=150)).strip() or "n"]
    return t, draw(st.integers(10, 160))


def rich_render(table: Table, width: int) -> str:
    """The table as rich drew it with icount's settings, before icount drew its own."""
    import io

    from rich import box
    from rich.console import Console
    from rich.table import Table as RichTable

    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width,
        color_system=None,
        force_terminal=False,
        force_jupyter=False,
        force_interactive=False,
        legacy_windows=False,
        emoji=False,
        highlight=False,
        markup=False,
        soft_wrap=False,
    )
    rt = RichTable(title=table.title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for col in table.columns:
        rt.add_column(col.title, justify=col.align, no_wrap=True, overflow="fold")
    for row in table.rows:
        rt.add_row(*row)
    console.print(rt)
    for note in table.notes:
        console.print(note, overflow="fold")
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"


def natural_width(t: Table) -> int:
    widths = [
        max([terminal.cell_len(c.title), *(terminal.cell_len(r[k]) for r in t.rows)])
        for k, c in enumerate(t.columns)
    ]
    return sum(widths) + 3 * (len(widths) - 1)


@settings(max_examples=150, deadline=None)
@given(tables())
def test_equals_rich_where_the_table_fits(case: tuple[Table, int]) -> None:
    t, width = case
    if natural_width(t) > width:  # rich shrinks columns there: that is what we avoid
        return
    assert render_terminal(t, width) == rich_render(t, width)


def _b(name: str, rows: list[tuple[str, int, int]]) -> Breakdown:
    rs = [Row(label, f, v) for label, f, v in rows]
    return Breakdown(name, "x86_64", "ELF64", "position-independent executable", 0, rs, [])


# The files a user compared when the numbers were cut: fib in C (gcc, clang), Go, Rust.
FOUR = [
    _b("fib-gcc", [(".text", 1_456, 1_456), (".symtab", 3_528, 0), ("[padding]", 9_932, 64)]),
    _b("fib-clang", [(".text", 1_232, 1_232), (".symtab", 3_624, 0), ("[padding]", 9_500, 60)]),
    _b(
        "fib-go",
        [(".text", 529_418, 529_418), (".symtab", 70_884, 0), ("[padding]", 218_357, 4_000)],
    ),
    _b(
        "fib-rust",
        [(".text", 218_362, 218_362), (".symtab", 32_112, 0), ("[padding]", 77_001, 2_100)],
    ),
]


@pytest.mark.parametrize("width", [80, 120])
def test_four_files_golden(width: int) -> None:
    out = render_terminal(render.table(FOUR, "sections"), width)
    check(f"four.{width}.table", out)
    assert max(len(line) for line in out.splitlines()) <= width
    for b in FOUR:
        assert b.path in out
        for r in b.rows:
            assert re.search(rf"(^|\s){re.escape(human_bytes(r.file))}(\s|$)", out, re.M)


def test_diff_wraps_at_80_and_fits_at_120() -> None:
    old, new = FOUR[2], FOUR[3]
    narrow = render_terminal(render.diff_table(old, new, "sections"), 80)
    wide = render_terminal(render.diff_table(old, new, "sections"), 120)
    check("diff.80.table", narrow)
    assert max(len(line) for line in narrow.splitlines()) <= 80
    assert narrow.count("TOTAL") == 2 and wide.count("TOTAL") == 1


def test_long_labels_are_shortened_before_columns_wrap() -> None:
    long = "std::__1::basic_string<char, std::__1::char_traits<char>>::append(char const*)"
    b = _b("libfoo.so", [(long, 100_000, 100_000), ("x", 10, 10)])
    out = render_terminal(render.table([b], "symbols"), 70)
    # shortened in the middle, between words: the start and the end are both there
    assert "std::__1::basic…char const*)" in out
    assert long not in out
    assert out.count("TOTAL") == 1  # one block: shortening the label sufficed
    assert max(len(line) for line in out.splitlines()) <= 70


def test_a_group_wider_than_the_terminal_is_printed_whole() -> None:
    out = render_terminal(render.table(FOUR[:2], "sections"), 20)
    assert "1.42 KiB" in out and "9.70 KiB" in out  # cut nowhere, though past 20 columns


def test_wrap_folds_like_rich() -> None:
    assert terminal.wrap("aaa bbb ccc", 7) == ["aaa bbb", "ccc"]
    assert terminal.wrap("abcdefghij", 4) == ["abcd", "efgh", "ij"]
    assert terminal.wrap("x abcdefghij y", 4) == ["x", "abcd", "efgh", "ij y"]


@pytest.mark.slow
@pytest.mark.parametrize("width", [80, 120])
def test_four_real_files(built: Built, width: int) -> None:
    names = [str(built.path(n)) for n in ("hello_elf", "hello_static", "hello_rust", "hello_go")]
    argv = [sys.executable, "-m", "icount", "size", "--gzip", *names]
    table = subprocess.run(
        [*argv, "--width", str(width)], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    doc = json.loads(
        subprocess.run(
            [*argv, "--format", "json"], capture_output=True, text=True, check=True, cwd=ROOT
        ).stdout
    )
    assert max(len(line) for line in table.splitlines()) <= width
    tokens = set(re.findall(r"\S+ (?:B|KiB|MiB|GiB)", table))
    for image in doc["images"]:  # the sections view shows every row: each number, whole
        for r in image["rows"]:
            assert human_bytes(r["file_bytes"]) in tokens and human_bytes(r["vm_bytes"]) in tokens
        assert human_bytes(image["file_bytes"]) in tokens
        assert human_bytes(image["vm_bytes"]) in tokens
        assert human_bytes(image["gzip_bytes"]) in tokens
    # one header line per file, none joined by commas
    heading = table.split("\n\n")[0].splitlines()
    assert len(heading) == 4 and all(": ELF64 " in h for h in heading)
