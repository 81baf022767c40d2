"""Running the real CLI in a subprocess, as a user would."""

from __future__ import annotations

import contextlib
import io
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import NoReturn

HERE_TIMEOUT_S = 60.0  # run_icount_here's limit: what run_icount's callers gave


class RanTooLong(BaseException):
    """A command run in-process (run_icount_here) past its time limit: one that was to
    refuse before anything started, and started a session instead. Not an Exception,
    so that no `except Exception` of icount's takes it for its own."""


def run_icount(
    args: Sequence[str],
    cwd: Path | None = None,
    timeout: float = 600,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`python -m icount ARGS` in `cwd`: its exit status, stdout and stderr."""
    return subprocess.run(
        [sys.executable, "-m", "icount", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=None if env is None else dict(env),
    )


def run_icount_here(
    args: Sequence[str],
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """What run_icount gives (exit status, stdout and stderr as text, with the same
    encodings and newlines), from icount's own entry point inside this process: no
    interpreter to start nor icount to import again (about 0.3 s of CPU a call).

    Only for commands that read and write files: one that launches programs (whose
    output would reach this process's descriptors), serves, must not hang on a FIFO or
    takes signals runs in its own process (run_icount). Everything the call could
    change for the next test is put back: arguments, streams, environment, working
    directory and signal handlers. One that runs past `timeout` seconds fails its test
    (RanTooLong, from SIGALRM in the main thread) rather than hang its worker: a
    refusal that regressed into a session that starts a server.
    """
    done = run_icount_here_bytes(args, cwd, env, timeout)
    return subprocess.CompletedProcess(
        done.args, done.returncode, _text(done.stdout), _text(done.stderr)
    )


def run_icount_here_bytes(
    args: Sequence[str],
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """run_icount_here's call, its stdout and stderr the bytes a process of its own
    writes (subprocess.run without text=True): for a test of the bytes themselves, a
    stray carriage return or an encoding, which decoding as text would hide."""
    import os
    import types

    from icount.cli import main

    out, err = io.BytesIO(), io.BytesIO()
    # as a child's streams on a pipe: UTF-8, surrogateescape out, backslashreplace err
    stdout = io.TextIOWrapper(out, "utf-8", "surrogateescape", write_through=True)
    stderr = io.TextIOWrapper(err, "utf-8", "backslashreplace", write_through=True)
    entry = types.ModuleType("__main__")
    entry.__package__ = "icount"  # click names the program `python -m icount` from it
    saved_env = dict(os.environ)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    status: object = 0
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(contextlib.chdir(cwd or os.getcwd()))
            stack.enter_context(contextlib.redirect_stdout(stdout))
            stack.enter_context(contextlib.redirect_stderr(stderr))
            stack.enter_context(_time_limit(args, HERE_TIMEOUT_S if timeout is None else timeout))
            if env is not None:
                os.environ.clear()
                os.environ.update(env)
            saved = sys.argv, sys.modules["__main__"]
            sys.argv = [str(Path(main.__code__.co_filename).with_name("__main__.py")), *args]
            sys.modules["__main__"] = entry
            try:
                main()
            except SystemExit as e:
                status = e.code
            finally:
                sys.argv, sys.modules["__main__"] = saved
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        for s, handler in handlers.items():
            signal.signal(s, handler)
    if isinstance(status, str):  # sys.exit(message): Python prints it and exits 1
        stderr.write(status + "\n")
    code = status if isinstance(status, int) else 0 if status is None else 1
    return subprocess.CompletedProcess(
        [sys.executable, "-m", "icount", *args], code, out.getvalue(), err.getvalue()
    )


@contextlib.contextmanager
def _time_limit(args: Sequence[str], seconds: float) -> Iterator[None]:
    """SIGALRM after `seconds`, where this is the main thread (signals go there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum: int, frame: object) -> NoReturn:
        raise RanTooLong(f"run_icount_here: icount {' '.join(args)} ran past {seconds:g} s")

    before = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def _text(data: bytes) -> str:
    """Bytes as subprocess.run(text=True) gives them: decoded, universal newlines."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def icount_here(
    *args: str, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """The `icount` fixture's call (tests/conftest.py), in-process: a test module whose
    commands only read and write files overrides the fixture with this."""
    return run_icount_here(args, cwd, timeout=timeout)
