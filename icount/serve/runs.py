"""One run of a cell: a fresh server process, warmed up, counted in windows.

Per run (`measure_run`):
 1. start the server and wait until it answers (server.py);
 2. verify the cell's path once: a wrong answer makes the run invalid with the
    difference, before anything is counted;
 3. open the load generator's connections, warm up (a fixed count, or `auto`: see
    warmup.py), uninstrumented where the backend can (callgrind);
 4. --reps windows of exactly --requests; per-request = window instructions ÷
    completed requests; any failed request invalidates the run, and so do reps that
    fall window after window (still warming up) or differ by the spread limit;
 5. stop the server whatever happened.
Run value = median of its reps; cell value = median of runs (results.Cell).

One server process serves one cell (one path), not all the paths of a target: a
path measured after another would carry the other's warm-up and JIT state, and a
crash would spread to cells that did not cause it.

Where windows cannot be taken (callgrind without ptrace: the server's preflight says
so), the run falls back to the differential method over two lifetimes of the same
server: warm-up + N and warm-up + 2N requests, per-request = (Ir(2N) - Ir(N)) / N (one
rep per run). The first run's preflight decides for the session (`WindowMethod`).
Time-driven work (nginx's once-a-second clock refresh, poll timeouts) grows with wall
time, not with requests: where the idle window's rate (serve/idle_window.py) explains
TIME_SHARE_SHOWN of a window or more, rate x each window's wall time is taken out of the
mutator (and the cell says so), so that neither its value nor its validity depends on how
busy the machine was; where the clock's work while a window opens and closes (which lands
inside the window or not) is half the spread limit of a window or more, the run is
refused (`clock_uncertain`).

A collected runtime's own work (icount/runtimes.py: its collector and background
compiler, found by the backend from the profile's call graph, and Go's scheduler waiting
for requests) is kept apart in each rep: the run's value and every warm-up and refusal
rule follow the mutator (the rest), and the cell's runtime figures are means over every
window (icount/results/runtime.py; the scheduler's is in no total, and why is there).

Where that mean's interval is too wide for the cell's total to be valid, windows are
added (serve/added_windows.py) after the --reps ones, of the same --requests, until the
interval projected for the cell fits (this run's windows pooled with the cell's earlier
runs', the runs still to come assumed alike), or a cap stops them: --max-windows a run,
--reps included, and --max-extra-seconds a run of added windows. The added windows serve
the runtime's mean only. The run's median and every refusal rule take the --reps
windows, so that the mutator means what the cell's params say (the median of --reps
windows) whatever the collector's noise asked for, and a run is judged on the same
evidence as one of a runtime without a collector; the refusals are decided before any
window is added, so that a refused run spends nothing on them. The idle window comes
before them for the same reason: the clock's rate must be known to judge the reps, and
it is subtracted from the added windows alike. A run stops adding early when even half
the spread measured between its windows (under the bound over spans, the largest
collection seen: serve/added_windows.py says when half of it) would need more than the
caps allow: the time would be spent for a total that stays `~`. The cap that stopped a
run is recorded with it, and the total's reason names it. A run's windows taken back to
back, with no request uncounted between them (no connection the server closed at a
limit, no window taken again), are one span: its detail says `contiguous`, and the bound
over spans judges the total (results/runtime.py), the idle window's own runtime work
recorded for it; a collector that bound finds driven by the clock stops the adding at
once.

Staggered warm-ups (`stagger`): run k (from 0) of a collected runtime's cell warms up
k x --reps x --requests requests more than the cell's warm-up, after a fixed count as
after `--warmup auto` settled, uninstrumented as a warm-up is. The runs are fresh
processes sent the same requests after the same warm-up, so a collector whose cycle is
counted in requests (V8's major collections every few thousand, c-epoll's every Nth)
falls at the same requests in every run: the runs measure one phase of its cycle again
and again, the cell's mean leans toward that phase, and its interval, which takes the
windows for samples of the whole cycle, is too narrow. Staggered, the cell's windows tile
one contiguous span of the cycle, as the long window the mean stands for would. The
offset counts the --reps windows only, not those a run added for the interval, so that a
run's warm-up follows from the cell's params and its index, not from the noise of the
runs before; where windows were added the spans overlap, yet start at different phases
and hold more of the cycle each. A cell whose first run found no runtime work has no such
cycle: its runs keep their warm-up and its results stay what they were (a later run reads
the runtime from `earlier`; the first is never staggered). Auto settles per run, where it
settles; the stagger comes after. Each run's detail records the warm-up it had, the
cell's params the one asked for. Not staggered: the differential method (it finds no
runtime work), and the interleave of `icount compare`, which calls `measure_run` without
a run index: a pair's base and new must see the same warm-up, and its figure is the
mutator, which has no cycle to tile.
"""

