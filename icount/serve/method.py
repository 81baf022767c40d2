"""One cell of `icount serve`: a target's path measured under one backend.

The method (issue 3), per run (a fresh server process):
 1. start the server pinned to the server CPUs, in its own session, in icount's
    cleared environment (+ the adapter's env), ASLR off, under callgrind or perf;
 2. wait until it answers the ready target (any status) or exits;
 3. verify the cell's path once: a wrong answer makes the cell invalid with the
    difference, before anything is counted;
 4. open the load generator's connections, run the warm-up (a fixed count, or
    `auto`: windows of --requests until two consecutive ones agree within a quarter
    of --max-spread, capped at AUTO_MAX_WINDOWS);
 5. --reps windows of exactly --requests; per-request = window instructions ÷
    completed requests; any failed request invalidates the run;
 6. stop the server (SIGTERM, then SIGKILL) whatever happened.
Run value = median of its reps; cell value = median of runs (results.Cell).

One server process serves one cell (one path), not all the paths of a target: a
path measured after another would carry the other's warm-up and JIT state, and a
crash would spread to cells that did not cause it. The cost is one start-up per run
and path.

Under callgrind, where vgdb cannot reach an idle server (ptrace not permitted), the
window falls back to the differential method over two lifetimes of the same server:
warm-up + N and warm-up + 2N requests, per-request = (Ir(2N) - Ir(N)) / N (one rep
per run). Time-driven work (nginx's once-a-second clock refresh, poll timeouts)
grows with wall time, not with requests, and is counted in whatever window it falls.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import socket
import statistics
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from icount import environment, procs
from icount.backends import perf
from icount.errors import RunFailedError, ToolMissingError
from icount.serve.adapter import Adapter, Expect, PathSpec
from icount.serve.cpus import CpuSplit
from icount.serve.loadgen import LoadGenerator as LoadGen
from icount.stats import summarize

HOST = "127.0.0.1"
AUTO_MAX_WINDOWS = 30
READY_POLL_S = 0.1
EXIT_WAIT_S = 3.0
CLIENT_TIMEOUT_S = {"callgrind": 120.0, "perf": 10.0}
DEFAULT_WARMUP = {"callgrind": 100, "perf": 1000}
DEFAULT_REQUESTS = {"callgrind": 1000, "perf": 40000}

Note = Callable[[str], None]


class Server(Protocol):
    pid: int
    run_dir: Path

    def open_window(self) -> None: ...
    def alive(self) -> bool: ...
    def stop(self) -> int: ...
    def cleanup(self) -> None: ...


@dataclass(frozen=True)
class Target:
    adapter: Adapter
    build_dir: Path


@dataclass
class WindowChoice:
    """How callgrind windows are taken, decided by the first server's preflight."""

    method: str | None = None  # "dump" or "differential"; None until decided
    why: str = ""


@dataclass(frozen=True)
class MethodOptions:
    backend: str  # "callgrind" or "perf"
    cpus: CpuSplit
    runs: int = 3
    reps: int = 3
    requests: int = 1000
    warmup: int | None = None  # None: auto
    concurrency: int = 1
    load_kind: str = "builtin"
    max_spread: float = 0.01
    thread: int | None = None
    keep_profiles: bool = False
    perf_event: str = perf.EVENT


class _Invalid(Exception):
    """Ends a run: it produced no value, for the reason given."""


class _UseDifferential(Exception):
    pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def warmup_for(flag: int | None, auto: bool, backend: str, hint: int | None) -> int | None:
    """The warm-up of a target: explicit count, auto (None), or the default raised to the
    adapter's hint (JIT servers)."""
    if auto:
        return None
    if flag is not None:
        return flag
    return max(DEFAULT_WARMUP[backend], hint or 0)


def request_identity(data: bytes | None) -> dict[str, Any]:
    if data is None:
        return {"request_bytes": None, "request_sha256": None}
    return {"request_bytes": len(data), "request_sha256": hashlib.sha256(data).hexdigest()}


# ------------------------------------------------------------------ server lifecycle


