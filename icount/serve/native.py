"""`icount serve --memory`: a server's peak memory, from native runs of it.

Valgrind inflates memory, so the server is started again with no backend at all: the
same command, environment, working dir and CPUs, made ready the same way, then sent the
same warm-up and requests as a counted run (the warm-up the counted runs settled on;
their reps times their requests). Before it is stopped, the high-water mark of each of
its live processes (VmHWM: the started process and every descendant, workers forked
by a master included) is read and summed (icount/memory.py).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil

from icount import environment, memory, procs
from icount.results import Run
from icount.results.details import ServeDetail
from icount.serve.adapter import PathSpec
from icount.serve.server import (
    HOST,
    RunInvalid,
    Target,
    running_server,
    verify,
    with_server_state,
)


class NativeServer:
    """A server run with no backend at all (`protocol.ServerProcess`): nothing counts it,
    it only runs."""

    def __init__(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        cpus: Sequence[int],
    ) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        self.run_dir = run_dir
        self.child = procs.spawn(
            argv,
            env=env,
            cwd=cwd,
            cpus=cpus,
            stdout=run_dir / "server.stdout",
            stderr=run_dir / "server.stderr",
        )
        self.pid = self.child.pid

    def peak_rss(self) -> int | None:
        """The sum of the high-water marks of the server's live processes."""
        try:
            family = [self.pid, *(p.pid for p in psutil.Process(self.pid).children(True))]
        except psutil.Error:
            return None
        return memory.server_peak(family)

    def alive(self) -> bool:
        return self.child.poll() is None

    def stop(self) -> int:
        return self.child.stop()

    def cleanup(self) -> None:
        pass  # nothing of a backend's to remove

    def left_behind(self) -> str | None:
        return self.child.left_behind

    def failure(self) -> str | None:
        return None  # no backend to complain: a crash is in the server's exit status


class NativeStarter:
    """Starts the memory runs' servers (`protocol.ServerStarter`): no backend runs them,
    so none refuses a launcher."""

    def server_problem(self, argv: Sequence[str]) -> str | None:
        return None

    def start_server(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        cpus: Sequence[int],
        whole_life: bool = False,
    ) -> NativeServer:
        return NativeServer(argv, run_dir, env=env, cwd=cwd, cpus=cpus)


def warmup_of(details: Sequence[ServeDetail], asked: int | None) -> int:
    """The warm-up the counted runs were asked for: `asked`, a fixed count, or where auto
    settled in each run (their median). Not the warm-up a collected runtime's later runs
    had: those add a stagger (runs.py) that places their windows along the collector's
    cycle, and the native runs replay one run's span each, from the same start."""
    if asked is not None:
        return asked
    counts = [d.warmup_curve[-1][0] if d.warmup_curve else d.warmup
              for d in details if isinstance(d.warmup, int)]  # fmt: skip
    return int(statistics.median(counts)) if counts else 0


def _serve(server: NativeServer, opts: Any, port: int, path: PathSpec, warmup: int) -> None:
    """The counted runs' requests: the warm-up, then reps x requests, answers checked."""
    from icount.serve import loadgen

    timeout = opts.backend.serve_defaults.client_timeout_s
    verify(server, port, path, timeout)
    client = loadgen.make_load_generator(
        opts.load_kind, HOST, port, path, opts.concurrency, timeout, opts.cpus.load
    )
    try:
        client.open()
        for n, what in ((warmup, "warm-up"), (opts.reps * opts.requests, "requests")):
            result = client.run(n) if n else None
            if result is not None and not result.ok:
                why = result.first_error or f"{result.failed} of {result.requested} failed"
                raise RunInvalid(with_server_state(server, f"{what}: {why}"))
    finally:
        client.close()


def cell_peaks(
    target: Target,
    path: PathSpec,
    opts: Any,
    counted: Sequence[Run],
    artifacts: Path,
    note: Any,
) -> dict[str, Any] | None:
    """The peaks of a cell whose counted runs all succeeded; None for a cold-start cell
    (its figure ends at the first answer) or one that failed (nothing to repeat)."""
    if path.cold_start or len(counted) < opts.runs or not all(r.valid for r in counted):
        return None
    details = [r.detail for r in counted if isinstance(r.detail, ServeDetail)]
    safe = environment.safe_name
    run_dir = artifacts / safe(target.adapter.name) / safe(path.name)
    return server_peaks(target, path, opts, warmup_of(details, opts.warmup.count), run_dir, note)


def server_peaks(
    target: Target,
    path: PathSpec,
    opts: Any,  # cell_options.CellOptions (runs imports this module's callers)
    warmup: int,
    run_dir: Path,
    note: Any,
) -> dict[str, Any]:
    """opts.runs native runs of the target's server, each served `warmup` requests then
    reps x requests more; a run that fails ends them, with the reason."""
    peaks: list[int] = []
    for i in range(opts.runs):
        note(f"peak memory: native run {i + 1}/{opts.runs}")
        try:
            with running_server(
                target, NativeStarter(), opts.cpus.server, run_dir / f"native-{i + 1}", note
            ) as (server, port):
                _serve(server, opts, port, path, warmup)
                peak = server.peak_rss()
        except RunInvalid as e:
            return {"peak_rss_bytes": peaks, "reason": f"a native run failed: {e}"}
        if peak is None:
            return {"peak_rss_bytes": peaks, "reason": "no process of the server could be read"}
        peaks.append(peak)
    return {"peak_rss_bytes": peaks}
