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
    # the Markdown puts a name in a code span
    starts = (name + " ", name + "` ")
    return next(line for line in text.splitlines()
                if line.lstrip("| ").removeprefix("`").startswith(starts))  # fmt: skip


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
    assert "| `exact` | 2107284 | 2137284 | +30000 | +1.42% |" in md
    # a side whose runs differ keeps its rounded figure, and so does the delta
    assert "| `noisy` | 2.107M | 2137284 | +29.99k | +1.42% |" in md
    table = export.render_comparison(c, "table", 120)  # the terminal keeps its width
    assert "2.107M" in _row_line(table, "exact") and "2107284" not in table


def test_no_match_is_named_before_fail_on_invalid(cli: Cli, write: Write, tmp_path: Path) -> None:
    """docs/ci.md's recipes pass --fail-on-invalid: a renamed benchmark still names what
    each side holds alone, and --allow-no-match still lets it pass (review2 M4); nothing
    compared writes no ledger entry (L4), and the Markdown says why the job fails (M6)."""
    base = write("a.json", res(cell("loop", [100] * 3)))
    new = write("b.json", res(cell("loop-renamed", [100] * 3)))
    ledger = tmp_path / "LEDGER.md"
    done = cli("compare", base, new, "--fail-on-invalid", "-f", "md",
               "--ledger", ledger, "--note", "rename")  # fmt: skip
    assert done.code == ExitCode.INVALID
    assert "no cell of the base matches a cell of the new file (only in base: loop;" in done.err
    assert "❌ **nothing compared**: no cell of the base matches" in done.out
    assert not ledger.exists()
    done = cli("compare", base, new, "--fail-on-invalid", "--allow-no-match", "-q")
    assert done.code == ExitCode.OK, done.err
    assert done.err.startswith("icount: warning: no cell of the base matches")
    assert "--allow-no-match" not in done.err  # given: not advised again
    # a cell that did match and is invalid still fails --fail-on-invalid
    both = write("c.json", res(cell("loop", [100] * 3, failed="exit 1")))
    done = cli("compare", base, both, "--fail-on-invalid", "--allow-no-match", "-q")
    assert done.code == ExitCode.INVALID
    assert "(--fail-on-invalid); first: loop: invalid in new" in done.err


def test_an_interleave_failure_does_not_name_a_flag_not_given() -> None:
    from icount.compare.rounds import Pair

    c = model.compare_pairs("cmd", "callgrind", "instructions", [Pair(5.0, None)],
                            (model.Verdict.INVALID_IN_NEW, "new run 1: exited with status 1"),
                            parse_thresholds([], 10))  # fmt: skip
    failed = model.gate(c, True, False, "a failed run fails --interleave")
    assert failed is not None and failed.exit_code == ExitCode.INVALID
    assert "(a failed run fails --interleave); first: cmd: invalid in new" in str(failed)


def test_exit_5_means_the_same_in_every_help() -> None:
    from typer.testing import CliRunner

    from icount.cli import app

    for args in (["--help"], ["compare", "--help"]):
        out = CliRunner().invoke(app, args, terminal_width=200).output
        assert "5" in out and "no cell" in out and "match" in out, args
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "5 a cell that is not valid, or `compare` matched no cell" in readme
