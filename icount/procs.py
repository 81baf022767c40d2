"""The one place where icount launches and reaps processes.

Every child runs in its own session (so its whole process group can be signalled),
optionally pinned to a CPU set, with its output sent to files or pipes, never to
icount's terminal. Every child is tracked until reaped: on timeout, on any exception
and on Ctrl-C the group gets SIGTERM, then SIGKILL after a grace period, and any
descendants that escaped the group (psutil finds them) are killed as well.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import psutil

from icount.errors import LaunchError, ToolMissingError, UsageError

_LIVE: dict[int, Child] = {}

DEFAULT_GRACE_S = 5.0


def which(name: str) -> str | None:
    return shutil.which(name)


def require(name: str, remedy: str) -> str:
    """Path of program `name`, or ToolMissingError naming the remedy."""
    path = shutil.which(name)
    if path is None:
        raise ToolMissingError(f"{name} not found on PATH", program=name, hint=remedy)
    return path


def resolve_command(name: str) -> str:
    """Absolute path of a program, found on the caller's PATH.

    Measured programs run with a fixed PATH, so they are resolved first, here,
    where the user's PATH applies.
    """
    if "/" in name:
        path = Path(name).absolute()
        if not path.exists():
            raise LaunchError(f"command not found: {name}", program=name)
        if path.is_dir() or not os.access(path, os.X_OK):
            raise LaunchError(f"not an executable file: {name}", program=name)
        return str(path)
    found = shutil.which(name)
    if found is None:
        raise LaunchError(
            f"command not found: {name}", program=name, hint="check the name and your PATH"
        )
    return found


def signal_name(returncode: int) -> str | None:
    """'SIGSEGV' for a child killed by a signal (negative return code)."""
    if returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def exit_reason(returncode: int, stderr_file: Path) -> str:
    """'killed by SIGSEGV; last stderr line: ...': how a child ended, with its last words."""
    text = describe_exit(returncode)
    try:
        lines = stderr_file.read_text(errors="replace").strip().splitlines()
    except OSError:
        lines = []
    if lines:
        text += f"; last stderr line: {lines[-1][:200]}"
    return text


def describe_exit(returncode: int) -> str:
    sig = signal_name(returncode)
    if sig is not None:
        return f"killed by {sig}"
    return f"exited with status {returncode}"


def _preexec(cpus: frozenset[int] | None) -> None:
    if cpus:
        os.sched_setaffinity(0, cpus)


class Child:
    """A started process in its own session. Use as a context manager."""

    def __init__(self, popen: subprocess.Popen[bytes], argv: Sequence[str]) -> None:
        self.popen = popen
        self.argv = list(argv)
        self.pid = popen.pid
        _LIVE[self.pid] = self

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def poll(self) -> int | None:
        rc = self.popen.poll()
        if rc is not None:
            self._reap_group()
        return rc

    def wait(self, timeout: float | None = None) -> int:
        """Return code; TimeoutExpired propagates (the child keeps running)."""
        rc = self.popen.wait(timeout)
        self._reap_group()
        return rc

    def send_signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def stop(self, grace_s: float = DEFAULT_GRACE_S, sig: int = signal.SIGTERM) -> int:
        """Signal the group, wait up to `grace_s`, then SIGKILL. Returns the return code."""
        escaped = self._descendants()
        if self.popen.poll() is None:
            self.send_signal(sig)
            try:
                self.popen.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.send_signal(signal.SIGKILL)
                self.popen.wait()
        self._reap_group()
        for proc in escaped:  # descendants that left the group (setsid daemons)
            with contextlib.suppress(psutil.Error):
                proc.kill()
        rc = self.popen.returncode
        assert rc is not None
        return rc

    def _descendants(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            return []

    def _reap_group(self) -> None:
        # The leader is gone; members of its group (forked workers) may not be.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        _LIVE.pop(self.pid, None)


def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    stdout: Path | int | IO[bytes] | None = subprocess.DEVNULL,
    stderr: Path | int | IO[bytes] | None = subprocess.DEVNULL,
    stdin: int | None = subprocess.DEVNULL,
    cpus: Sequence[int] | None = None,
) -> Child:
    """Start `argv` in a new session. Paths given for stdout/stderr are created."""
    if not argv:
        raise UsageError("empty command")
    exe = argv[0]
    if os.sep not in exe and shutil.which(exe, path=(env or os.environ).get("PATH")) is None:
        raise LaunchError(f"command not found: {exe}", program=exe, hint="check the name and PATH")
    pinned = frozenset(cpus) if cpus else None
    with contextlib.ExitStack() as files:
        out = files.enter_context(open(stdout, "wb")) if isinstance(stdout, Path) else stdout
        err = files.enter_context(open(stderr, "wb")) if isinstance(stderr, Path) else stderr
        try:
            popen = subprocess.Popen(
                list(argv),
                env=dict(env) if env is not None else None,
                cwd=cwd,
                stdin=stdin,
                stdout=out,
                stderr=err,
                start_new_session=True,
                preexec_fn=(lambda: _preexec(pinned)) if pinned else None,
            )
        except FileNotFoundError as e:
            raise LaunchError(f"command not found: {exe}", program=exe) from e
        except PermissionError as e:
            raise LaunchError(f"command not executable: {exe}", program=exe) from e
        except OSError as e:  # e.g. ENOEXEC, or a CPU set the kernel refuses in preexec
            raise LaunchError(f"cannot start {exe}: {e.strerror or e}", program=exe) from e
    return Child(popen, argv)


@dataclass(frozen=True)
class Completed:
    argv: list[str]
    returncode: int
    stdout: bytes
    stderr: bytes
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float | None = None,
    cpus: Sequence[int] | None = None,
    stdout: Path | None = None,
    stderr: Path | None = None,
    input_bytes: bytes | None = None,
) -> Completed:
    """Run to completion in a new session; output captured to memory or to files.

    On timeout the group is killed and `timed_out` is set; on any exception
    (KeyboardInterrupt included) the group is killed before it propagates.
    """
    out: Path | int = stdout if stdout is not None else subprocess.PIPE
    err: Path | int = stderr if stderr is not None else subprocess.PIPE
    child = spawn(
        argv,
        env=env,
        cwd=cwd,
        stdout=out,
        stderr=err,
        stdin=subprocess.PIPE if input_bytes is not None else subprocess.DEVNULL,
        cpus=cpus,
    )
    timed_out = False
    try:
        try:
            o, e = child.popen.communicate(input_bytes, timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            child.stop(grace_s=1.0, sig=signal.SIGKILL)
            o, e = child.popen.communicate()
    except BaseException:
        child.stop(grace_s=1.0)
        raise
    child._reap_group()
    return Completed(list(argv), child.popen.returncode, o or b"", e or b"", timed_out)


def capture(argv: Sequence[str], timeout: float = 30.0) -> str | None:
    """stdout+stderr of a short informational command, or None if it cannot run."""
    try:
        done = run(argv, timeout=timeout, env={**os.environ, "LC_ALL": "C"})
    except LaunchError:
        return None
    if done.timed_out:
        return None
    return (done.stdout + done.stderr).decode("utf-8", "replace")


def live() -> list[Child]:
    return list(_LIVE.values())


def kill_all(grace_s: float = 2.0) -> None:
    """Stop every child still tracked (and their descendants)."""
    for child in list(_LIVE.values()):
        child.stop(grace_s=grace_s)


@contextlib.contextmanager
def all_reaped() -> Iterator[None]:
    """Run a block; whatever happens, no child of icount outlives it."""
    try:
        yield
    finally:
        kill_all()


def wait_until(predicate: Callable[[], object], timeout: float, interval: float = 0.05) -> bool:
    """Poll `predicate` until it returns something true or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


atexit.register(kill_all)