def _start(target: Target, opts: MethodOptions, run_dir: Path, workdir: Path, port: int) -> Server:
    from icount.serve import adapter as adapter_mod
    from icount.serve.window_callgrind import CallgrindServer
    from icount.serve.window_perf import PerfServer

    a = target.adapter
    argv = adapter_mod.expand(a.start, port=port, build_dir=target.build_dir, adapter=a)
    try:
        argv[0] = procs.resolve_command(argv[0])
    except ToolMissingError as e:
        raise _Invalid(f"cannot start the server: {e}") from None
    if opts.backend == "callgrind" and _is_script(argv[0]):
        # valgrind runs the #! interpreter, and whatever that execs (env, a version
        # manager's shim) runs on unmeasured: the windows would find no valgrind.
        raise _Invalid(
            f"cannot measure {argv[0]} under callgrind: it is a #! script; start the "
            "server's binary itself (e.g. the interpreter with the script as argument)"
        )
    # LD_BIND_NOW: symbols are bound at start-up, not by the first call in some window
    # (a lazy binding costs hundreds of instructions, once, wherever it falls).
    env = environment.clean_env(
        workdir,
        {"LD_BIND_NOW": "1", **adapter_mod.expand_env(a, port=port, build_dir=target.build_dir)},
    )
    if opts.backend == "callgrind":
        return CallgrindServer(
            argv,
            run_dir,
            env=env,
            cwd=workdir,
            cpus=opts.cpus.server,
            thread=opts.thread,
            keep_profiles=opts.keep_profiles,
        )
    return PerfServer(
        argv, run_dir, env=env, cwd=workdir, cpus=opts.cpus.server, event=opts.perf_event
    )


