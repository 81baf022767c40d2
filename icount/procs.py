"""The one place where icount launches and reaps processes.

Every child runs in its own session (so its whole process group can be signalled),
optionally pinned to a CPU set, with its output sent to files or pipes, never to
icount's terminal. Every child is tracked until reaped: on timeout, on any exception
and on Ctrl-C the group gets SIGTERM, then SIGKILL after a grace period, and any
descendants that escaped the group (psutil finds them) are killed as well.

A process that leaves its session and is orphaned (a daemon's double fork, `setsid
cmd &` in a script) would be re-parented to init and escape all that: icount makes
itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so such orphans become
icount's own children, where `adopted()` finds them until they are stopped and
reaped: any child of icount's process that icount did not start itself is one, except
the children the process already had when icount's command began (`not_ours`): icount
called inside a host process (the test suite calling its entry point, with a browser it
started) must not stop the host's own children. This assumes no other code starts
processes in icount's process while a command runs.

An orphan no longer says whose it was. It belongs to the child icount started before
it was born whose working directory it still has, else to the last child started
before it was born (to the clock tick, as the kernel records both), among the children
that may start processes: commands started with `leaf=True` (vgdb) start none, so a
server's daemon, orphaned while a vgdb talks to the server, stays the server's however
the two interleave.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import itertools
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import psutil

from icount.errors import LaunchError, ToolMissingError, UsageError

_LIVE: dict[int, Child] = {}
_SUBREAPER: list[bool] = []  # set once: [True] when the prctl succeeded
# Held from fork to registration in _LIVE, and while adopted() scans: with --jobs one
# thread starts a process while another looks for orphans, which must not take the
# new child, not yet registered, for one.
_REGISTRY_LOCK = threading.RLock()
_STOPPING: list[bool] = []  # [True] while kill_all runs
# (pid, creation time) of children the process had before a command began: the host's
_FOREIGN: set[tuple[int, float]] = set()
_SEQ = itertools.count()
_HURRY = threading.local()  # .on: stops in this thread are hurried (see hurried())

DEFAULT_GRACE_S = 5.0
HURRY_GRACE_S = 2.0  # the grace of every stop inside `hurried()`
PIPE_GRACE_S = 5.0  # how long output pipes may stay open after a command exited
PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> None:
    if _SUBREAPER:
        return
    ok = False
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        ok = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    _SUBREAPER.append(ok)


def adopted(since: float = 0.0) -> list[psutil.Process]:
    """Orphans of icount's children re-parented to icount (see the module docstring),
    started at `since` (a `Child.started`) or later; exited ones are reaped on the way."""
    return [p for p, created in _orphans() if created >= since]


def adopted_by(child: Child) -> list[psutil.Process]:
    """The orphans that are `child`'s (see the module docstring), `child` itself aside."""
    with _REGISTRY_LOCK:
        starters = sorted(
            {c.pid: c for c in [*_LIVE.values(), child] if not c.leaf}.values(),
            key=lambda c: (c.started, c.seq),
        )
    found = []
    for proc, created in _orphans():
        if proc.pid != child.pid and _owner(proc, created, starters) is child:
            found.append(proc)
    return found


def _owner(proc: psutil.Process, created: float, starters: Sequence[Child]) -> Child | None:
    """Whose orphan `proc` is: of the children started before it was born, the one whose
    working directory it still has (each cell runs in a work dir of its own, so with
    --jobs a command's orphan born after another job's command started stays its own),
    else the last one started."""
    candidates = [c for c in starters if c.started <= created]
    if not candidates:
        return None
    try:
        where = proc.cwd()
    except psutil.Error:  # exited, or not ours to read
        where = None
    same = [c for c in candidates if where is not None and c.cwd == where]
    if len(same) == 1:
        return same[0]
    # birth times are clock ticks (10 ms): a child started in the orphan's own tick may
    # have started after it (a short command run just after a server's daemon was born),
    # so the last one started in an earlier tick is the better guess, where there is one
    pool = same or candidates
    earlier = [c for c in pool if c.started < created]
    return earlier[-1] if earlier else pool[0]


