"""The process module: every child in its own session, stopped with its whole group."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
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


def test_abandon_stops_waiting_and_kills_the_whole_group(tmp_path: Path) -> None:
    """What vgdb needs when the process it talks to exits: no wait for the timeout."""
    pidfile = tmp_path / "pid"
    asked: list[float] = []

    def gone() -> bool:
        asked.append(time.monotonic())
        return len(asked) >= 2  # the second question finds it gone

    started = time.monotonic()
    done = procs.run(
        ["sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"], timeout=60, abandon=gone
    )
    assert done.abandoned and not done.timed_out and not done.ok
    assert time.monotonic() - started < 10  # slices of 0.5 s, then the group's stop
    assert len(asked) == 2
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


def _running(marker: str) -> list[int]:
    found = []
    for p in psutil.process_iter(["pid", "cmdline", "status"]):
        if marker in " ".join(p.info["cmdline"] or []) and p.info["status"] != "zombie":
            found.append(p.info["pid"])
    return found


@pytest.mark.parametrize(
    "script",
    [
        "setsid sleep 3013 & sleep 0.3",  # left the session, orphaned when sh exits
        "(setsid sh -c 'sleep 3013 & sleep 0.1' &); sleep 0.5",  # a double fork
        "sleep 3013 & sleep 0.3",  # stayed in the group
    ],
)
def test_processes_a_command_leaves_behind_are_named_and_stopped(script: str) -> None:
    """icount is a child subreaper: an orphan that left the session is re-parented to it
    instead of init, so it is found, stopped and reaped, and the run says so."""
    done = procs.run(["sh", "-c", script], timeout=10)
    assert done.returncode == 0 and not done.timed_out
    assert done.leftovers is not None and "sleep 3013" in done.leftovers, done.leftovers
    assert _running("sleep 3013") == []


def test_a_command_that_waits_for_its_children_leaves_nothing_behind() -> None:
    done = procs.run(["sh", "-c", "sleep 0.1 & wait"], timeout=10)
    assert done.returncode == 0 and done.leftovers is None


def test_a_daemon_whose_starter_exited_is_stopped_with_it() -> None:
    """A server that daemonizes: the started process exits 0, its daemon lives on."""
    child = procs.spawn(["sh", "-c", "setsid sh -c 'exec sleep 3014' & sleep 0.2; exit 0"])
    assert child.wait(10) == 0
    assert procs.wait_until(lambda: _running("sleep 3014"), timeout=5)
    left = procs.adopted(child.started)
    assert [p.pid for p in left] == _running("sleep 3014")
    child.stop(grace_s=2)
    assert _running("sleep 3014") == []
    assert procs.adopted(child.started) == []


def test_a_daemon_orphaned_while_a_leaf_command_runs_stays_its_servers() -> None:
    """A server's started process exits while vgdb (a leaf: it starts no process) talks
    to it: its daemon is the server's, however the exit and the command interleave."""
    server = procs.spawn(["sh", "-c", "setsid sh -c 'exec sleep 3016' & sleep 0.2; exit 0"])
    assert procs.wait_until(lambda: _running("sleep 3016"), timeout=5)
    done = procs.run(["sh", "-c", "sleep 0.4"], leaf=True)  # the starter exits meanwhile
    assert done.leftovers is None
    assert _running("sleep 3016"), "the command's clean-up took the server's daemon"
    assert server.wait(10) == 0
    assert server.left_behind is not None and "sleep 3016" in server.left_behind
    server.stop(grace_s=2)
    assert _running("sleep 3016") == []


def test_an_orphan_born_before_a_command_started_is_not_the_commands() -> None:
    server = procs.spawn(["sh", "-c", "setsid sh -c 'exec sleep 3017' & exit 0"])
    assert procs.wait_until(lambda: _running("sleep 3017"), timeout=5)
    assert procs.wait_until(lambda: server.popen.poll() is not None, timeout=5)
    done = procs.run(["sh", "-c", "exit 0"])  # may start processes, but started later
    assert done.leftovers is None and _running("sleep 3017")
    assert server.poll() == 0
    assert "sleep 3017" in (server.left_behind or "")
    server.stop(grace_s=2)
    assert _running("sleep 3017") == []