from __future__ import annotations

import dataclasses
import hashlib
import statistics
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from icount import runtimes
from icount.backends import ServerBackend
from icount.backends.protocol import Server
from icount.results.details import (
    WINDOW_COLD_START,
    WINDOW_DIFFERENTIAL,
    Lifetimes,
    ProcessShare,
    Rep,
    RequestIdentity,
    ServeDetail,
)
from icount.serve import arrival, connections
from icount.serve import window as win
from icount.serve.adapter import PathSpec
from icount.serve.added_windows import added_windows
from icount.serve.cell_options import CellOptions
from icount.serve.http_client import KeepAliveClient, LoadResult
from icount.serve.idle_window import clock_uncertain, idle_window
from icount.serve.loadgen import LoadGenerator
from icount.serve.server import (
    HOST,
    Note,
    RunInvalid,
    Target,
    check_alive,
    first_correct_answer,
    running_server,
    started_server,
    verify,
)
from icount.serve.warmup import (
    WarmupFailed,
    auto_warmup,
    moved_after_settling,
    still_warming,
)


@dataclass(frozen=True)
class WindowMethod:
    """How a session's windows are taken (results.details.WINDOW_*), and why."""

    name: str
    why: str


@dataclass(frozen=True)
class RunOutcome:
    value: float | None  # the run's per-request figure, None when invalid
    reason: str | None  # why it is invalid
    detail: ServeDetail | None
    window: WindowMethod | None  # how windows were taken; None if no server got so far
    # Client throughput varies from run to run: provenance, not a result.
    client_rps: tuple[float, ...] = ()
    # each rep's self instructions by function, where the backend sees them: kept in
    # memory for the cell's spread explanation, not saved
    functions: tuple[Mapping[str, float] | None, ...] = ()
    # what the cell's notes say of this run (how the server used its connections)
    notes: tuple[str, ...] = ()
    connection: str | None = None  # "close" where each request had its own connection


def request_identity(data: bytes | None) -> RequestIdentity | None:
    if data is None:
        return None
    return RequestIdentity(len(data), hashlib.sha256(data).hexdigest())


@contextmanager
def _client(
    server: Server, opts: CellOptions, port: int, path: PathSpec
) -> Iterator[LoadGenerator]:
    """Verify the path's answer, then open the load generator's connections."""
    from icount.serve import loadgen

    timeout = opts.backend.serve_defaults.client_timeout_s
    verify(server, port, path, timeout)
    pace = arrival.pacer(opts.arrival, server.pid, timeout)
    client = loadgen.make_load_generator(
        opts.load_kind, HOST, port, path, opts.concurrency, timeout, opts.cpus.load, pace
    )
    if isinstance(client, KeepAliveClient):
        client.connection = opts.connection
    try:
        client.open()
        yield client
    finally:
        client.close()


def _auto_warmup(
    server: Server, client: LoadGenerator, opts: CellOptions, note: Note, runtime: list[float]
) -> tuple[int, tuple[tuple[int, float], ...]]:
    """`--warmup auto` on this server (warmup.py): probe windows, counted, and cheap
    warm-up between them with the backend's instrumentation off. Each probe's runtime
    work per request is appended to `runtime` where the backend found a collector."""
    floor = opts.backend.instruction_floor

    def probe(n: int) -> float:
        # the mutator's curve: a collection that falls in a probe holds nothing back, nor
        # does a scheduler that waited longer for the requests of one probe
        rep, _, _, _, _ = win.count_window(server, client, n, "warm-up probe", floor)
        if rep.collector is not None:
            runtime.append(round(rep.runtime_work / rep.requests, 3))
        return (rep.instructions - rep.apart) / rep.requests

    def cheap(n: int) -> None:
        server.instrument(False)
        win.warm(server, client, n, "warm-up")

    return auto_warmup(probe, cheap, opts.requests, opts.max_spread, note, opts.auto_limits)


