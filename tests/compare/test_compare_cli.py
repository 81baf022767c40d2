"""`icount compare` as a user meets it: exit codes, one-line errors, refusals, outputs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from icount import results
from icount.compare.thresholds import DEFAULT_MIN_DELTA
from icount.results import Results
from tests.support.golden import assert_golden

from .conftest import FP, Cli, cell, res

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "compare"
GOLDEN = Path(__file__).parent / "golden"
Write = Callable[[str, Results], Path]


@pytest.fixture
def regression(write: Write) -> tuple[Path, Path]:
    """nginx/plaintext 1.5% worse, c-epoll/plaintext 6.5% better, fib unchanged."""
    base = res(
        cell("nginx", [13000.0, 13000.2, 12999.9], "plaintext"),
        cell("c-epoll", [3100.0, 3100.0, 3100.0], "plaintext"),
        cell("fib", [407921, 407921, 407921]),
    )
    new = res(
        cell("nginx", [13195.0, 13195.1, 13194.8], "plaintext"),
        cell("c-epoll", [2898.5, 2898.5, 2898.5], "plaintext"),
        cell("fib", [407921, 407921, 407921]),
    )
    return write("base.json", base), write("new.json", new)


def test_help_has_examples_verdicts_and_exit_codes(cli: Cli) -> None:
    done = cli("compare", "--help")
    assert done.code == 0
    for text in ("Examples:", "icount compare base.json new.json", "missing in new", "Exit codes"):
        assert text in done.out
    # The default is spelled out in the help (the module does not import it at start-up).
    assert f"[default: {DEFAULT_MIN_DELTA:g}]" in " ".join(done.out.split())


def test_regression_exits_3_at_1_percent_and_0_at_2(
    cli: Cli, regression: tuple[Path, Path]
) -> None:
    base, new = regression
    done = cli("compare", base, new)
    assert done.code == 3
    assert "1 regression, 1 improved, 1 unchanged (threshold 1%, min delta 10)" in done.out
    assert done.err == "icount: error: 1 of 3 cells regressed beyond their threshold\n"
    assert cli("compare", base, new, "--threshold", "2%").code == 0
    # A glob override for the regressed cell alone is enough as well.
    assert cli("compare", base, new, "-t", "nginx/*=2%").code == 0
    assert cli("compare", base, new, "-t", "c-epoll/*=2%").code == 3
    typo = cli("compare", base, new, "-t", "ngnix/*=2%", "-t", "nginx/*=2%")
    assert typo.code == 0
    assert typo.err == (
        "icount: warning: --threshold 'ngnix/*=...' set no cell's threshold "
        "(no match, or an earlier glob matched first)\n"
    )


def test_improvement_alone_exits_0(cli: Cli, write: Write) -> None:
    base = write("b.json", res(cell("a", [100000] * 3)))
    new = write("n.json", res(cell("a", [50000] * 3)))
    done = cli("compare", base, new, "--fail-on-invalid", "-f", "md")
    assert done.code == 0
    assert done.out.startswith("✅ 1 improved (threshold 1%, min delta 10)\n")


def test_fail_on_invalid_exits_5(cli: Cli, write: Write) -> None:
    base = write("b.json", res(cell("a", [1000] * 3), cell("gone", [1000] * 3)))
    new = write("n.json", res(cell("a", [1000] * 2, failed="exited with status 1")))
    assert cli("compare", base, new).code == 0
    done = cli("compare", base, new, "--fail-on-invalid")
    assert done.code == 5
    assert done.err.count("\n") == 1 and "2 of 2 cells are invalid or missing" in done.err


def test_mismatched_fingerprints_are_refused_naming_fields(cli: Cli, write: Write) -> None:
    base = write("b.json", res(cell("a", [1000] * 3)))
    new = write(
        "n.json", res(cell("a", [1000] * 3), glibc="glibc 2.39", tool_version="valgrind 3.22.0")
    )
    done = cli("compare", base, new)
    assert done.code == 2
    assert done.out == ""
    assert done.err.count("\n") == 1
    assert "tool_version: base 'valgrind 3.19.0' vs new 'valgrind 3.22.0'" in done.err
    assert "glibc: base 'glibc 2.36' vs new 'glibc 2.39'" in done.err
    assert "pass --force" in done.err

    forced = cli("compare", base, new, "--force")
    assert forced.code == 0
    assert "forced with --force although the environments differ: tool_version" in forced.out
    for fmt in ("md", "json", "csv", "benchmark-json"):
        out = cli("compare", base, new, "--force", "-f", fmt).out
        assert "forced with --force" in out or '"field": "glibc"' in out, fmt


def _truncated() -> bytes:
    text = (FIXTURES / "loop-base.json").read_bytes()
    return text[: len(text) // 2]


def _real_with(**changes: object) -> bytes:
    return json.dumps({**json.loads((FIXTURES / "loop-base.json").read_text()), **changes}).encode()


MALFORMED_CELL = {
    "format": "icount-results",
    "version": 1,
    "fingerprint": {},
    "cells": [{"name": 3}],
}


BAD_FILES: dict[str, bytes | None] = {
    "corrupt": b'{"format": "icount-results", "version": 1, "cells": [}',
    "truncated": None,  # the first half of a real results file, filled in below
    "wrong-version": _real_with(version=99),
    "not-icount": b'{"benchmarks": []}',
    "a-list": b"[1, 2, 3]",
    "empty": b"",
    "binary": bytes(range(256)),
    "malformed-cell": json.dumps(MALFORMED_CELL).encode(),
}  # fmt: skip
EXPECTED = {
    "corrupt": "not valid JSON",
    "truncated": "truncated or corrupt",
    "wrong-version": "results format version 99; this icount reads versions 1, 2",
    "not-icount": "not an icount results file",
    "a-list": "not an icount results file",
    "empty": "not valid JSON",
    "binary": "not UTF-8",
    "malformed-cell": "malformed results file",
}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
@pytest.mark.parametrize("side", ["base", "new"])
def test_bad_results_files_give_one_line_and_exit_6(
    cli: Cli, write: Write, tmp_path: Path, kind: str, side: str
) -> None:
    good = write("good.json", res(cell("a", [1000] * 3)))
    bad = tmp_path / f"{kind}.json"
    content = BAD_FILES[kind]
    bad.write_bytes(content if content is not None else _truncated())
    done = cli("compare", *((bad, good) if side == "base" else (good, bad)))
    assert done.code == 6
    assert done.out == ""
    assert done.err.startswith(f"icount: error: {bad}: ")
    assert EXPECTED[kind] in done.err
    assert done.err.count("\n") == 1 and "Traceback" not in done.err


def test_missing_file_and_directory_exit_6(cli: Cli, write: Write, tmp_path: Path) -> None:
    good = write("good.json", res(cell("a", [1000] * 3)))
    assert "no such file" in cli("compare", good, tmp_path / "nope.json").err
    empty = tmp_path / "empty"
    empty.mkdir()
    done = cli("compare", empty, good)
    assert done.code == 6 and "a folder with no results files" in done.err
    # a folder of results files is a side of the comparison (the shards of a session)
    assert cli("compare", tmp_path, good).code == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["only-one.json"], "compare takes two results files"),
        (["a.json", "b.json", "c.json"], "compare takes two results files"),
        (["--base-cmd", "true", "--new-cmd", "true"], "need --interleave"),
        (["--interleave", "--base-cmd", "true"], "--interleave needs --base-cmd"),
        (["--interleave", "x.json", "--base-cmd", "true", "--new-cmd", "true"], "takes no results"),
        (["--interleave", "--base-cmd", "'unclosed", "--new-cmd", "true"], "--base-cmd:"),
        (["a.json", "b.json", "-f", "xml"], "unknown format 'xml'"),
        (["a.json", "b.json", "-t", "1%", "-t", "2%"], "without a glob given twice"),
        (["a.json", "b.json", "--min-delta", "-3"], "--min-delta must be 0 or more"),
    ],
)
def test_usage_errors_exit_2(cli: Cli, args: list[str], message: str) -> None:
    done = cli("compare", *args)
    assert done.code == 2, done.err
    assert message in done.err and "Traceback" not in done.err


def test_step_summary_gets_the_markdown_appended(
    cli: Cli, regression: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    table = cli("compare", *regression)
    md = cli("compare", *regression, "-f", "md")
    assert table.code == md.code == 3
    assert summary.read_text() == "# earlier step\n" + (md.out + "\n") * 2


@pytest.mark.parametrize("target", ["fifo", "/dev/full", "dir"])
def test_a_step_summary_that_cannot_be_appended_to_is_a_warning_and_never_blocks(
    cli: Cli,
    regression: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    target: str,
) -> None:
    """A FIFO nobody reads blocked compare forever; /dev/full turned a regression's
    exit 3 into 2. The verdict's exit code wins; the summary is one warning line."""
    import os

    if target == "fifo":
        target = str(tmp_path / "fifo")
        os.mkfifo(target)
    elif target == "dir":
        target = str(tmp_path)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", target)
    done = cli("compare", *regression)
    assert done.code == 3, done.err
    warning, error = done.err.splitlines()
    assert warning.startswith(f"icount: warning: cannot append to {target}: ")
    assert warning.endswith("; the summary is not in it")
    assert error.startswith("icount: error: 1 of 3 cells regressed")


