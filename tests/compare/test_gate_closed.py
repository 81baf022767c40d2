"""Gates fail closed (issue 30): a comparison that matched no cell fails (exit 5) naming
what each side held alone unless --allow-no-match; a change below the threshold reads
"within threshold", a zero change "unchanged"; the Markdown gives exact counts where a
side's runs repeat to the instruction."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from icount import export
from icount.compare import model
from icount.compare.thresholds import parse_thresholds
from icount.errors import ExitCode
from icount.results import Results
from tests.compare.conftest import Cli, cell, res

Write = Callable[[str, Results], Path]


def test_a_renamed_benchmark_fails_the_gate_naming_both_sides(cli: Cli, write: Write) -> None:
    base = write("a.json", res(cell("parse-json", [100] * 3), cell("x\x1b[2J", [5] * 3)))
    new = write("b.json", res(cell("parse_json", [100] * 3), cell("y", [5] * 3)))
    for fmt in ("table", "json", "md"):
        done = cli("compare", base, new, "-f", fmt)
        assert done.code == ExitCode.INVALID, (fmt, done.err)
        assert done.err == (
            "icount: error: no cell of the base matches a cell of the new file (only in base: "
            "parse-json, x\\x1b[2J; only in new: parse_json, y; cells match by name, path and "
            "backend: give both runs the same names (--name, --cmd NAME=...), or pass "
            "--allow-no-match)\n"
        )
    assert cli("compare", base, new, "--allow-no-match", "-q").code == ExitCode.OK


def test_two_empty_files_compare_nothing_and_fail(cli: Cli, write: Write) -> None:
    base, new = write("a.json", res()), write("b.json", res())
    done = cli("compare", base, new)
    assert done.code == ExitCode.INVALID
    assert "neither side holds a cell: nothing was compared" in done.err
    assert cli("compare", base, new, "--allow-no-match").code == ExitCode.OK


def test_one_matched_cell_is_enough(cli: Cli, write: Write) -> None:
    base = write("a.json", res(cell("a", [100] * 3), cell("gone", [5] * 3)))
    new = write("b.json", res(cell("a", [100] * 3), cell("added", [5] * 3)))
    assert cli("compare", base, new).code == ExitCode.OK


def _row_line(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if line.lstrip("| ").startswith(name + " "))


def test_a_change_below_the_threshold_reads_within_threshold() -> None:
    base = res(cell("moved", [100_000] * 3), cell("same", [5000] * 3))
    new = res(cell("moved", [100_500] * 3), cell("same", [5000] * 3))
    c = model.compare(base, new, parse_thresholds([], 10))
    assert [r.verdict for r in c.rows] == [model.Verdict.UNCHANGED] * 2  # the gate's word
    for fmt in ("table", "md"):
        out = export.render_comparison(c, fmt, 120)
        assert _row_line(out, "moved").rstrip(" |").endswith("within threshold"), fmt
        assert _row_line(out, "same").rstrip(" |").endswith("| unchanged" if fmt == "md"
                                                            else "   unchanged")  # fmt: skip


def test_markdown_gives_exact_counts_where_runs_repeat() -> None:
    base = res(cell("exact", [2_107_284] * 3), cell("noisy", [2_107_284, 2_107_300, 2_107_290]))
    new = res(cell("exact", [2_137_284] * 3), cell("noisy", [2_137_284] * 3))
    c = model.compare(base, new, parse_thresholds([], 10))
    md = export.render_comparison(c, "md")
    assert "| exact | 2107284 | 2137284 | +30000 | +1.42% |" in md
    # a side whose runs differ keeps its rounded figure, and so does the delta
    assert "| noisy | 2.107M | 2137284 | +29.99k | +1.42% |" in md
    table = export.render_comparison(c, "table", 120)  # the terminal keeps its width
    assert "2.107M" in _row_line(table, "exact") and "2107284" not in table
