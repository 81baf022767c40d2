"""What one run recorded beside its value: the typed payload of `Run.detail`.

`icount run` records a `CommandDetail` (exit status, processes counted); `icount serve`
a `ServeDetail` (how the windows were taken, the warm-up, every rep's raw count). Each
field has one name and one meaning; the JSON names are the field names. Derived
figures (a rep's per-request value) are computed, never stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from icount.results.fields import bool_, count, count_int, int_, list_, obj, str_

# How a serve run's windows were taken (ServeDetail.window):
WINDOW_DUMPS = "dump"  # callgrind: between two profile dumps through vgdb
WINDOW_DIFFERENTIAL = "differential"  # callgrind: two whole lifetimes, N and 2N requests
WINDOW_FIFO = "fifo"  # perf: enable/disable on perf stat's control fifo
WINDOW_COLD_START = "cold-start"  # from exec to the first correct answer (--cold-start)
COLD_START = "cold-start"  # the path of a target's cold-start cell


class CommandParams(TypedDict):
    """What an `icount run` cell was measured with."""

    argv: list[str]
    env: dict[str, str]
    allowed_exits: list[int]


class ServeParams(TypedDict, total=False):
    """What an `icount serve` cell was measured with: everything that moves its
    per-request figure (request bytes included)."""

    requests: int
    warmup: int | str  # a request count, or "auto"
    concurrency: int
    load: str
    arrival: str  # "idle" or "closed" (serve/arrival.py); absent in older files: closed
    reps: int
    request_target: str  # the path's URL, e.g. "/plaintext"
    connection: str  # "close": each request its own connection; absent: keep-alive
    http_method: str
    server_cpus: list[int]
    load_cpus: list[int]
    thread: int | None
    perf_event: str
    processes: str
    kind: str  # "cold-start" for a cold-start cell; absent for per-request cells
    idle_seconds: float
    collectors: list[str]  # --collector patterns (callgrind); absent where none were given
    request_bytes: int | None
    request_sha256: str | None


@dataclass(frozen=True)
class CommandDetail:
    exit: int  # the command's exit status (negative: killed by that signal)
    processes: int | None = None  # profiles summed (callgrind); None where not known

    def to_json(self) -> dict[str, Any]:
        return {"exit": self.exit, "processes": self.processes}


@dataclass(frozen=True)
class ProcessShare:
    """One process's instructions in a window. Processes are numbered in the order
    icount first saw them (0 is the started server), not by pid: pids differ from run
    to run, and results must not."""

    index: int
    role: str  # "root" or "child"
    instructions: float

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "role": self.role, "instructions": self.instructions}


def arrival_of(params: Mapping[str, Any]) -> str:
    """The arrival a serve cell's params record (ServeParams.arrival); a file written
    before the field existed was measured with a closed loop."""
    value = params.get("arrival")
    return value if isinstance(value, str) else "closed"


@dataclass(frozen=True)
class Rep:
    """One counting window of a server: its raw instructions and completed requests."""

    instructions: float
    requests: int
    processes: tuple[ProcessShare, ...] = ()
    # A collected runtime's own work inside `instructions` (icount/runtimes.py), None
    # where the backend found no runtime with a collector; and the window's wall time,
    # which the clock's rate (the idle window) is subtracted for.
    collector: float | None = None
    compiler: float | None = None
    seconds: float | None = None
    runtime_calls: int | None = None  # calls into the runtime's entry points counted
    # The runtime's scheduler inside `instructions` (Go's wait for a request that had not
    # arrived: icount/runtimes.py's SCHEDULER), apart from the collector and the compiler:
    # it is neither the mutator's nor the total's (results/runtime.py says why). None
    # where the backend found none.
    scheduler: float | None = None
    # the window's edges dumped with the server not seen idle ("open: why", "close:
    # why"): each fell inside its work (serve/cell_windows.py's note says what that moves)
    unsettled: tuple[str, ...] = ()

    @property
    def per_request(self) -> float:
        return self.instructions / self.requests

    @property
    def runtime_work(self) -> float:
        """The collector's and the compiler's instructions: what the total adds."""
        return (self.collector or 0.0) + (self.compiler or 0.0)

    def totalled(self, scheduler: bool) -> float:
        """What a cell's total adds to the mutator from this window: the runtime's work,
        and the scheduler's where it is part of each request (idle arrival)."""
        return self.runtime_work + ((self.scheduler or 0.0) if scheduler else 0.0)

    @property
    def apart(self) -> float:
        """Every instruction of the window kept out of the mutator, the clock's aside."""
        return self.runtime_work + (self.scheduler or 0.0)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"instructions": self.instructions, "requests": self.requests}
        if self.processes:
            out["processes"] = [p.to_json() for p in self.processes]
        # written only where measured: files of runtimes without a collector read as before
        for key in ("collector", "compiler", "seconds", "runtime_calls", "scheduler"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.unsettled:
            out["unsettled"] = list(self.unsettled)
        return out


@dataclass(frozen=True)
class RequestIdentity:
    """The exact request bytes a run sent: their length and sha256."""

    bytes: int
    sha256: str

    def to_json(self) -> dict[str, Any]:
        return {"bytes": self.bytes, "sha256": self.sha256}


@dataclass(frozen=True)
class Lifetimes:
    """The differential method's two server lives: requests served and instructions."""

    requests: tuple[int, int]
    instructions: tuple[float, float]

    def to_json(self) -> dict[str, Any]:
        return {"requests": list(self.requests), "instructions": list(self.instructions)}


# A time-driven share below this of a window is saved as None: not worth a note, and
# left in the figure. Whether a share reaches it follows the windows' wall time, which
# follows the machine's load, so that where a cell's runs are taken out or not is a move
# with load of up to this much: kept a tenth of what the figure may move between an idle
# and a busy machine. Files written with a higher cut-off read as they were.
TIME_SHARE_SHOWN = 0.0001


@dataclass(frozen=True)
class IdleCount:
    """An idle window after the reps: what the server executed with no request in
    `seconds` (work driven by the clock: timers, polls, heartbeats), less a collected
    runtime's own work counted apart, which the reps' mutator leaves out already."""

    instructions: float
    seconds: float  # the pause icount made between the window's two edges
    # a collected runtime's own work in it, where one was found: work with no request,
    # which results/runtime.py's bound over a span reads (None in files from before)
    runtime_work: float | None = None
    # Under idle arrival the window is sent a few requests spread over it, so that work
    # the clock leaves for the next request (a cache a once-a-second handler invalidates)
    # is in its rate: how many were answered, and the instructions taken out of
    # `instructions` as their own work. 0 in files from before, under a closed loop and
    # for a collected runtime (serve/idle_window.py `_sender`): a window with no request.
    requests: int = 0
    served: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"instructions": self.instructions, "seconds": self.seconds}
        if self.runtime_work is not None:
            out["runtime_work"] = self.runtime_work
        if self.requests:
            out["requests"] = self.requests
            out["served"] = self.served
        return out


