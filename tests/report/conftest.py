"""Inputs of the report tests: real recordings under fixtures/report/ (see its
record.sh), comparisons made by icount's own compare code, and constructed results
whose numbers are made up to reach every branch of the charts (invalid cells, every
verdict, many cells). Also the CLI in-process and a shared headless Chromium."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from icount import results
from icount.compare import model, render
from icount.compare.thresholds import parse_thresholds
from icount.results import Cell, Results, Run
from icount.results.details import WINDOW_DUMPS, Rep, ServeDetail
from tests.support.cli import run_icount_here
from tests.support.golden import assert_golden

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "report"
COMPARE_FIXTURES = ROOT / "fixtures" / "compare"
GOLDEN = Path(__file__).parent / "golden"

FP: dict[str, Any] = {
    "backend": "callgrind",
    "tool_version": "valgrind 3.19.0",
    "arch": "x86_64",
    "cpu_vendor": "GenuineIntel",
    "cpu_model": "Example CPU family 6 model 85",
    "cpu_flags": ["avx2", "sse2"],
    "glibc": "glibc 2.36",
}


def cell(
    name: str,
    values: Sequence[float],
    path: str = "",
    *,
    unit: str = results.UNIT_PER_REQUEST,
    failed: str | None = None,
    runs_wanted: int | None = None,
    detail: ServeDetail | None = None,
    extra: dict[str, Any] | None = None,
    max_spread: float = 0.01,
) -> Cell:
    runs = [Run(float(v), True, None, detail) for v in values]
    if failed is not None:
        runs.append(Run(None, False, failed, None))
    return Cell(
        name,
        path,
        "callgrind",
        unit,
        tuple(runs),
        {"requests": 1000},
        runs_wanted or len(runs),
        max_spread,
        dict(extra or {}),
    )


def constructed_results() -> Results:
    """Every kind of cell: valid, spread too large, failed run, nothing measured."""
    small = {"binary": "c-epoll", "binary_bytes": 18088, "binary_text_bytes": 3190}
    big = {"binary": "nginx", "binary_bytes": 1264552, "binary_text_bytes": 783455}
    curve = ((1000, 9000.5), (2000, 3400.25), (3000, 3110.0), (4000, 3102.5))
    windows = ServeDetail(WINDOW_DUMPS, 4000, (Rep(3102000, 1000),), warmup_curve=curve)
    return Results(
        FP,
        (
            cell("c-epoll", [3102.2, 3101.9, 3102.5], "plaintext", extra=small, detail=windows),
            cell("c-epoll", [3180.0], "json", failed="status 500, expected 200", extra=small),
            cell("nginx", [13012.4, 13012.1, 13012.9], "plaintext", extra=big),
            cell("nginx", [13240.0, 14900.0, 12100.0], "json", extra=big),
            cell("python-asyncio", [312930.0, 313000.0, 312800.0], "plaintext"),
            Cell(
                "python-asyncio",
                "json",
                "callgrind",
                results.UNIT_PER_REQUEST,
                (),
                {"requests": 1000},
                3,
                0.01,
                {},
                "server exited before it was ready (status 1)",
            ),
        ),
    )


def mixed_comparison_json() -> dict[str, Any]:
    """icount compare's JSON for every verdict, made by icount's compare code."""
    base = Results(
        FP,
        (
            cell("fib", [1000000, 1000010, 1000020]),
            cell("gzip", [5000000, 5000100]),
            cell("json", [80000, 80010]),
            cell("noisy", [20000, 20600, 19500]),
            cell("parse", [45000], failed="exit status 1"),
            cell("gone", [700, 701]),
        ),
    )
    new = Results(
        FP,
        (
            cell("fib", [1030000, 1030010, 1030020]),
            cell("gzip", [4500000, 4500100]),
            cell("json", [80200, 80210]),
            cell("noisy", [20900, 21700, 20100]),
            cell("parse", [45000, 45010]),
            cell("added", [1200, 1201]),
        ),
    )
    limits = parse_thresholds(["2%", "json=0.5%"], 10)
    return render.to_json(model.compare(base, new, limits, []))


def many_cells(n: int) -> Results:
    """n cells, as a large `icount serve` over many targets and paths would write."""
    cells = []
    for i in range(n):
        base = 1000 + (i * 7919) % 90000
        values = [base, base + (i % 5), base - (i % 3)]
        if i % 50 == 7:
            cells.append(cell(f"target-{i // 10:03d}", values[:1], f"path-{i % 10}", failed="boom"))
        else:
            cells.append(cell(f"target-{i // 10:03d}", values, f"path-{i % 10}"))
    return Results(FP, tuple(cells))


def write_results(path: Path, res: Results) -> Path:
    path.write_text(results.results_json(res))
    return path


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """icount in-process (report, compare, table and size only read and write files);
    test_report_golden_and_byte_identical_on_rerun runs it as a user does too."""
    return run_icount_here(args, cwd)


def golden(name: str, text: str) -> None:
    """Compare with tests/report/golden/NAME; ICOUNT_UPDATE_GOLDEN=1 rewrites it."""
    assert_golden(GOLDEN / name, text)


def load_json(path: Path) -> Any:
    return json.loads(path.read_text())


@pytest.fixture(scope="session")
def _browsers() -> Iterator[list[Any]]:
    """The session's headless Chromium (one at a time), closed at the end."""
    held: list[Any] = []
    try:
        yield held
    finally:
        for b in held:
            b.close()


@pytest.fixture
def browser(_browsers: list[Any]) -> Any:
    """One headless Chromium for the session, started again where it died, so that one
    crashed browser fails one test, not every later one (an in-process icount used to
    stop it as an adopted orphan; procs.not_ours fixed that, tests/core/test_procs.py
    holds it). Skips, naming why, where none can run."""
    from .browser import Browser, BrowserError, find_chromium

    if _browsers and _browsers[-1].proc.poll() is None:
        return _browsers[-1]
    binary = find_chromium()
    if binary is None:
        pytest.skip("chromium is not installed (scripts/setup.sh installs Debian's chromium)")
    try:
        b = Browser(binary)
    except (BrowserError, OSError) as e:
        pytest.skip(f"chromium cannot start here: {e}")
    _browsers.append(b)
    return b
