"""run_icount_here's time limit (tests/support/cli.py): a command run in pytest's own
process that does not return (a refusal that regressed into a session whose server
runs on) fails its test instead of hanging the worker, as run_icount's timeout did in
a process of its own; and the limit is gone when the call returns."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest

import icount.cli
from tests.support import cli
from tests.support.cli import RanTooLong, icount_here, run_icount_here


def hangs() -> None:
    threading.Event().wait(30)  # a session whose server never stops: the alarm ends it


def test_a_command_that_never_returns_fails_at_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(icount.cli, "main", hangs)
    monkeypatch.setattr(cli, "HERE_TIMEOUT_S", 0.05)
    with pytest.raises(RanTooLong, match=r"icount report x ran past 0\.05 s"):
        run_icount_here(["report", "x"], cwd=tmp_path)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_the_icount_fixtures_timeout_is_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(icount.cli, "main", hangs)
    with pytest.raises(RanTooLong, match=r"ran past 0\.05 s"):
        icount_here("report", "x", cwd=tmp_path, timeout=0.05)


def test_a_command_that_returns_leaves_no_alarm_behind(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGALRM)
    done = run_icount_here(["--version"], cwd=tmp_path)
    assert done.returncode == 0
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is before
