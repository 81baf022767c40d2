"""The process module: every child in its own session, stopped with its whole group."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from icount import procs
from icount.errors import LaunchError


def test_run_captures_and_reports_signals() -> None:
    done = procs.run(["sh", "-c", "echo out; echo err >&2; kill -SEGV $$"])
    assert done.stdout == b"out\n" and done.stderr == b"err\n"
    assert procs.describe_exit(done.returncode) == "killed by SIGSEGV"
    assert procs.describe_exit(3) == "exited with status 3"


def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    done = procs.run(["sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"], timeout=0.5)
    assert done.timed_out
    grandchild = int(pidfile.read_text())
    assert not psutil.pid_exists(grandchild) or psutil.Process(grandchild).status() == "zombie"


def test_stop_reaches_descendants_that_left_the_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    child = procs.spawn(["sh", "-c", f"setsid sleep 60 & echo $! > {pidfile}; wait"])
    deadline = time.monotonic() + 5
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    escaped = int(pidfile.read_text())
    # `setsid` may not have run yet when the shell wrote the pid: wait until it has.
    while os.getpgid(escaped) == child.pid:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    child.stop(grace_s=1)
    time.sleep(0.1)
    assert not psutil.pid_exists(escaped) or psutil.Process(escaped).status() == "zombie"
    assert child.pid not in {c.pid for c in procs.live()}


def test_exception_inside_block_stops_children() -> None:
    with pytest.raises(KeyboardInterrupt), procs.all_reaped():
        child = procs.spawn(["sleep", "60"])
        raise KeyboardInterrupt
    assert child.popen.returncode == -signal.SIGTERM


def test_cpu_pinning() -> None:
    cpu = min(os.sched_getaffinity(0))
    done = procs.run(["sh", "-c", "grep Cpus_allowed_list /proc/self/status"], cpus=[cpu])
    assert done.stdout.decode().split()[-1] == str(cpu)


def test_missing_program(tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match="command not found: no-such-xyz"):
        procs.spawn(["no-such-xyz"])
    data = tmp_path / "data.txt"
    data.write_text("x")
    data.chmod(0o644)
    with pytest.raises(LaunchError, match="not an executable file"):
        procs.resolve_command(str(data))
    with pytest.raises(LaunchError, match="not an executable file"):
        procs.resolve_command(str(tmp_path))