def not_ours() -> None:
    """Take the children this process has now, that icount did not start, for the host's:
    never adopted orphans (called as a command begins)."""
    with _REGISTRY_LOCK:
        try:
            kids = psutil.Process().children()
        except psutil.Error:
            return
        for proc in kids:
            if proc.pid not in _LIVE:
                with contextlib.suppress(psutil.Error):
                    _FOREIGN.add((proc.pid, proc.create_time()))


def _orphans() -> list[tuple[psutil.Process, float]]:
    """Every live orphan icount adopted, with its creation time; zombies are reaped."""
    found: list[tuple[psutil.Process, float]] = []
    with _REGISTRY_LOCK:
        try:
            kids = psutil.Process().children()
        except psutil.Error:
            return found
        kids = [p for p in kids if p.pid not in _LIVE]
    for proc in kids:
        try:
            created = proc.create_time()
            zombie = proc.status() == psutil.STATUS_ZOMBIE
        except psutil.Error:
            continue
        if (proc.pid, created) in _FOREIGN:
            continue
        if zombie:
            _reap(proc.pid)
        else:
            found.append((proc, created))
    return found


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def describe(procs: Sequence[psutil.Process]) -> str:
    """'1234 (sleep 3013), 1240 (nginx: worker)': processes as a user recognises them."""
    parts = []
    for p in procs:
        try:
            argv = p.cmdline() or [p.name()]
        except psutil.Error:
            argv = ["?"]
        if Path(argv[0]).name.startswith("valgrind"):  # name the program, not valgrind
            first = next((i for i, a in enumerate(argv) if i and not a.startswith("-")), None)
            argv = argv[first:] if first is not None else argv
        parts.append(f"{p.pid} ({' '.join(argv)[:60]})")
    return ", ".join(parts)


def stop_processes(procs: Sequence[psutil.Process], grace_s: float) -> None:
    """SIGTERM, then SIGKILL after `grace_s`, and reap those that are icount's children."""
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, alive = psutil.wait_procs(list(procs), timeout=grace_s)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(alive, timeout=grace_s)
    for p in procs:
        _reap(p.pid)


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


SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
# a version manager's shim: `exec "/root/.pyenv/libexec/pyenv" exec "$program" "$@"`
_SHIM_EXEC = re.compile(r'exec\s+"?(\S*?\b(?:pyenv|rbenv|nodenv|goenv|asdf))"?\s+exec\b')
SHIM_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Launcher:
    """A #! script as the kernel runs it: the interpreter's argv (`env NAME` resolved on
    PATH), and the binary that in the end runs the script's work: the interpreter, or
    for a version manager's shim (pyenv's `python3`) the binary the shim execs."""

    interpreter: tuple[str, ...]
    binary: str | None  # None: a shim whose binary its manager would not name
    shim: bool = False


# The kernel follows a #! interpreter that is itself a script a few levels deep, then
# fails with ELOOP; scripts naming each other must not recurse without end here.
MAX_INTERPRETER_DEPTH = 4