@dataclass(frozen=True)
class ServeDetail:
    window: str  # WINDOW_DUMPS, WINDOW_DIFFERENTIAL or WINDOW_FIFO
    warmup: int  # requests sent before the first counted window
    reps: tuple[Rep, ...]
    request: RequestIdentity | None = None
    # --warmup auto: (requests served by the end of a probe window, its per-request figure)
    warmup_curve: tuple[tuple[int, float], ...] = ()
    lifetimes: Lifetimes | None = None
    idle: IdleCount | None = None
    # the share of a window's count that its idle rate explains (time-driven work), to
    # two significant digits, where it is TIME_SHARE_SHOWN or more
    time_share: float | None = None
    runtime: str | None = None  # the collected runtime detected (icount/runtimes.py)
    # --warmup auto on a collected runtime: the curve above follows the mutator; this is
    # the runtime's own work per request at the same points, recorded, never waited for
    runtime_curve: tuple[tuple[int, float], ...] = ()
    # the idle window's rate x each window's wall time was taken out of the mutator
    clock_subtracted: bool = False
    # windows added after the --reps ones (the last of `reps`) for the runtime's interval
    # (serve/runs.py): they count for the runtime's mean, not for the run's median
    added_windows: int = 0
    # the cap that stopped adding them, as the option with its value ("--max-windows 20")
    window_cap: str | None = None
    # its windows were taken back to back, no request uncounted between them: one span,
    # over which results/runtime.py bounds the runtime's work (False in files from before)
    contiguous: bool = False

    @property
    def per_request(self) -> tuple[float, ...]:
        return tuple(r.per_request for r in self.reps)

    @property
    def clock_rate(self) -> float:
        """Instructions a second driven by the clock, where they are subtracted."""
        if not self.clock_subtracted or self.idle is None or not self.idle.seconds:
            return 0.0
        return self.idle.instructions / self.idle.seconds

    def mutator(self, rep: Rep) -> float:
        """`rep`'s instructions per request less the runtime's own work (its scheduler's
        included) and, where subtracted, the clock's: what serving the requests cost."""
        clock = self.clock_rate * (rep.seconds or 0.0)
        return (rep.instructions - rep.apart - clock) / rep.requests

    @property
    def asked_reps(self) -> tuple[Rep, ...]:
        """The --reps windows, without the ones added for the runtime's interval."""
        return self.reps[: len(self.reps) - self.added_windows]

    @property
    def mutator_per_request(self) -> tuple[float, ...]:
        """The mutator of each --reps window: what the run's median and its rules take."""
        return tuple(self.mutator(r) for r in self.asked_reps)

    def to_json(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "warmup": self.warmup,
            "warmup_curve": [[n, v] for n, v in self.warmup_curve],
            "reps": [r.to_json() for r in self.reps],
            "request": self.request.to_json() if self.request else None,
            "lifetimes": self.lifetimes.to_json() if self.lifetimes else None,
            "idle": self.idle.to_json() if self.idle else None,
            "time_share": self.time_share,
        } | self._runtime_json()

    def _runtime_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.runtime is not None:
            out["runtime"] = self.runtime
        if self.clock_subtracted:
            out["clock_subtracted"] = True
        if self.runtime_curve:
            out["runtime_curve"] = [[n, v] for n, v in self.runtime_curve]
        if self.added_windows:
            out["added_windows"] = self.added_windows
        if self.window_cap is not None:
            out["window_cap"] = self.window_cap
        if self.contiguous:
            out["contiguous"] = True
        return out


