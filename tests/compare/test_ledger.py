"""The ledger (--ledger FILE.md --note TEXT [--rejected]) and the geometric mean of a
comparison's changes."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from icount.compare import geomean
from icount.compare.model import compare
from icount.compare.thresholds import parse_thresholds
from icount.errors import ExitCode
from icount.results import UNIT_INSTRUCTIONS, Cell, Results, Run
from tests.support.cli import run_icount_here
from tests.support.golden import assert_golden

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "compare"
GOLDEN = Path(__file__).resolve().parent / "golden"
BASE_COMMIT, NEW_COMMIT = "a" * 40, "b" * 40


def _results(values: dict[str, float]) -> Results:
    return Results({}, tuple(
        Cell(n, "", "callgrind", UNIT_INSTRUCTIONS, (Run(v, True),), {}, 1, 0.01)
        for n, v in values.items()
    ))  # fmt: skip


def test_the_geometric_mean_of_2x_faster_and_2x_slower_is_no_change() -> None:
    c = compare(_results({"a": 100, "b": 100, "c": 50}), _results({"a": 200, "b": 50}),
                parse_thresholds([], 10))  # fmt: skip
    g = geomean.of(c)
    assert g is not None and g.cells == 2
    assert g.ratio == pytest.approx(1.0, abs=1e-12)
    assert geomean.line(c) == "geometric mean of new/base over 2 cells: 1.0000 (0.00%)"


def _inputs(folder: Path) -> None:
    for name, commit in (("loop-base", BASE_COMMIT), ("loop-new", NEW_COMMIT)):
        shutil.copy(FIXTURES / f"{name}.json", folder / f"{name}.json")
        prov = {"format": "icount-provenance", "version": 1, "commit": commit}
        (folder / f"{name}.provenance.json").write_text(json.dumps(prov))


def test_a_ledger_entry_per_change_kept_or_rejected(tmp_path: Path) -> None:
    _inputs(tmp_path)
    env = {**os.environ, "SOURCE_DATE_EPOCH": "1764547200"}  # 2025-12-01
    args = ["compare", "loop-base.json", "loop-new.json", "--ledger", "LEDGER.md", "-q"]
    kept = run_icount_here([*args, "--note", "unroll the loop by 4"], tmp_path, env)
    assert kept.returncode == ExitCode.REGRESSION, kept.stderr  # the gate is as ever
    rejected = run_icount_here(
        [*args, "--note", "a lookup table", "--rejected", "-t", "5%"], tmp_path, env
    )
    assert rejected.returncode == ExitCode.OK, rejected.stderr
    assert_golden(GOLDEN / "ledger.md", (tmp_path / "LEDGER.md").read_text())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ledger", "L.md"], "--ledger needs --note TEXT"),
        (["--note", "x"], "--note and --rejected describe a --ledger entry"),
        (["--ledger", "L.md", "--note", " "], "--ledger needs --note TEXT"),
    ],
)
def test_a_ledger_option_without_its_partner_is_one_line(
    tmp_path: Path, args: list[str], message: str
) -> None:
    _inputs(tmp_path)
    done = run_icount_here(["compare", "loop-base.json", "loop-new.json", *args], tmp_path)
    assert done.returncode == ExitCode.USAGE
    assert done.stderr.startswith(f"icount: error: {message}")
    assert not (tmp_path / "L.md").exists()
