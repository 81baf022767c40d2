"""End to end under callgrind: two builds of fixtures/compare/loop.c whose costs differ
by a known number of instructions (2 per loop iteration), measured by `icount run`
and by `icount compare --interleave`, must compare to exactly that difference."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOOP_C = ROOT / "fixtures" / "compare" / "loop.c"
N_BASE, N_NEW = 1_000_000, 1_015_000
KNOWN_DELTA = 2 * (N_NEW - N_BASE)

pytestmark = pytest.mark.slow


def icount(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "icount", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def loops(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    for tool in ("gcc", "valgrind"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (scripts/setup.sh installs it)")
    if platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip(
            f"loop.c counts its loop in x86-64 or AArch64 assembly; this is {platform.machine()}"
        )
    d = tmp_path_factory.mktemp("loops")
    # Same-length names: argv[0] is copied and measured too.
    for name, n in (("base", N_BASE), ("newp", N_NEW)):
        subprocess.run(["gcc", "-O2", f"-DN={n}", "-o", str(d / name), str(LOOP_C)], check=True)
    return d / "base", d / "newp"


def test_two_icount_run_results_compare_to_the_known_delta(
    loops: tuple[Path, Path], tmp_path: Path
) -> None:
    base, new = loops
    for exe, out in ((base, "base.json"), (new, "new.json")):
        done = icount("run", "-q", "--backend", "callgrind", "--runs", "2", "--name", "loop",
                      "-o", tmp_path / out, "--", exe, cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
    done = icount("compare", "base.json", "new.json", "-f", "json", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    (row,) = json.loads(done.stdout)["cells"]
    assert row["delta"] == KNOWN_DELTA
    assert row["verdict"] == "regressed"
    # The start-up both share is what the loop adds to: delta% = delta / base median.
    assert row["delta_pct"] == pytest.approx(KNOWN_DELTA / row["base"]["median"])
    assert icount("compare", "base.json", "new.json", "-t", "2%", cwd=tmp_path).returncode == 0
    assert icount("compare", "new.json", "base.json", cwd=tmp_path).returncode == 0


def test_interleave_reports_each_pair_and_gates_on_the_median_ratio(
    loops: tuple[Path, Path], tmp_path: Path
) -> None:
    base, new = loops
    done = icount("compare", "--interleave", "--backend", "callgrind", "--base-cmd", str(base),
                  "--new-cmd", str(new), "--pairs", "2", "--name", "loop", "-q", "-f", "json",
                  cwd=tmp_path)  # fmt: skip
    assert done.returncode == 3, done.stderr
    doc = json.loads(done.stdout)
    assert doc["mode"] == "interleave"
    assert len(doc["pairs"]) == 2
    for pair in doc["pairs"]:
        assert pair["new"] - pair["base"] == KNOWN_DELTA
        assert pair["ratio"] == pytest.approx(pair["new"] / pair["base"])
    (row,) = doc["cells"]
    assert row["verdict"] == "regressed"
    assert row["delta"] == KNOWN_DELTA
    assert doc["median_ratio"] == pytest.approx(1 + row["delta_pct"])
    failing = icount("compare", "--interleave", "--backend", "callgrind", "--base-cmd", str(base),
                     "--new-cmd", "false", "--pairs", "3", "-q", cwd=tmp_path)  # fmt: skip
    assert failing.returncode == 5
    assert "invalid in new" in failing.stdout
    assert "new run 1: exited with status 1" in failing.stdout