Detail = CommandDetail | ServeDetail | None


def detail_to_json(detail: Detail) -> dict[str, Any] | None:
    return None if detail is None else detail.to_json()


def request_params(request: RequestIdentity | None) -> dict[str, Any]:
    """The request identity as the cell's params record it."""
    if request is None:
        return {"request_bytes": None, "request_sha256": None}
    return {"request_bytes": request.bytes, "request_sha256": request.sha256}


# ------------------------------------------------------------------ reading (version 2)


def detail_from_json(doc: Any) -> Detail:
    """A version-2 detail object back into its type (TypeError/KeyError when malformed):
    a server's run has its `window`, a command's its `exit`."""
    if doc is None:
        return None
    d = obj(doc, "run.detail")
    if "window" not in d:
        processes = d.get("processes")
        return CommandDetail(
            int_(d["exit"], "detail.exit"),
            None if processes is None else count_int(processes, "detail.processes"),
        )
    request = d.get("request")
    lifetimes = d.get("lifetimes")
    idle = d.get("idle")
    share = d.get("time_share")
    reps = tuple(_rep(r) for r in list_(d["reps"], "detail.reps"))
    added = count_int(d.get("added_windows", 0), "detail.added_windows")
    if added > len(reps):
        raise ValueError("detail.added_windows is more than its reps")
    cap = d.get("window_cap")
    return ServeDetail(
        window=str_(d["window"], "detail.window"),
        warmup=count_int(d["warmup"], "detail.warmup"),
        reps=reps,
        request=None
        if request is None
        else RequestIdentity(
            count_int(obj(request, "detail.request")["bytes"], "request.bytes"),
            str_(request["sha256"], "request.sha256"),
        ),
        warmup_curve=tuple(
            _curve_point(p) for p in list_(d.get("warmup_curve", []), "detail.warmup_curve")
        ),
        lifetimes=None if lifetimes is None else _lifetimes(obj(lifetimes, "detail.lifetimes")),
        idle=None
        if idle is None
        else IdleCount(
            count(obj(idle, "detail.idle")["instructions"], "idle.instructions"),
            count(idle["seconds"], "idle.seconds"),
            None
            if idle.get("runtime_work") is None
            else count(idle["runtime_work"], "idle.runtime_work"),
            count_int(idle.get("requests", 0), "idle.requests"),
            count(idle.get("served", 0.0), "idle.served"),
        ),
        time_share=None if share is None else count(share, "detail.time_share"),
        runtime=None if d.get("runtime") is None else str_(d["runtime"], "detail.runtime"),
        clock_subtracted=bool_(d.get("clock_subtracted", False), "detail.clock_subtracted"),
        runtime_curve=tuple(
            _curve_point(p) for p in list_(d.get("runtime_curve", []), "detail.runtime_curve")
        ),
        added_windows=added,
        window_cap=None if cap is None else str_(cap, "detail.window_cap"),
        contiguous=bool_(d.get("contiguous", False), "detail.contiguous"),
    )


