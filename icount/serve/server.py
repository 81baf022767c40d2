"""One server process of a cell: started under a backend, ready, answering correctly,
and stopped whatever happens.

The server starts in its own session, pinned to the server CPUs, in icount's cleared
environment (plus the adapter's), ASLR off, with `LD_BIND_NOW=1`: a lazy symbol binding
costs hundreds of instructions once, in whichever window first calls the symbol.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from icount import environment, procs
from icount.backends.protocol import ServerProcess, ServerStarter
from icount.errors import LaunchError, ParseError, RunFailedError
from icount.serve.adapter import Adapter, Expect, PathSpec

HOST = "127.0.0.1"
READY_POLL_S = 0.1
EXIT_WAIT_S = 3.0
# starts of a server whose port another process took between free_port() and its bind
PORT_TRIES = 3

Note = Callable[[str], None]
S = TypeVar("S", bound=ServerProcess)  # what the backend starts: counted in windows, or not


class RunInvalid(Exception):
    """Ends a run: it produced no value, for the reason given (the cell's reason)."""


@dataclass(frozen=True)
class Target:
    """An adapter and the folder it is built in."""

    adapter: Adapter
    build_dir: Path


_RECENT_PORTS: collections.deque[int] = collections.deque(maxlen=1024)
_PORT_LOCK = threading.Lock()


def free_port() -> int:
    """A port nothing listens on, and not one handed out lately: with --jobs, servers
    start at once in several threads, and the kernel may offer the same free port
    to two of them before either binds it."""
    with _PORT_LOCK:
        for _ in range(64):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind((HOST, 0))
                port: int = s.getsockname()[1]
            if port not in _RECENT_PORTS:
                break
        _RECENT_PORTS.append(port)
        return port


def port_taken(port: int) -> bool:
    """Something holds `port` on HOST: a listener, or a connection's own end (the kernel
    hands the ports free_port() draws from to outgoing connections too)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # a connection of the server's own, closed and waiting out TIME_WAIT, holds nothing
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError as e:
            return e.errno == errno.EADDRINUSE
    return False


def _start(
    target: Target,
    backend: ServerStarter[S],
    cpus: tuple[int, ...],
    run_dir: Path,
    workdir: Path,
    cwd: Path,
    port: int,
    whole_life: bool,
) -> S:
    from icount.serve import adapter as adapter_mod

    a = target.adapter
    try:
        argv = adapter_mod.expand(a.start, port=port, build_dir=target.build_dir, adapter=a)
        argv[0] = procs.resolve_command(argv[0])
    except (LaunchError, ParseError) as e:
        raise RunInvalid(f"cannot start the server: {e}") from None
    except OSError as e:  # a {render:FILE} that cannot be read or written
        raise RunInvalid(f"cannot start the server: {e.filename}: {e.strerror}") from None
    problem = backend.server_problem(argv)
    if problem is not None:
        raise RunInvalid(problem)
    env = environment.clean_env(
        workdir,
        {"LD_BIND_NOW": "1", **adapter_mod.expand_env(a, port=port, build_dir=target.build_dir)},
    )
    problem = environment.exec_problem(argv, env)
    if problem is not None:  # this target's cells are invalid; the session goes on
        raise RunInvalid(f"cannot start the server: {problem}")
    if not cwd.is_dir():
        raise RunInvalid(f"cannot start the server: its working directory {cwd} is not a directory")
    argv = environment.fixed_program(argv, workdir)
    return backend.start_server(argv, run_dir, env=env, cwd=cwd, cpus=cpus, whole_life=whole_life)


def ran_in(cwd: Path, given: bool) -> str:
    """Where the server ran, for the reason of a server that ended before it was ready
    (a server that reads its files from where it starts fails in an empty directory)."""
    if given:
        return f"it ran in {cwd}"
    return (
        f"it ran in {cwd}, an empty directory (give --cwd DIR, or cwd in its adapter, "
        "for a server that reads files from where it starts)"
    )


def launch_problem(target: Target, backend: ServerStarter[ServerProcess]) -> str | None:
    """Why the backend cannot measure the target's server as its adapter starts it (a
    launcher script under callgrind), asked once before any of its cells starts a
    server: its cells are invalid with it, and no server is started in vain. None when
    it can, or when only starting it will tell (a program not found is the run's to say)."""
    from icount.serve import adapter as adapter_mod

    a = target.adapter
    try:
        first = adapter_mod.expand(a.start[:1], port=0, build_dir=target.build_dir, adapter=a)
        program = procs.resolve_command(first[0])
    except (LaunchError, ParseError, OSError):
        return None
    # the rest as the adapter gives it: placeholders ({port}) read as what to write there
    return backend.server_problem([program, *a.start[1:]])


def gone(server: ServerProcess) -> str | None:
    """Why the server is gone ('exited with status 1; stderr: ...'), or None if alive:
    with the backend's own complaint when it has one, and what a server that
    daemonized left running (which icount stops)."""
    return _gone(server)[0]


def _gone(server: ServerProcess) -> tuple[str | None, bool]:
    """`gone`'s reason, and whether the server crashed (a signal, or a complaint of the
    backend's): not a server that exited for want of its files."""
    if server.alive():
        return None, False
    rc = server.stop()
    left = server.left_behind()
    if rc == 0 and left:
        return (
            f"the server daemonized: the started process exited 0 and left {left} "
            "running (icount stopped it); icount counts a server that stays in the "
            "foreground (nginx: 'daemon off;', others: a --foreground or --no-daemon flag)"
        ), False
    why = f"the server {procs.exit_reason(rc, server.run_dir / 'server.stderr')}"
    failure = server.failure()
    crashed = failure is not None or procs.signal_name(rc) is not None
    return (f"{why}; {failure}" if failure else why), crashed


def check_alive(server: ServerProcess) -> None:
    why = gone(server)
    if why:
        raise RunInvalid(why)


def ended(server: ServerProcess) -> str | None:
    """How the server ended, if it is ending: `gone`, after a moment's wait. A server
    that crashed closes its sockets before valgrind has finished writing its profile
    and exits, and one that daemonized can still be exiting when its child answers:
    the wait lets the reason name that rather than what it caused."""
    procs.wait_until(lambda: not server.alive(), timeout=EXIT_WAIT_S)
    return gone(server)


def with_server_state(server: ServerProcess | None, what: str) -> str:
    """`what`, with how the server ended if it did."""
    if server is None:
        return what
    why = ended(server)
    return f"{what} ({why})" if why else what


def _wait_ready(server: ServerProcess, port: int, adapter: Adapter, note: Note, where: str) -> None:
    """Until the ready target answers with the status that says the server is up (a
    proxy answers 502 until its upstream listens), within the adapter's ready timeout."""
    from icount.serve.http_client import fetch

    probe = PathSpec("ready", adapter.ready_target, Expect())
    timeout = adapter.ready_timeout_s
    deadline = time.monotonic() + timeout
    note(f"waiting for the server (up to {timeout:g} s)")
    wrong: tuple[int, float] | None = None  # the status answered instead, and since when
    while True:
        why, crashed = _gone(server)
        if why:
            # where it ran matters to a server that exited for want of its files, not to
            # one that crashed (a JIT's SIGSEGV under valgrind is no missing --cwd)
            raise RunInvalid(f"{why} before it was ready" + ("" if crashed else f"; {where}"))
        now = time.monotonic()
        left = deadline - now
        if left <= 0:
            raise RunInvalid(_not_ready(adapter, wrong, now))
        try:
            status = fetch(HOST, port, probe, timeout_s=max(left, 0.1)).status
        except (OSError, RunFailedError):
            wrong = None
        else:
            if ready_answer(adapter, status):
                return
            if wrong is None or wrong[0] != status:
                wrong = (status, time.monotonic())
        time.sleep(READY_POLL_S)


def ready_answer(adapter: Adapter, status: int) -> bool:
    """True for a status that says the server is ready."""
    return status == adapter.ready_status if adapter.ready_status is not None else status < 500


def _not_ready(adapter: Adapter, wrong: tuple[int, float] | None, now: float) -> str:
    hint = "raise [ready] timeout_s in the adapter, or --ready-timeout with --cmd"
    target, timeout = adapter.ready_target, adapter.ready_timeout_s
    if wrong is None:
        return f"the server did not answer {target} within {timeout:g} s ({hint})"
    want = (
        f"expected {adapter.ready_status}"
        if adapter.ready_status is not None
        else "expected a status below 500"
    )
    return (
        f"ready timeout: {target} answered {wrong[0]} for {now - wrong[1]:.0f} s of the "
        f"{timeout:g} s ({want}; {hint})"
    )


def verify(server: ServerProcess, port: int, path: PathSpec, timeout: float) -> None:
    """The path's answer is checked before anything is counted: a wrong one ends the run."""
    from icount.serve.adapter import check_response
    from icount.serve.http_client import fetch

    try:
        resp = fetch(HOST, port, path, timeout_s=timeout)
    except (OSError, RunFailedError) as e:
        raise RunInvalid(
            with_server_state(server, f"verifying {path.request_target}: {e}")
        ) from None
    diff = check_response(path.expect, resp.status, resp.headers, resp.body)
    if diff is not None:
        raise RunInvalid(f"wrong answer from {path.request_target}: {diff}")


def first_correct_answer(server: ServerProcess, port: int, path: PathSpec, timeout_s: float) -> int:
    """Ask `path` until the server answers it correctly; the attempts it took. Refused
    connections do not reach the server; wrong answers (a 503 while it starts) do, and
    are part of what a cold start costs."""
    from icount.serve.adapter import check_response
    from icount.serve.http_client import fetch

    deadline = time.monotonic() + timeout_s
    attempts = 0
    last = "no answer"
    while True:
        why = gone(server)
        if why:
            raise RunInvalid(f"{why} before it answered {path.request_target}")
        left = deadline - time.monotonic()
        if left <= 0:
            raise RunInvalid(
                f"the server did not answer {path.request_target} correctly within "
                f"{timeout_s:g} s ({last}; raise [ready] timeout_s in the adapter)"
            )
        try:
            resp = fetch(HOST, port, path, timeout_s=max(left, 0.1))
        except (OSError, RunFailedError) as e:
            last = str(e)[:120]
            time.sleep(READY_POLL_S)
            continue
        attempts += 1
        diff = check_response(path.expect, resp.status, resp.headers, resp.body)
        if diff is None:
            return attempts
        last = f"wrong answer: {diff}"
        time.sleep(READY_POLL_S)


@contextlib.contextmanager
def started_server(
    target: Target,
    backend: ServerStarter[S],
    cpus: tuple[int, ...],
    run_dir: Path,
    note: Note,
    up: Callable[[S, int], object],
    whole_life: bool,
) -> Iterator[tuple[S, int]]:
    """A started server on which `up` (server, port) has returned, not waited for
    otherwise (a cold start's first answer is its own `up`): yields (server, port); stops
    it and removes its working directory whatever happens. Started again where its port
    was taken, as running_server's is."""
    with _port_retried(
        target, backend, cpus, run_dir, note, whole_life, lambda s, p, _: up(s, p)
    ) as (server, port):
        yield server, port


@contextlib.contextmanager
def _started(
    target: Target,
    backend: ServerStarter[S],
    cpus: tuple[int, ...],
    run_dir: Path,
    whole_life: bool,
) -> Iterator[tuple[S, int, str]]:
    """started_server's work, yielding where the server runs too (`ran_in`)."""
    from icount.serve.adapter import working_dir

    # HOME is the work dir wherever the server starts: its name is fixed, and so is
    # the count of a server that reads it
    workdir = environment.make_workdir()
    given = working_dir(target.adapter, target.build_dir)
    cwd = given if given is not None else workdir
    port = free_port()
    server: S | None = None
    interrupted = False
    try:
        server = _start(target, backend, cpus, run_dir, workdir, cwd, port, whole_life)
        yield server, port, ran_in(cwd, given is not None)
    except RunFailedError as e:
        raise RunInvalid(with_server_state(server, str(e))) from None
    except BaseException as e:
        interrupted = not isinstance(e, Exception)  # Ctrl-C, or the session stopping
        raise
    finally:
        _shut_down(server, workdir, interrupted)


def _shut_down(server: ServerProcess | None, workdir: Path, interrupted: bool) -> None:
    """Stop the server and remove what icount made for it (valgrind's folder, the work
    dir), also when a Ctrl-C comes while it stops: a server that ignores SIGTERM would
    keep icount waiting out its whole grace, and whatever was left then stayed behind
    (the next server got another work dir name, and Python servers another count)."""
    try:
        if server is not None:
            try:
                with procs.hurried() if interrupted else contextlib.nullcontext():
                    server.stop()
            except BaseException:
                with procs.hurried():  # what the interrupted stop left, SIGKILLed soon
                    server.stop()
                raise
    finally:
        try:
            if server is not None:
                server.cleanup()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


@contextlib.contextmanager
def running_server(
    target: Target,
    backend: ServerStarter[S],
    cpus: tuple[int, ...],
    run_dir: Path,
    note: Note,
    whole_life: bool = False,
) -> Iterator[tuple[S, int]]:
    """A started, ready server: yields (server, port). Stops it and removes its working
    directory whatever happens; a RunFailedError inside (a window that failed, a client
    that could not connect) ends the run with the server's state. The caller checks
    that the server is still alive at the end of its work.

    A server that exited before it was ready while another process holds its port lost
    the port between free_port() and its bind: it is started again on another port (up
    to PORT_TRIES starts), before anything is counted; the failed start's files are set
    aside beside `run_dir` (RUN_DIR.port-N-taken)."""

    def ready(server: S, port: int, where: str) -> None:
        _wait_ready(server, port, target.adapter, note, where)

    with _port_retried(target, backend, cpus, run_dir, note, whole_life, ready) as started:
        yield started


@contextlib.contextmanager
def _port_retried(
    target: Target,
    backend: ServerStarter[S],
    cpus: tuple[int, ...],
    run_dir: Path,
    note: Note,
    whole_life: bool,
    up: Callable[[S, int, str], object],
) -> Iterator[tuple[S, int]]:
    """A started server on which `up` (server, port, where it runs) has returned; one
    that exited in `up` while another process holds its port is started again."""
    for tries in range(1, PORT_TRIES + 1):
        with _started(target, backend, cpus, run_dir, whole_life) as (server, port, where):
            try:
                up(server, port, where)
            except RunInvalid:
                if tries == PORT_TRIES or server.alive() or not port_taken(port):
                    raise
            else:
                yield server, port
                return
        note(f"port {port} was taken before the server listened on it: starting it again")
        _set_aside(run_dir, f"port-{port}-taken")


def _set_aside(run_dir: Path, why: str) -> None:
    aside = run_dir.with_name(f"{run_dir.name}.{why}")
    shutil.rmtree(aside, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        run_dir.rename(aside)