class RunRefused(RunInvalid):
    """A run refused after it counted something (an auto warm-up that gave up, reps that
    say it was still warming): invalid, and what it counted, the curve above all, is
    kept in the results file so the user sees where the count was going."""

    def __init__(self, message: str, detail: ServeDetail) -> None:
        super().__init__(message)
        self.detail = detail


def _refusal(
    per_request: Sequence[float],
    max_spread: float,
    curve: Sequence[tuple[int, float]],
    warmed: int,
    totals: Sequence[float],
) -> str | None:
    """Reps that keep falling mean the server was still warming up, and reps that
    contradict the probe an auto warm-up settled on mean it settled too soon: never a
    valid run. (Reps that merely differ, as a garbage collector makes them, are
    explained with the cell: see spread.py.) `per_request`: the reps' mutator figures."""
    warming = still_warming(per_request, max_spread, warmed, bool(curve))
    if warming and totals[-1] and (totals[0] - totals[-1]) / totals[-1] < max_spread / 4:
        # the mutator fell as the runtime's work rose (a split that moved between
        # windows, not a process that warmed up): the whole count did not fall
        warming = None
    return warming or moved_after_settling(curve, per_request, max_spread)


def _decide(server: Server, backend: ServerBackend) -> WindowMethod:
    problem = server.preflight()
    if problem is None:
        defaults = backend.serve_defaults
        return WindowMethod(defaults.window, defaults.window_why)
    return WindowMethod(WINDOW_DIFFERENTIAL, f"{problem}: differential method over two lifetimes")


def stagger(run: int, opts: CellOptions, earlier: Sequence[ServeDetail]) -> int:
    """The requests run `run` (from 0) of a cell warms up beyond the cell's warm-up: its
    index times the --reps windows of a run where the cell's earlier runs counted a
    runtime's own work, else none (the module's docstring says why)."""
    if run < 1 or not any(_collected(d) for d in earlier):
        return 0
    return run * opts.reps * opts.requests


def _collected(detail: ServeDetail) -> bool:
    """Whether a run counted some of a runtime's own work: a runtime named is not enough
    (CPython's collector rarely runs in a window, and with --collector alone every profile
    names USER, even a C server's where nothing matched): without work there is no cycle
    to tile, and the extra warm-up would be time spent for nothing."""
    if detail.runtime is None:
        return False
    return any(r.runtime_work > 0 for r in detail.reps)