def test_output_file_gets_the_format_and_stdout_the_table(
    cli: Cli, regression: tuple[Path, Path], tmp_path: Path
) -> None:
    out = tmp_path / "bench.json"
    done = cli("compare", *regression, "-f", "benchmark-json", "-o", out)
    assert done.code == 3
    assert done.out == cli("compare", *regression).out
    assert out.read_text() == cli("compare", *regression, "-f", "benchmark-json").out
    assert [e["name"] for e in json.loads(out.read_text())] == [
        "c-epoll/plaintext (callgrind)",
        "fib (callgrind)",
        "nginx/plaintext (callgrind)",
    ]


def test_recorded_real_results_compare_to_the_known_cost(cli: Cli) -> None:
    """fixtures/compare/record.sh: two real `icount run` results of loop.c whose
    costs differ by exactly 2 x 15000 instructions (see loop.c)."""
    base, new = FIXTURES / "loop-base.json", FIXTURES / "loop-new.json"
    assert results.load(base).fingerprint == results.load(new).fingerprint
    done = cli("compare", base, new, "-f", "json")
    assert done.code == 3
    (row,) = json.loads(done.out)["cells"]
    assert row["delta"] == 30000
    assert row["verdict"] == "regressed"
    table = cli("compare", base, new, "--width", "100").out
    assert_golden(GOLDEN / "loop-fixtures.txt", table)
    assert cli("compare", base, new, "-t", "2%").code == 0
    assert cli("compare", new, base).code == 0  # the reverse is an improvement


def test_same_file_is_unchanged(cli: Cli) -> None:
    done = cli("compare", FIXTURES / "loop-base.json", FIXTURES / "loop-base.json", "-f", "csv")
    assert done.code == 0
    assert ",0,0.0000,1,unchanged,," in done.out


def test_fingerprint_fixture_matches_conftest_fields() -> None:
    # The fabricated fingerprint carries every field compare checks, so the refusal
    # tests above change one field at a time rather than everything at once.
    from icount.environment import COUNT_MOVING_FIELDS

    assert set(COUNT_MOVING_FIELDS) <= set(FP)


def test_files_with_no_common_cell_fail_with_a_hint(cli: Cli, write: Write) -> None:
    # `icount run -- ./fa` and `-- ./fb` name their cells fa and fb: nothing matches.
    base = write("a.json", res(cell("fa", [100, 100, 100])))
    new = write("b.json", res(cell("fb", [100, 100, 100])))
    done = cli("compare", base, new)
    assert done.code == 5
    assert "no cell of the base matches a cell of the new file" in done.err
    assert "--name" in done.err
    allowed = cli("compare", base, new, "--allow-no-match")
    assert allowed.code == 0
    assert allowed.err.startswith("icount: warning: no cell of the base matches")