def test_an_orphan_born_after_another_job_started_stays_its_commands(tmp_path: Path) -> None:
    """--jobs 2: a command that leaves a process running, orphaned after the other
    job's command started, was taken for the other command's leftover (the last one
    started before it was born): the wrong cell invalid, the right one valid. It still
    runs in its command's work dir."""
    first, second = tmp_path / "job1", tmp_path / "job2"
    first.mkdir()
    second.mkdir()
    a = procs.spawn(["sh", "-c", "read go; setsid sleep 3019 & exit 0"], cwd=first,
                    stdin=subprocess.PIPE)  # fmt: skip
    b = procs.spawn(["sh", "-c", "read go"], cwd=second, stdin=subprocess.PIPE)
    assert a.popen.stdin is not None and b.popen.stdin is not None
    a.popen.stdin.write(b"go\n")
    a.popen.stdin.close()  # a starts its orphan now, after b started
    assert a.popen.wait(10) == 0  # a exited; both still registered, as procs.run sees them
    assert procs.wait_until(lambda: _running("sleep 3019"), timeout=5)
    assert [p.pid for p in procs.adopted_by(b)] == []
    assert [p.pid for p in procs.adopted_by(a)] == _running("sleep 3019")
    assert a.wait(10) == 0 and "sleep 3019" in (a.left_behind or "")
    a.stop(grace_s=2)  # as procs.run stops a command's leftovers when it exits
    assert _running("sleep 3019") == []
    b.popen.stdin.write(b"go\n")
    b.popen.stdin.close()
    assert b.wait(10) == 0 and b.left_behind is None
    b.stop(grace_s=2)


def _ignores_sigterm(marker: str) -> procs.Child:
    child = procs.spawn(["sh", "-c", f"trap '' TERM; echo up; exec sleep {marker}"],
                        stdout=subprocess.PIPE)  # fmt: skip
    assert child.popen.stdout is not None and child.popen.stdout.readline() == b"up\n"
    return child


def test_a_stop_interrupted_by_ctrl_c_kills_before_it_raises() -> None:
    """Ctrl-C while icount waits out the grace of a server that ignores SIGTERM: the
    server must not outlive the wait that was interrupted."""
    child = _ignores_sigterm("3018")

    def ctrl_c(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGALRM, ctrl_c)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            child.stop(grace_s=60)
        assert time.monotonic() - t0 < 10
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    assert child.popen.returncode == -signal.SIGKILL
    assert _running("sleep 3018") == []


def test_stops_in_a_hurry_keep_a_short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procs, "HURRY_GRACE_S", 0.2)
    child = _ignores_sigterm("3019")
    t0 = time.monotonic()
    with procs.hurried():
        assert child.stop(grace_s=60) == -signal.SIGKILL
    assert time.monotonic() - t0 < 10
    assert not getattr(procs._HURRY, "on", False)  # only inside the block


def test_kill_all_stops_adopted_orphans_too() -> None:
    done = procs.spawn(["sh", "-c", "setsid sleep 3015 & sleep 0.2; exit 0"])
    done.wait(10)
    assert procs.wait_until(lambda: _running("sleep 3015"), timeout=5)
    procs.kill_all()
    assert _running("sleep 3015") == []


def test_icount_called_inside_a_host_leaves_the_hosts_children_alone() -> None:
    """The test suite calls icount's entry point in its own process, with a browser it
    started: an icount command ending in an error (which stops every process icount
    started) stopped the browser as an adopted orphan. The host's children from before
    the command are not icount's; an orphan adopted during it still is."""
    from tests.support.cli import run_icount_here

    host = subprocess.Popen(["sleep", "3016"], start_new_session=True)
    try:
        done = run_icount_here(["table", "/nonexistent/results.json"])
        assert done.returncode != 0 and "error" in done.stderr
        assert host.poll() is None, "icount stopped a process its host started"
        orphan = procs.spawn(["sh", "-c", "setsid sleep 3017 & sleep 0.2; exit 0"])
        orphan.wait(10)
        assert procs.wait_until(lambda: _running("sleep 3017"), timeout=5)
        procs.kill_all()
        assert _running("sleep 3017") == []
        assert host.poll() is None
    finally:
        host.kill()
        host.wait()


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_a_console_script_names_its_interpreter_and_how_to_start_it(tmp_path: Path) -> None:
    """pip's console scripts (gunicorn) start with their interpreter's #! line."""
    python = os.path.realpath("/bin/sh")  # any binary stands for the interpreter
    gunicorn = _script(tmp_path / "gunicorn", f"#!{python}\nimport sys\n")
    found = procs.launcher(str(gunicorn))
    assert found == procs.Launcher((python,), python)
    assert procs.launcher_problem([str(gunicorn), "app:app", "-b", "127.0.0.1:{port}"]) == (
        f"it is a #! script run by {python}; start the interpreter with the script as its "
        f"argument: {python} {gunicorn} app:app -b '127.0.0.1:{{port}}'"
    )
    assert procs.launcher("/bin/sh") is None and procs.launcher_problem(["/bin/sh"]) is None
    assert procs.launcher(str(tmp_path / "missing")) is None