def launcher(path: str, depth: int = 0) -> Launcher | None:
    """What the #! script at `path` runs, or None when it is no script."""
    try:
        # O_NONBLOCK: a FIFO named as an interpreter must not block the open
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    with open(fd, "rb") as f:
        try:
            head = f.read(4096) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
        except OSError:
            return None
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    interp, _, arg = line.partition(" ")  # the kernel passes the rest as one argument
    argv = [interp, *([arg.strip()] if arg.strip() else [])]
    if Path(interp).name == "env":  # `env [-S] [NAME=VALUE]... PROGRAM [ARG]...`
        words = arg.split()
        first = next((i for i, w in enumerate(words) if w[:1] != "-" and "=" not in w), None)
        if first is not None:
            argv = [shutil.which(words[first]) or words[first], *words[first + 1 :]]
    text = head.decode("utf-8", "replace")
    shim = _SHIM_EXEC.search(text)
    if shim and Path(argv[0]).name in SHELLS:
        tool = shim.group(1)
        done = capture([tool, "which", Path(path).name], timeout=SHIM_TIMEOUT_S)
        lines = (done or "").strip().splitlines()
        found = lines[-1] if lines and Path(lines[-1]).is_absolute() else None
        return Launcher(tuple(argv), found if found and Path(found).is_file() else None, True)
    nested = argv[0] != path and Path(argv[0]).is_absolute() and depth < MAX_INTERPRETER_DEPTH
    inner = launcher(argv[0], depth + 1) if nested else None
    if inner is not None:  # `#!/usr/bin/env python3`, and python3 a shim
        return Launcher(tuple(argv), inner.binary, inner.shim)
    return Launcher(tuple(argv), argv[0])


def launcher_problem(argv: Sequence[str]) -> str | None:
    """Why `argv` does not start the binary that does its work (a #! script: a console
    script such as gunicorn, a version manager's shim), naming that binary and the argv
    that starts it; None for a binary."""
    found = launcher(argv[0])
    if found is None:
        return None
    rest = shlex.join(argv[1:])
    if found.shim:
        if found.binary is None:
            return (
                f"it is a version manager's shim (a #! {Path(found.interpreter[0]).name} "
                "script), which runs the program it picks unmeasured; give that program's "
                "path instead"
            )
        instead = f"{found.binary} {rest}".strip()
        return f"it is a version manager's shim for {found.binary}; start that: {instead}"
    binary = found.binary or found.interpreter[0]
    instead = shlex.join([binary, *found.interpreter[1:], argv[0]]) + (f" {rest}" if rest else "")
    return (
        f"it is a #! script run by {binary}; start the interpreter with the script as "
        f"its argument: {instead}"
    )


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


def _preexec(cpus: frozenset[int] | None, real_uid: int | None) -> None:
    if cpus:
        os.sched_setaffinity(0, cpus)
    if real_uid is not None:
        # another real uid, root's effective uid (and so its capabilities) kept
        os.setresuid(real_uid, 0, 0)


def _real_dir(cwd: str | Path | None) -> str | None:
    """`cwd` (None: icount's own) resolved; None when icount's own was removed."""
    try:
        return os.path.realpath(cwd if cwd is not None else os.getcwd())
    except OSError:
        return None


