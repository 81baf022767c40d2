"""scripts/lifetime_reference.py refuses a pair of lives it cannot subtract before it
builds or runs anything (each life is minutes under callgrind)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "lifetime_reference.py"


@pytest.mark.parametrize(("n1", "n2"), [("5", "5"), ("10", "3"), ("-1", "20")])
def test_lives_that_cannot_be_subtracted_are_refused_first(n1: str, n2: str) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "no-such-target", "--n1", n1, "--n2", n2],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith(f"error: --n2 must be more than --n1 (0 or more), got --n1 {n1} --n2 {n2}")
    )
    assert "Traceback" not in done.stderr