def test_env_in_the_hash_bang_line_is_resolved_on_path(tmp_path: Path) -> None:
    script = _script(tmp_path / "serve", "#!/usr/bin/env -S sh -e\necho hi\n")
    sh = shutil.which("sh")
    assert procs.launcher(str(script)) == procs.Launcher((str(sh), "-e"), sh)


def test_a_version_managers_shim_names_the_binary_it_would_exec(tmp_path: Path) -> None:
    """pyenv's python3 is a bash script that execs what `pyenv which python3` names."""
    real = os.path.realpath(sys.executable)
    tool = _script(tmp_path / "pyenv", f'#!/bin/sh\n[ "$1 $2" = "which python3" ] && echo {real}\n')
    shims = tmp_path / "shims"
    shims.mkdir()
    shim = _script(shims / "python3",
                   f'#!/usr/bin/env bash\nexec "{tool}" exec "$program" "$@"\n')  # fmt: skip
    found = procs.launcher(str(shim))
    assert found is not None and found.shim and found.binary == real
    assert procs.launcher_problem([str(shim), "app.py"]) == (
        f"it is a version manager's shim for {real}; start that: {real} app.py"
    )
    # a console script whose #! interpreter is the shim: the binary is the shim's
    tool_script = _script(tmp_path / "uvicorn", f"#!{shim}\nimport sys\n")
    inner = procs.launcher(str(tool_script))
    assert inner is not None and inner.binary == real
    lost = _script(shims / "python9", f'#!/usr/bin/env bash\nexec "{tool}" exec "$program"\n')
    assert procs.launcher_problem([str(lost)]) == (
        "it is a version manager's shim (a #! bash script), which runs the program it "
        "picks unmeasured; give that program's path instead"
    )


def test_scripts_naming_each_other_as_interpreter_do_not_recurse_without_end(
    tmp_path: Path,
) -> None:
    """The kernel gives up after a few levels (ELOOP); launcher() recursed until
    RecursionError, an internal error of icount serve."""
    a, b = tmp_path / "a", tmp_path / "b"
    _script(a, f"#!{b}\n")
    _script(b, f"#!{a}\n")
    found = procs.launcher(str(a))
    assert found is not None and found.interpreter == (str(b),)
    assert procs.launcher_problem([str(a)]) is not None


def test_a_fifo_named_as_interpreter_is_not_read(tmp_path: Path) -> None:
    """Opening a FIFO nobody writes blocks; it is no script either."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    script = _script(tmp_path / "serve", f"#!{fifo}\n")
    assert procs.launcher(str(fifo)) is None
    assert procs.launcher(str(script)) == procs.Launcher((str(fifo),), str(fifo))


def test_a_command_starts_from_a_working_directory_that_was_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each child notes its working directory (whose orphans are whose); icount's own,
    removed under it, must not make starting one fail."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    done = procs.run(["/bin/sh", "-c", "exit 0"], cwd=tmp_path, timeout=10)
    assert done.returncode == 0
    child = procs.spawn(["/bin/sh", "-c", "exit 0"])
    assert child.wait(10) == 0 and child.cwd is None


def test_an_orphan_born_in_the_tick_a_command_started_is_the_earlier_childs() -> None:
    """Birth times are clock ticks: a short command started just after a server's orphan
    was born can share its tick (this test's neighbour above failed 2 runs in 12 so)."""
    from types import SimpleNamespace
    from typing import Any, cast

    orphan = cast(Any, SimpleNamespace(cwd=lambda: "/w"))
    server = cast(Any, SimpleNamespace(started=10.00, cwd="/w"))
    command = cast(Any, SimpleNamespace(started=10.01, cwd="/w"))
    assert procs._owner(orphan, 10.01, [server, command]) is server
    # one child in a working directory of its own is the owner whenever it started
    mine = cast(Any, SimpleNamespace(started=10.01, cwd="/w"))
    other = cast(Any, SimpleNamespace(started=10.00, cwd="/elsewhere"))
    assert procs._owner(orphan, 10.01, [other, mine]) is mine
    # born in the tick of the only child started by then: that child's
    assert procs._owner(orphan, 10.01, [command]) is command
    early = cast(Any, SimpleNamespace(started=10.00, cwd="/w"))
    assert procs._owner(orphan, 9.99, [early]) is None  # born before any child started