def _windows(
    server: Server,
    port: int,
    path: PathSpec,
    opts: CellOptions,
    window: str,
    note: Note,
    earlier: Sequence[ServeDetail] = (),
    extra: int = 0,
    said: connections.Said | None = None,
) -> tuple[ServeDetail, tuple[float, ...], tuple[Mapping[str, float] | None, ...]]:
    """Verify, warm up (and `extra` requests more: `stagger`), then --reps windows on a
    ready server, and the windows added for a collected runtime's interval (`earlier`:
    the cell's valid runs before this one). `said` gets what the cell's notes say of the
    server's connections."""
    curve: tuple[tuple[int, float], ...] = ()
    probes: list[float] = []  # the runtime's work per request in each probe, recorded
    with _client(server, opts, port, path) as client:
        if opts.warmup.count is None:
            try:
                warmup, curve = _auto_warmup(server, client, opts, note, probes)
            except WarmupFailed as e:
                served = e.curve[-1][0] if e.curve else 0
                kept = ServeDetail(window, served, (), warmup_curve=e.curve,
                                   runtime_curve=_runtime_curve(e.curve, probes))  # fmt: skip
                raise RunRefused(str(e), kept) from None
        else:
            warmup = opts.warmup.count
            note(f"warm-up: {warmup} requests")
            if warmup:
                win.warm(server, client, warmup, "warm-up", win.paced_tail(warmup, extra)[0])
        if extra:
            note(f"warm-up: {extra} requests more, staggered from the cell's earlier runs")
            if opts.warmup.count is None:
                server.instrument(False)  # after auto's last probe, as its cheap warm-up
            fixed = opts.warmup.count or 0  # auto's own probes reached an idle server
            win.warm(server, client, extra, "staggered warm-up", win.paced_tail(fixed, extra)[1])
            warmup += extra
        reps: list[Rep] = []
        rps: list[float] = []
        walls: list[float] = []
        took: list[float] = []  # each window's wall time, opening and closing included
        functions: list[Mapping[str, float] | None] = []
        runtime_names: list[str] = []
        inside = 0  # connections a window opened
        known = win.connections_seen(client)
        for r in range(opts.reps):
            note(f"rep {r + 1}/{opts.reps}: {opts.requests} requests")
            t0 = win.CLOCK()
            rep, result, by_function, work, prepared = win.count_window(
                server, client, opts.requests, f"rep {r + 1}", opts.backend.instruction_floor
            )
            took.append(win.CLOCK() - t0 - prepared)
            inside = max(inside, result.connections)
            reps.append(rep)
            rps.append(round(result.rps, 1))
            walls.append(result.wall_s)
            functions.append(by_function)
            if work is not None:
                runtime_names.append(work)
        request = request_identity(client.request_bytes)
        if said is not None:
            connections.describe(client, opts.requests, inside, said)
        idle, share = None, None
        if opts.idle_seconds > 0:
            note(f"idle window: {opts.idle_seconds:g} s")
            idle, share = idle_window(server, opts.idle_seconds, reps, walls, client)
        subtract = share is not None  # the clock's share is worth taking out
        if not subtract:  # a window's time is kept where it is subtracted for
            reps = [dataclasses.replace(r, seconds=None) for r in reps]
            # and so is the idle window's measured length: elsewhere the seconds asked
            # for, so that a server without clock-driven work writes the same file
            if idle is not None:
                idle = dataclasses.replace(idle, seconds=opts.idle_seconds)
        runtime = next(iter(runtime_names), None)
        if runtime == runtimes.USER and not any(r.runtime_work or r.runtime_calls for r in reps):
            # --collector alone, and nothing it names ran in any window: no runtime's work
            # was counted apart, and none is shown as a collector of 0 (the cell's notes
            # say which pattern matched nothing)
            runtime, probes = None, []
            reps = [dataclasses.replace(r, collector=None, compiler=None, runtime_calls=None,
                                        scheduler=None) for r in reps]  # fmt: skip
        detail = ServeDetail(
            window, warmup, tuple(reps), request, warmup_curve=curve, idle=idle,
            time_share=share, runtime=runtime, clock_subtracted=subtract,
            runtime_curve=_runtime_curve(curve, probes),
            contiguous=runtime is not None and win.contiguous(client, known),
        )  # fmt: skip
        mutator = detail.mutator_per_request
        # the advice a refusal gives names a warm-up the user can ask for: not the stagger
        why = clock_uncertain(detail, took, opts.max_spread) or _refusal(
            mutator, opts.max_spread, curve, warmup - extra, detail.per_request
        )
        if not why and runtime is not None:
            detail, added_rps = added_windows(server, client, opts, detail, earlier, took, note)
            rps.extend(added_rps)
            if detail.contiguous and not win.contiguous(client, known):
                detail = dataclasses.replace(detail, contiguous=False)
    check_alive(server)
    if why:
        raise RunRefused(why, detail)
    return detail, tuple(rps), tuple(functions)


def _runtime_curve(
    curve: Sequence[tuple[int, float]], probes: Sequence[float]
) -> tuple[tuple[int, float], ...]:
    """The runtime's work per request at each point of the mutator's warm-up curve."""
    if len(probes) != len(curve):
        return ()
    return tuple((n, v) for (n, _), v in zip(curve, probes, strict=True))


def _lifetime(
    target: Target, path: PathSpec, opts: CellOptions, run_dir: Path, n: int, note: Note
) -> tuple[float, LoadResult, bytes | None]:
    """Instructions of one whole server life serving warm-up + n requests."""
    with running_server(target, opts.backend, opts.cpus.server, run_dir, note, whole_life=True) as (
        server,
        port,
    ):
        with _client(server, opts, port, path) as client:
            note(f"lifetime of {n} requests (differential method)")
            if opts.warmup.count:
                win.load(server, client, opts.warmup.count, "warm-up")
            result = win.load(server, client, n, f"{n} requests")
            request = client.request_bytes
        check_alive(server)
        server.stop()
        count = server.lifetime_count().instructions
    return count, result, request