class Child:
    """A started process in its own session. Use as a context manager."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        argv: Sequence[str],
        leaf: bool = False,
        cwd: str | Path | None = None,
    ) -> None:
        self.popen = popen
        self.argv = list(argv)
        self.pid = popen.pid
        self.leaf = leaf  # starts no processes, so no orphan is its (vgdb)
        self.cwd = _real_dir(cwd)  # as /proc names it, for whose orphan is whose
        # The kernel's record of its birth, as psutil gives every process's: comparable
        # to an orphan's to the clock tick (time.time() is not: psutil's boot time is
        # whole seconds). The pid is not reaped yet, so it is still this process.
        try:
            self.started = psutil.Process(self.pid).create_time()
        except psutil.Error:
            self.started = time.time() - 1.0
        self.seq = next(_SEQ)  # the order of starts, for two born in one clock tick
        # what the started process left running when it exited, described (set once
        # its exit is seen): a daemon's process, or workers it did not wait for
        self.left_behind: str | None = None
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
        """Signal the group and every descendant, wait up to `grace_s` for all of them
        (a worker under valgrind writes its profile on SIGTERM, after its parent may
        have exited), then SIGKILL what is left. Returns the leader's return code.
        Interrupted while it waits (Ctrl-C), it SIGKILLs them all before it raises."""
        if getattr(_HURRY, "on", False):
            grace_s = min(grace_s, HURRY_GRACE_S)
        deadline = time.monotonic() + grace_s
        others = [*self._descendants(), *adopted_by(self)]
        if self.popen.poll() is None:
            self.send_signal(sig)
        for proc in others:  # descendants outside the group (setsid) get it too
            with contextlib.suppress(psutil.Error):
                proc.send_signal(sig)
        try:
            try:
                self.popen.wait(max(deadline - time.monotonic(), 0))
            except subprocess.TimeoutExpired:
                self.send_signal(signal.SIGKILL)
                self.popen.wait()
            _, alive = psutil.wait_procs(others, timeout=max(deadline - time.monotonic(), 0))
        except BaseException:
            # A server that ignores SIGTERM keeps icount waiting out its grace; what it
            # would write on exit is not wanted once the wait is interrupted.
            self.send_signal(signal.SIGKILL)
            for proc in others:
                with contextlib.suppress(psutil.Error):
                    proc.kill()
            self.popen.wait()
            self._reap_group()
            raise
        for proc in alive:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        self._reap_group()
        for proc in [*others, *adopted_by(self)]:
            with contextlib.suppress(psutil.Error):
                proc.kill()
            _reap(proc.pid)
        rc = self.popen.returncode
        assert rc is not None
        return rc

    def _descendants(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            return []

    def _reap_group(self) -> None:
        # The leader is gone; members of its group (forked workers) may not be, and
        # orphans of it are icount's children now (the subreaper): say which they were.
        if self.pid in _LIVE:
            left = adopted_by(self)
            if left:
                self.left_behind = describe(left)
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
    real_uid: int | None = None,
    leaf: bool = False,
) -> Child:
    """Start `argv` in a new session. Paths given for stdout/stderr are created.
    `real_uid` (root only) runs it with that real uid and root's effective uid.
    `leaf`: a program that starts no processes (see the module docstring)."""
    if not argv:
        raise UsageError("empty command")
    _become_subreaper()
    exe = argv[0]
    if os.sep not in exe and shutil.which(exe, path=(env or os.environ).get("PATH")) is None:
        raise LaunchError(f"command not found: {exe}", program=exe, hint="check the name and PATH")
    pinned = frozenset(cpus) if cpus else None
    with contextlib.ExitStack() as files:
        out = files.enter_context(open(stdout, "wb")) if isinstance(stdout, Path) else stdout
        err = files.enter_context(open(stderr, "wb")) if isinstance(stderr, Path) else stderr
        _REGISTRY_LOCK.acquire()
        try:
            popen = subprocess.Popen(
                list(argv),
                env=dict(env) if env is not None else None,
                cwd=cwd,
                stdin=stdin,
                stdout=out,
                stderr=err,
                start_new_session=True,
                preexec_fn=(
                    (lambda: _preexec(pinned, real_uid)) if pinned or real_uid is not None else None
                ),
            )
        except FileNotFoundError as e:
            raise LaunchError(f"command not found: {exe}", program=exe) from e
        except PermissionError as e:
            raise LaunchError(f"command not executable: {exe}", program=exe) from e
        except OSError as e:  # e.g. ENOEXEC, or a CPU set the kernel refuses in preexec
            raise LaunchError(f"cannot start {exe}: {e.strerror or e}", program=exe) from e
        else:
            return Child(popen, argv, leaf, cwd)
        finally:
            _REGISTRY_LOCK.release()


@dataclass(frozen=True)
class Completed:
    argv: list[str]
    returncode: int
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    # processes the command left running when it exited (then stopped by icount)
    leftovers: str | None = None
    abandoned: bool = False  # stopped because `abandon` said waiting was pointless

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.abandoned


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
    real_uid: int | None = None,
    abandon: Callable[[], bool] | None = None,
    leaf: bool = False,
) -> Completed:
    """Run to completion in a new session; output captured to memory or to files.

    On timeout the group is killed and `timed_out` is set; on any exception
    (KeyboardInterrupt included) the group is killed before it propagates. `abandon`,
    asked about twice a second: true kills the group too and sets `abandoned` (vgdb
    talking to a process that has exited waits for its whole timeout otherwise).
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
        real_uid=real_uid,
        leaf=leaf,
    )
    timed_out = abandoned = False
    leftovers: str | None = None
    deadline = None if timeout is None else time.monotonic() + timeout
    exited_at: float | None = None
    o = e = b""
    try:
        while True:
            left_s = None if deadline is None else max(deadline - time.monotonic(), 0)
            try:
                # Short slices: a process the command left behind may hold its pipes open.
                o, e = child.popen.communicate(input_bytes, timeout=_slice(left_s))
                break
            except subprocess.TimeoutExpired:
                input_bytes = None  # sent with the first slice
                if child.popen.poll() is not None:
                    leftovers = _stop_leftovers(child) or leftovers
                    exited_at = exited_at or time.monotonic()
                    if time.monotonic() - exited_at > PIPE_GRACE_S:
                        break  # something icount cannot see holds the pipes: stop reading
                elif deadline is not None and time.monotonic() >= deadline and not timed_out:
                    timed_out = True
                    child.stop(grace_s=1.0, sig=signal.SIGKILL)
                elif abandon is not None and not (timed_out or abandoned) and abandon():
                    abandoned = True
                    child.stop(grace_s=1.0, sig=signal.SIGKILL)
    except BaseException:
        child.stop(grace_s=1.0)
        raise
    leftovers = _stop_leftovers(child) or leftovers
    rc = child.popen.returncode
    return Completed(list(argv), rc, o or b"", e or b"", timed_out, leftovers, abandoned)