def _is_script(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


def _server_gone(server: Server) -> str | None:
    """Why the server is gone ('exited with status 1; stderr: ...'), or None if alive."""
    if server.alive():
        return None
    rc = server.stop()
    return f"the server {procs.exit_reason(rc, server.run_dir / 'server.stderr')}"


def _wait_ready(server: Server, port: int, adapter: Adapter, note: Note) -> None:
    from icount.serve.http_client import fetch

    probe = PathSpec("ready", adapter.ready_target, Expect())
    t0 = time.monotonic()
    deadline = t0 + adapter.ready_timeout_s
    note(f"waiting for the server (up to {adapter.ready_timeout_s:g} s)")
    while True:
        gone = _server_gone(server)
        if gone:
            raise _Invalid(f"{gone} before it was ready")
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Invalid(
                f"the server did not answer {adapter.ready_target} within "
                f"{adapter.ready_timeout_s:g} s (raise [ready] timeout_s in the adapter)"
            )
        try:
            fetch(HOST, port, probe, timeout_s=max(left, 0.1))
            return
        except (OSError, RunFailedError):
            time.sleep(READY_POLL_S)


def _verify(server: Server, port: int, path: PathSpec, timeout: float) -> None:
    from icount.serve.adapter import check_response
    from icount.serve.http_client import fetch

    try:
        resp = fetch(HOST, port, path, timeout_s=timeout)
    except (OSError, RunFailedError) as e:
        raise _Invalid(_with_server(server, f"verifying {path.target}: {e}")) from None
    diff = check_response(path.expect, resp.status, resp.headers, resp.body)
    if diff is not None:
        raise _Invalid(f"wrong answer from {path.target}: {diff}")


def _check_alive(server: Server) -> None:
    gone = _server_gone(server)
    if gone:
        raise _Invalid(gone)


def _with_server(server: Server, what: str) -> str:
    # A server that crashed closes its sockets before valgrind has finished writing
    # its profile and exits: give it a moment, so that the reason names the crash.
    procs.wait_until(lambda: not server.alive(), timeout=EXIT_WAIT_S)
    gone = _server_gone(server)
    return f"{what} ({gone})" if gone else what


def _load(server: Server, client: LoadGen, n: int, what: str) -> Any:
    result = client.run(n)
    if not result.ok:
        why = result.first_error or f"{result.failed} of {result.requested} requests failed"
        raise _Invalid(_with_server(server, f"{what}: {why}"))
    return result


def _make_client(opts: MethodOptions, port: int, path: PathSpec, timeout: float) -> LoadGen:
    from icount.serve import loadgen

    return loadgen.make_load_generator(
        opts.load_kind, HOST, port, path, opts.concurrency, timeout, opts.cpus.load
    )


# ------------------------------------------------------------------ one run


def _window(server: Any, client: LoadGen, n: int, what: str) -> tuple[float, Any]:
    server.open_window()
    result = _load(server, client, n, what)
    closed = server.close_window()
    count = closed if isinstance(closed, int | float) else closed.instructions
    return count, result


def _auto_warmup(
    server: Any, client: LoadGen, opts: MethodOptions, note: Note
) -> tuple[int, list[float]]:
    """Windows of --requests until two consecutive per-request figures agree."""
    values: list[float] = []
    limit = opts.max_spread / 4
    for i in range(AUTO_MAX_WINDOWS):
        note(f"warm-up auto: window {i + 1}")
        count, result = _window(server, client, opts.requests, f"warm-up window {i + 1}")
        values.append(count / result.completed)
        if len(values) >= 2 and abs(values[-1] - values[-2]) / values[-1] < limit:
            return (i + 1) * opts.requests, values
    raise _Invalid(
        f"--warmup auto: {AUTO_MAX_WINDOWS} windows of {opts.requests} requests did not settle "
        f"(last two differ by {abs(values[-1] - values[-2]) / values[-1] * 100:.2f}%); "
        "give --warmup N"
    )


@contextlib.contextmanager
def _server_process(
    target: Target, path: PathSpec, opts: MethodOptions, run_dir: Path, note: Note
) -> Iterator[tuple[Any, int]]:
    """A started, ready server: yields (server, port). Stops it and
    removes its working directory whatever happens; a RunFailedError inside (a window
    that failed, a client that could not connect) ends the run with the server's state.
    The caller checks that the server is still alive at the end of its work."""
    workdir = environment.make_workdir()
    port = free_port()
    server: Any = None
    try:
        server = _start(target, opts, run_dir, workdir, port)
        _wait_ready(server, port, target.adapter, note)
        yield server, port
    except RunFailedError as e:
        raise _Invalid(_with_server(server, str(e)) if server else str(e)) from None
    finally:
        if server is not None:
            server.stop()
            server.cleanup()
        shutil.rmtree(workdir, ignore_errors=True)


@contextlib.contextmanager
def _open_client(server: Any, opts: MethodOptions, port: int, path: PathSpec) -> Iterator[LoadGen]:
    """Verify the path's answer, then open the load generator's connections."""
    timeout = CLIENT_TIMEOUT_S[opts.backend]
    _verify(server, port, path, timeout)
    client = _make_client(opts, port, path, timeout)
    try:
        client.open()
        yield client
    finally:
        client.close()


def _preflight(server: Any, opts: MethodOptions, choice: WindowChoice) -> None:
    if opts.backend != "callgrind" or choice.method == "differential":
        return
    # Every process is preflighted, not only the first: the forced command makes
    # epoll_wait fail with EINTR once, so the server's first errno lookup (a lazy PLT
    # binding, ~800 instructions measured on c-epoll) happens here, not in rep 1.
    problem = server.preflight()
    if choice.method is None:
        choice.method = "dump" if problem is None else "differential"
        choice.why = (
            "vgdb reaches the idle server (ptrace allowed): windows between dumps"
            if problem is None
            else f"{problem}: differential method over two lifetimes"
        )
    elif problem is not None:
        raise _Invalid(f"callgrind control failed: {problem}")


def _run_windows(
    target: Target,
    path: PathSpec,
    opts: MethodOptions,
    run_dir: Path,
    choice: WindowChoice,
    note: Note,
) -> dict[str, Any]:
    """One server process: ready, verify, warm up, --reps windows. Returns the detail."""
    with _server_process(target, path, opts, run_dir, note) as (server, port):
        _preflight(server, opts, choice)
        if choice.method == "differential":
            raise _UseDifferential
        detail: dict[str, Any] = {
            "method": choice.method or "windows",
        }
        with _open_client(server, opts, port, path) as client:
            if opts.warmup is None:
                used, seen = _auto_warmup(server, client, opts, note)
                detail["warmup"] = used
                detail["warmup_windows"] = [round(v, 3) for v in seen]
            else:
                note(f"warm-up: {opts.warmup} requests")
                if opts.warmup:
                    _load(server, client, opts.warmup, "warm-up")
                detail["warmup"] = opts.warmup
            reps = []
            for r in range(opts.reps):
                note(f"rep {r + 1}/{opts.reps}: {opts.requests} requests")
                count, result = _window(server, client, opts.requests, f"rep {r + 1}")
                reps.append(_rep(count, result))
            detail["reps"] = reps
            detail["request"] = request_identity(client.request_bytes)
        _check_alive(server)
    return detail


def _rep(count: float, result: Any) -> dict[str, Any]:
    return {
        "instructions": count,
        "requests": result.completed,
        "per_request": round(count / result.completed, 3),
        "client_rps": round(result.rps, 1),
    }


def _lifetime(
    target: Target, path: PathSpec, opts: MethodOptions, run_dir: Path, n: int, note: Note
) -> tuple[int, Any]:
    """Instructions of one whole server life serving warm-up + n requests."""
    with _server_process(target, path, opts, run_dir, note) as (server, port):
        with _open_client(server, opts, port, path) as client:
            note(f"lifetime of {n} requests (differential method)")
            if opts.warmup:
                _load(server, client, opts.warmup, "warm-up")
            result = _load(server, client, n, f"{n} requests")
            request = client.request_bytes
        _check_alive(server)
        server.stop()
        count: int = server.lifetime_instructions()
    return count, (result, request)


def _run_differential(
    target: Target, path: PathSpec, opts: MethodOptions, run_dir: Path, note: Note
) -> dict[str, Any]:
    if opts.warmup is None:
        raise _Invalid("--warmup auto needs counting windows, which this machine cannot take")
    n = opts.requests
    one, _ = _lifetime(target, path, opts, run_dir / "lifetime-1", n, note)
    two, (result, request) = _lifetime(target, path, opts, run_dir / "lifetime-2", 2 * n, note)
    rep = _rep(two - one, result)
    rep["requests"] = n
    rep["per_request"] = round((two - one) / n, 3)
    return {
        "method": "differential",
        "lifetimes": {"requests": [n, 2 * n], "instructions": [one, two]},
        "warmup": opts.warmup,
        "reps": [rep],
        "request": request_identity(request),
    }


def measure_run(
    target: Target,
    path: PathSpec,
    opts: MethodOptions,
    run_dir: Path,
    choice: WindowChoice,
    note: Note,
) -> tuple[float | None, str | None, dict[str, Any]]:
    """(per-request value or None, why not, detail) of one fresh server process."""
    try:
        try:
            detail = _run_windows(target, path, opts, run_dir, choice, note)
        except _UseDifferential:
            detail = _run_differential(target, path, opts, run_dir, note)
    except _Invalid as e:
        return None, str(e), {}
    values = [r["instructions"] / r["requests"] for r in detail["reps"]]
    detail["rep_spread"] = round(summarize(values).spread, 6)
    return float(statistics.median(values)), None, detail


def cell_params(path: PathSpec, opts: MethodOptions) -> dict[str, Any]:
    """What the cell is measured with: everything that moves a per-request figure but
    the request bytes, which the session adds once a run has sent them."""
    return {
        "requests": opts.requests,
        "warmup": "auto" if opts.warmup is None else opts.warmup,
        "concurrency": opts.concurrency,
        "load": opts.load_kind,
        "reps": opts.reps,
        "target": path.target,
        "method": path.method,
        "server_cpus": list(opts.cpus.server),
        "load_cpus": list(opts.cpus.load),
        "thread": opts.thread,
        **({"perf_event": opts.perf_event} if opts.backend == "perf" else {}),
    }


def comparable_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The params two cells must share to sit in one results file (resume)."""
    keys = ("requests", "warmup", "concurrency", "load", "reps", "target", "method", "thread")
    return {k: params.get(k) for k in keys}