def _differential(
    target: Target, path: PathSpec, opts: CellOptions, run_dir: Path, note: Note
) -> tuple[ServeDetail, tuple[float, ...]]:
    if opts.warmup.count is None:
        raise RunInvalid("--warmup auto needs counting windows, which this machine cannot take")
    n = opts.requests
    one, _, _ = _lifetime(target, path, opts, run_dir / "lifetime-1", n, note)
    two, result, request = _lifetime(target, path, opts, run_dir / "lifetime-2", 2 * n, note)
    if two < one:
        # no per-request figure can be negative: work that is not the requests' (the
        # clock, a collector) differed between the two lives by more than n requests cost
        raise RunInvalid(
            f"the life serving {2 * n} requests counted fewer instructions ({two:,.0f}) than "
            f"the one serving {n} ({one:,.0f}): work that is not the requests' outweighs them"
        )
    detail = ServeDetail(
        WINDOW_DIFFERENTIAL,
        opts.warmup.count,
        (Rep(two - one, n),),
        request_identity(request),
        lifetimes=Lifetimes((n, 2 * n), (one, two)),
    )
    return detail, (round(result.rps, 1),)


def measure_cold_start(
    target: Target, path: PathSpec, opts: CellOptions, run_dir: Path, note: Note
) -> RunOutcome:
    """A cold start: the instructions a fresh server executes from exec to its first
    correct answer to `path` (every process, the dynamic loader and start-up included),
    counted by a backend counting from exec. One figure per run."""
    from icount.serve.http_client import encode_request

    def answered(server: Server, port: int) -> None:
        note(f"cold start: asking {path.request_target} until it answers")
        first_correct_answer(server, port, path, target.adapter.ready_timeout_s)

    try:
        with started_server(
            target, opts.backend, opts.cpus.server, run_dir, note, answered, whole_life=True
        ) as (server, _):
            count = server.close_window()  # no window was opened: counted since exec
            check_alive(server)
    except RunInvalid as e:
        return RunOutcome(None, str(e), None, None)
    shares = tuple(ProcessShare(i, p.role, p.instructions) for i, p in enumerate(count.processes))
    detail = ServeDetail(
        WINDOW_COLD_START,
        0,
        (Rep(count.instructions, 1, shares),),
        request_identity(encode_request(HOST, path)),
    )
    return RunOutcome(float(count.instructions), None, detail, None, (), (count.functions,))


def measure_run(
    target: Target,
    path: PathSpec,
    opts: CellOptions,
    run_dir: Path,
    window: WindowMethod | None,
    note: Note,
    earlier: Sequence[ServeDetail] = (),
    run: int = 0,
) -> RunOutcome:
    """One fresh server process (two, under the differential method). `window` is the
    session's decision so far; None lets this run's preflight decide. `earlier`: the
    cell's valid runs so far, pooled with this one's windows to judge whether windows
    must be added for a collected runtime's interval. `run`: this run's index in its
    cell, which staggers its warm-up (`stagger`); 0 for a run that must see the cell's
    warm-up as it is."""
    decided = window
    said = connections.Said()
    try:
        if decided is None or decided.name != WINDOW_DIFFERENTIAL:
            with running_server(target, opts.backend, opts.cpus.server, run_dir, note) as (
                server,
                port,
            ):
                # Every process is preflighted, not only the first: under callgrind the
                # forced command makes epoll_wait fail with EINTR once, so the server's
                # first errno lookup (a lazy PLT binding, ~800 instructions measured on
                # c-epoll) happens here, not in rep 1.
                if decided is None:
                    decided = _decide(server, opts.backend)
                else:
                    problem = server.preflight()
                    if problem is not None:
                        raise RunInvalid(f"{opts.backend.name} control failed: {problem}")
                if decided.name != WINDOW_DIFFERENTIAL:
                    extra = stagger(run, opts, earlier)
                    detail, rps, functions = _windows(
                        server, port, path, opts, decided.name, note, earlier, extra, said
                    )
        if decided.name == WINDOW_DIFFERENTIAL:
            detail, rps = _differential(target, path, opts, run_dir, note)
            functions = ()
    except RunRefused as e:
        return RunOutcome(None, str(e), e.detail, decided, notes=tuple(said.notes))
    except RunInvalid as e:
        return RunOutcome(None, str(e), None, decided, notes=tuple(said.notes))
    value = float(statistics.median(detail.mutator_per_request))
    return RunOutcome(value, None, detail, decided, rps, functions, tuple(said.notes),
                      said.connection)  # fmt: skip