def _slice(left_s: float | None) -> float:
    # never 0: communicate() raises before reading anything when its time is up
    return 0.5 if left_s is None else min(max(left_s, 0.05), 0.5)


def _stop_leftovers(child: Child) -> str | None:
    """Stop whatever `child` started and did not wait for (its own group, and orphans
    that left the session: adopted by icount, the subreaper); say which they were."""
    left = adopted_by(child)
    text = describe(left) if left else None  # while their command lines can be read
    child._reap_group()
    if left:
        stop_processes(left, grace_s=1.0)
    return text


def capture(argv: Sequence[str], timeout: float = 30.0) -> str | None:
    """stdout+stderr of a short informational command, or None if it cannot run."""
    try:
        done = run(argv, timeout=timeout, env={**os.environ, "LC_ALL": "C"})
    except LaunchError:
        return None
    if done.timed_out:
        return None
    return (done.stdout + done.stderr).decode("utf-8", "replace")


@contextlib.contextmanager
def hurried() -> Iterator[None]:
    """Stops made in this block (in this thread) give processes at most HURRY_GRACE_S,
    whatever grace they ask for: the session is being interrupted, and nothing a
    process writes when it is stopped (a profile) is wanted any more."""
    before = getattr(_HURRY, "on", False)
    _HURRY.on = True
    try:
        yield
    finally:
        _HURRY.on = before


def live() -> list[Child]:
    return list(_LIVE.values())


def kill_all(grace_s: float = 2.0) -> None:
    """Stop every child still tracked (and their descendants), and every orphan of
    theirs icount adopted: SIGTERM to all of them at once, one grace period for all,
    then SIGKILL. A call made while another runs (atexit, a signal) returns at once."""
    if _STOPPING:
        return
    _STOPPING.append(True)
    try:
        children = list(_LIVE.values())
        for child in children:
            child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for child in children:
            try:
                child.stop(grace_s=max(deadline - time.monotonic(), 0.0))
            except (OSError, psutil.Error):  # it went away meanwhile; stop the others
                _LIVE.pop(child.pid, None)
        orphans = adopted()
        if orphans:
            stop_processes(orphans, max(deadline - time.monotonic(), 0.5))
    finally:
        _STOPPING.clear()


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