def _rep(doc: Any) -> Rep:
    d = obj(doc, "rep")
    requests = int_(d["requests"], "rep.requests")
    if requests < 1:
        raise ValueError("rep.requests must be at least 1")
    return _whole(Rep(
        count(d["instructions"], "rep.instructions"),
        requests,
        tuple(
            ProcessShare(
                count_int(obj(p, "process")["index"], "process.index"),
                str_(p["role"], "process.role"),
                count(p["instructions"], "process.instructions"),
            )
            for p in list_(d.get("processes", []), "rep.processes")
        ),
        collector=_optional_count(d, "collector"),
        compiler=_optional_count(d, "compiler"),
        seconds=_optional_count(d, "seconds"),
        runtime_calls=None if d.get("runtime_calls") is None
        else count_int(d["runtime_calls"], "rep.runtime_calls"),
        scheduler=_optional_count(d, "scheduler"),
        unsettled=tuple(str_(e, "rep.unsettled") for e in list_(d.get("unsettled", []),
                                                                 "rep.unsettled")),
    ))  # fmt: skip


def _whole(rep: Rep) -> Rep:
    """The runtime's own work (collector, compiler, scheduler) is inside a rep's count:
    more, and the mutator, the count less that work, would be negative."""
    if rep.apart > rep.instructions * (1 + 1e-9):
        raise ValueError(
            f"the runtime's own work in a rep, {rep.apart:g}, is more than its count, "
            f"{rep.instructions:g}"
        )
    return rep


def _optional_count(d: dict[str, Any], key: str) -> float | None:
    return None if d.get(key) is None else count(d[key], f"rep.{key}")


def _curve_point(doc: Any) -> tuple[int, float]:
    pair = list_(doc, "warmup_curve point")
    if len(pair) != 2:
        raise ValueError("a warmup_curve point is [requests served, per request]")
    return (
        count_int(pair[0], "warmup_curve requests"),
        count(pair[1], "warmup_curve per request"),
    )


def _lifetimes(d: dict[str, Any]) -> Lifetimes:
    req = list_(d["requests"], "lifetimes.requests")
    ins = list_(d["instructions"], "lifetimes.instructions")
    if len(req) != 2 or len(ins) != 2:
        raise ValueError("lifetimes hold two requests and two instructions figures")
    return Lifetimes(
        (count_int(req[0], "lifetimes.requests"), count_int(req[1], "lifetimes.requests")),
        (count(ins[0], "lifetimes.instructions"), count(ins[1], "lifetimes.instructions")),
    )
