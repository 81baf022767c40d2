"""Every table fits its width without a number cut, escapes names from input files and
orders rows one way; the formats are one registry (issues 21 and 24)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icount import export, results, sorting
from icount.compare import model
from icount.compare import render as compare_render
from icount.compare.thresholds import parse_thresholds
from icount.errors import UsageError
from icount.numfmt import human_bytes, median_range, si
from icount.results import Cell, Results, Run
from icount.results.details import CommandDetail
from icount.size import report as size_report
from icount.tables import Column, Table, render_terminal
from tests.support.cli import icount_here, run_icount_here

Icount = Callable[..., Any]


@pytest.fixture(scope="module")
def icount() -> Icount:
    """In-process: the commands here read files or fail on their arguments."""
    return icount_here


FP = {"backend": "callgrind", "tool_version": "valgrind 3.19.0", "arch": "x86_64"}
LONG = "a-benchmark-" + "with-a-very-long-name-" * 4  # 100 characters


def _cell(name: str, values: list[float], order: int = 0, path: str = "") -> Cell:
    runs = tuple(Run(v, True, None, CommandDetail(0)) for v in values)
    return Cell(
        name, path, "callgrind", results.UNIT_INSTRUCTIONS, runs, {}, len(values), 0.01,
        order=order,
    )  # fmt: skip


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def test_a_long_name_is_shortened_in_the_middle_and_no_number_is_cut() -> None:
    res = Results(FP, (_cell(LONG, [111_700, 111_650, 111_790], 0), _cell("b", [5, 5, 5], 1)))
    text = export.render_results(res, "table", 120)
    assert _widest(text.split("\nmedian")[0]) <= 120
    assert median_range(111_700, 111_650, 111_790) in text  # "111.7k (111.7k-111.8k)"
    assert "a-benchmark-with" in text and "…" in text and LONG[-10:] in text


def test_compare_keeps_every_column_beside_a_long_name() -> None:
    base = Results(FP, (_cell(LONG, [1000, 1000, 1000]),))
    new = Results(FP, (_cell(LONG, [2000, 2000, 2000]),))
    c = model.compare(base, new, parse_thresholds([], 10))
    text = export.render_comparison(c, "table", 120)
    header = text.splitlines()[1].split()
    assert header[1:] == ["base", "new", "delta", "change", "threshold", "verdict"]
    assert "+100.00%" in text and "regressed" in text


def test_the_results_of_icount_size_stack_in_blocks_with_their_names(tmp_path: Path) -> None:
    items = size_report.breakdowns(Path("/bin/true"), "sections", 0, False)
    res = size_report.to_results(items, "sections")
    text = export.render_results(res, "table", 120)
    blocks = text.split("\n\n")
    assert len(blocks) > 1 and _widest(text.split("\nmedian")[0]) <= 120
    for block in blocks:  # each block repeats the name column
        assert any(line.startswith("name ") for line in block.splitlines())
        assert any(line.startswith("true ") for line in block.splitlines())
    for cell in res.cells:  # every figure whole, in the units icount size prints
        s = cell.summary
        assert s is not None and re.search(
            rf"(^| ){re.escape(human_bytes(int(s.median)))}( |$)", text, re.M
        )
    assert "sizes read from the files" in text and "fresh processes" not in text


def test_columns_stack_before_a_number_is_cut_at_any_width() -> None:
    t = Table([Column("name", "left"), *(Column(f"column {i}") for i in range(6))])
    t.add_row(["x" * 40, *(si(123_456_789 * (i + 1)) for i in range(6))])
    for width in (10, 30, 60, 200):
        text = render_terminal(t, width)
        for i in range(6):
            assert si(123_456_789 * (i + 1)) in text
        # each block is one column of numbers beside the label: at most as wide as it needs
        assert _widest(text) <= max(width, 24 + 3 + len("column 0"))


def test_prose_columns_wrap_to_the_width() -> None:
    t = Table([Column("check", "left"), Column("ok", "left"), Column("detail", "left", wrap=True)])
    t.add_row(["perf", "no", "word " * 40])
    text = render_terminal(t, 60)
    assert _widest(text) <= 60 and text.count("word") == 40


def test_names_from_input_files_are_escaped_in_every_cell() -> None:
    evil = "fib\n\x1b[31mred\u202e"
    res = Results(FP, (_cell(evil, [10, 10], path="p\x07"),))
    # Markdown escapes its Markdown too (text.md_text, as a comparison's): \ as \\, [ as \[
    md = "fib\\\\n\\\\x1b\\[31mred\\\\u202e"
    for fmt, shown in (("table", "fib\\n\\x1b[31mred\\u202e"), ("md", md)):
        text = export.render_results(res, fmt, 120)
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
        assert shown in text
    c = model.compare(res, res, parse_thresholds([], 10))
    # a comparison's Markdown puts a name in a code span (text.md_code): no escape but printable's
    for fmt, shown in (("table", "fib\\n\\x1b[31mred"), ("md", "`fib\\n\\x1b[31mred")):
        text = export.render_comparison(c, fmt, 120)
        assert "\x1b" not in text and shown in text


def _named(*names: str) -> Results:
    return Results(FP, tuple(_cell(n, [10, 10], i) for i, n in enumerate(names)))


def test_rows_are_as_given_or_in_natural_order_everywhere() -> None:
    res = _named("fib-10", "fib-2", "fib-1")
    given = export.render_results(res, "csv", 120).splitlines()[1:]
    assert [line.split(",")[0] for line in given] == ["fib-10", "fib-2", "fib-1"]
    named = export.render_results(res, "csv", 120, sort="name").splitlines()[1:]
    assert [line.split(",")[0] for line in named] == ["fib-1", "fib-2", "fib-10"]
    table = export.render_results(res, "table", 120, sort="name")
    assert table.index("fib-2 ") < table.index("fib-10 ")
    c = compare_render.given_order(model.compare(res, res, parse_thresholds([], 10)), res, res)
    assert [r.name for r in c.rows] == ["fib-10", "fib-2", "fib-1"]
    by_name = compare_render.in_order(c, "name")
    assert [r.name for r in by_name.rows] == ["fib-1", "fib-2", "fib-10"]
    assert sorting.names(["b10", "b9", "a", "b09"]) == ["a", "b09", "b9", "b10"]


def test_compare_sort_on_the_command_line(icount: Icount, tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    results.save(path, _named("fib-10", "fib-2", "fib-1"), None, overwrite=False)
    order = icount("compare", str(path), str(path), "-f", "csv")
    assert [x.split(",")[0] for x in order.stdout.splitlines()[1:]] == ["fib-10", "fib-2", "fib-1"]
    named = icount("compare", str(path), str(path), "-f", "csv", "--sort", "name")
    assert [x.split(",")[0] for x in named.stdout.splitlines()[1:]] == ["fib-1", "fib-2", "fib-10"]


def test_one_registry_of_formats() -> None:
    assert export.names(export.Kind.RESULTS) == ("table", "md", "csv", "json", "bmf", "svg")
    assert export.names(export.Kind.INLINE) == ("table", "md", "json")
    assert "benchmark-json" in export.names(export.Kind.COMPARISON)
    assert export.help_text(export.Kind.INLINE) == "table, md or json."
    with pytest.raises(UsageError, match="--format csv does not print an inline report"):
        export.check("csv", export.Kind.INLINE)
    with pytest.raises(UsageError, match="unknown format 'xml'"):
        export.check("xml", export.Kind.SIZE)
    with pytest.raises(ValueError):
        export.render(export.InlineDoc({}), "csv")


@pytest.mark.parametrize(
    ("args", "message", "formats"),
    [
        (["table", "x.json", "-f", "benchmark-json"], "benchmark-json does not print results",
         "table|md|csv|json|bmf|svg"),
        (["size", "/bin/true", "-f", "benchmark-json"], "benchmark-json does not print sizes",
         "table|md|csv|json|svg"),
        (["size", "-f", "xml", "/bin/true"], "unknown format 'xml'", "table|md|csv|json|svg"),
    ],
)  # fmt: skip
def test_a_format_a_command_does_not_print_is_one_line(
    icount: Icount, args: list[str], message: str, formats: str
) -> None:
    done = icount(*args)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert done.stderr.startswith("icount: error: ") and done.stderr.count("\n") == 1
    assert done.stderr.endswith(f" (use --format {formats})\n")


def test_the_table_follows_columns(icount: Icount, tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    results.save(
        path, Results(FP, (_cell(LONG, [111_700, 111_650, 111_790]),)), None, overwrite=False
    )
    wide = icount("table", str(path))
    narrow = run_with_columns(icount, tmp_path, "60", "table", str(path))
    assert _widest(wide.stdout.split("\nmedian")[0]) > 60
    assert _widest(narrow.split("\nmedian")[0]) <= 60
    assert median_range(111_700, 111_650, 111_790) in narrow


def run_with_columns(icount: Icount, tmp_path: Path, columns: str, *args: str) -> str:
    import os

    done = run_icount_here(args, tmp_path, env={**os.environ, "COLUMNS": columns})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_size_comparisons_print_sizes_as_icount_size_does(tmp_path: Path) -> None:
    items = size_report.breakdowns(Path("/bin/true"), "sections", 0, False)
    res = size_report.to_results(items, "sections")
    text = export.render_comparison(model.compare(res, res, parse_thresholds([], 10)), "table")
    assert re.search(r"\d+\.\d\d KiB", text) and " B " in text
    assert "billion bytes" not in text and "KiB = 1024 bytes" in text
    doc = json.loads(
        export.render_comparison(model.compare(res, res, parse_thresholds([], 10)), "json")
    )
    assert doc["cells"][0]["unit"] == "bytes"  # machine formats keep exact bytes


def test_one_cell_is_said_in_the_singular() -> None:
    base = Results(FP, (_cell("a", [1000, 1000]),))
    new = Results(FP, (_cell("a", [2000, 2000]),))
    failed = model.gate(model.compare(base, new, parse_thresholds([], 10)), False)
    assert failed is not None and str(failed) == "1 of 1 cell regressed beyond its threshold"
    import dataclasses

    # invalid, not missing: a comparison with no cell matched fails as such first
    crashed = (Run(None, False, "exit 1", CommandDetail(1)),)
    failed_run = dataclasses.replace(_cell("a", [2000]), runs=crashed)
    invalid = model.compare(base, Results(FP, (failed_run,)), parse_thresholds([], 10))
    failed = model.gate(invalid, True)
    assert failed is not None and str(failed).startswith("1 of 1 cell is invalid or missing")


_NAMES = st.text(min_size=1, max_size=120)  # any characters: controls, ESC, bidi, wide


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_NAMES, min_size=1, max_size=4, unique=True),
    st.floats(0, 1e12, allow_nan=False),
    st.integers(1, 200),
)
def test_any_names_at_any_width_keep_every_figure_and_no_control_character(
    names: list[str], value: float, width: int
) -> None:
    res = Results(FP, tuple(_cell(n, [value] * 3, i) for i, n in enumerate(names)))
    c = model.compare(res, res, parse_thresholds([], 10))
    s = res.cells[0].summary
    assert s is not None
    for text in (
        export.render_results(res, "table", width),
        export.render_comparison(c, "table", width),
    ):
        assert all(ch == "\n" or ch.isprintable() for ch in text), text
        assert si(s.median) in text
    assert median_range(s.median, s.min, s.max) in export.render_results(res, "table", width)


def test_names_with_more_digits_than_int_converts_sort_by_value() -> None:
    """A name from a file may hold a run of 5,000 digits; int() refuses beyond 4,300
    (ValueError: an internal error of --sort name)."""
    long = "fib-" + "9" * 5000
    assert sorting.names([long, "fib-10", "fib-010", "fib-2"]) == [
        "fib-2",
        "fib-010",
        "fib-10",
        long,
    ]
