"""A collected runtime's three figures per cell, derived from its runs' reps.

- the mutator per request: the cell's own value (the median of its runs, each the median
  of its reps' mutator figures), under the spread rule as any cell;
- the runtime's own work per request (collector and background compiler, apart): the
  mean over every counted window of every valid run, amortised as one long window would
  (all the work over all the requests), with a 95% confidence interval;
- their sum, the total per request, valid only when its interval fits inside the spread
  limit (the whole width of the interval at most the limit times the total).

Go's scheduler (icount/runtimes.py's SCHEDULER: parking, finding work, the network
poller, waking), where a window counted it, is a fourth figure: the mean per request over
the same windows, with a 95% interval over them (Student's t). It is the runtime waiting
for the next request. With idle arrival (serve/arrival.py: each request reaches a server
whose every thread is asleep) every request finds the server parked in its poller, so the
scheduler is a fixed part of each request (go-http plaintext: 6,036 ± 52 idle, 6,026 ± 57
with both CPUs busy) and the total holds it, its windows' spread in the interval. With the
closed loop how much of it a request costs follows the client's timing and the machine's
load (3,699 ± 99 idle, 3,863 ± 198 busy), which the spread rule cannot see (every window
of a run sees the same load): there, and in files measured before arrival was recorded,
it is shown beside the total and in neither figure.

How wide the runtime's work may be off is judged by one of two rules, the cell's
`runtime_work.rule` saying which:

The bound over spans (`span_bound`; runs whose detail says its windows were taken back
to back, `contiguous`). A collector driven by allocation is close to periodic in
requests: say its cumulative work G(n) after n requests grows by the same C over any p
requests (p its period, C one cycle's work: one collection of each kind, and what a JIT
does again after each, as V8 compiling anew the code a collection freed: runtimes.py).
Then over any
span of W contiguous requests, W = qp + s with 0 <= s < p, G(n+W) - G(n) lies in
[qC, (q+1)C] (G never falls, and s requests hold at most one cycle's work), as does
rW = (q + s/p)C, r = C/p the long-run rate: a span's work is off r x W by less than C,
whatever its phase, so r lies within C/W of the span's own mean, a span holding at most
ceil(W/p) + 1 collections and at least floor(W/p) - 1. C is read from the windows: the
largest of the largest mean call seen in one window and, along each run's span, the
range of its cumulative work less its own mean rate (a collection that spreads over
several windows rises there as one; a span shorter than a cycle sees part of it, and
runs whose spans saw different parts disagree: refused until longer spans see whole
cycles). Each run's span gives an interval; the rate lies
in all of them, so in their intersection, and the total's half-width is the farthest
end of it from the mean shown, never less than C over all the cell's requests (as one
span would be). It holds only as far as the assumption does, so it is
refused where the evidence says otherwise: the runs' intervals have no point in common
(the work is not periodic in requests), or the idle window after the reps counted more
of the runtime's work, with no request at all, than the largest collection seen (a
collector driven by the clock: its share of a request follows how long the request
took). It cannot see a collection rarer than the spans are long: where none fell in any
window, the bound is blind to it, as any count of these windows is. A bound, not a
confidence interval: it does not narrow as windows are added unless the spans grow.

The interval over windows (files whose runs were not one span each: written before the
bound, or a server whose connections closed between windows, leaving requests
uncounted there). Two parts, independent, added in quadrature: Student's t over the
windows' per-request figures (they differ by where the collections fell), and the
edges: the work comes in events
(calls into an entry point), and the requests a run's windows span hold one event more
or less than their share, so each run adds up to one event of uncertainty. Windows taken
back to back at a fixed phase to the collector can agree exactly; the edge term is what
keeps the interval honest then. It takes windows for independent samples, which a
periodic collector's are not, and so asks for far more windows than the bound does.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from icount import numfmt
from icount.results.details import Rep, ServeDetail

# Student's t, two-sided 95%, by degrees of freedom (1..30); beyond, the normal's 1.96
# plus the usual 2.4/df correction (within 0.2% of the exact quantile from 30 on)
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip
MAX_WINDOWS_ASKED = 10**6  # "more windows" beyond this is said as "many more"
RULE_SPAN = "span"  # runtime_work's "rule" where the bound over spans judged the total


def t95(df: int) -> float:
    if df < 1:
        return math.inf
    return _T95[df - 1] if df <= len(_T95) else 1.96 + 2.4 / df


@dataclass(frozen=True)
class RuntimeFigures:
    runtime: str
    mutator: float | None  # the cell's median (None when no run is valid)
    collector: float  # per request, mean over the windows
    compiler: float
    half_width: float  # of the 95% interval of collector + compiler per request
    windows: int
    total: float | None  # mutator + collector + compiler
    total_valid: bool
    reason: str | None  # why the total is not valid
    clock_subtracted: bool  # the clock's rate x window time was taken out of the mutator
    added_windows: int = 0  # of `windows`, those added for the interval (serve/runs.py)
    window_cap: str | None = None  # the cap that stopped a run's added windows, if one did
    # the scheduler's wait per request, mean over the windows, and its 95% half-width;
    # None where no window counted one. Never in `mutator`; in `total` only where
    # `scheduler_in_total` (idle arrival, see above).
    scheduler: float | None = None
    scheduler_half_width: float = math.inf
    scheduler_in_total: bool = False
    bound: SpanBound | None = None  # where the bound over spans judged the total

    @property
    def work(self) -> float:
        return self.collector + self.compiler


@dataclass(frozen=True)
class SpanBound:
    """The runtime's work per request as each run's span bounds it (the docstring)."""

    low: float  # the intersection of the runs' intervals (low > high: none)
    high: float
    collection: float  # C: the largest collection seen, in instructions
    spans: tuple[int, ...]  # each run's span, in requests
    refused: str | None = None  # why the assumption does not hold here

    def half_width(self, mean: float) -> float:
        """The half-width about `mean` that holds the intersection (inf where refused)."""
        if self.refused is not None:
            return math.inf
        # never narrower than one span holding all the cell's requests would be: runs'
        # intervals that barely meet would otherwise claim more than C allows
        return max(mean - self.low, self.high - mean, self.collection / sum(self.spans))


def _spans(details: Sequence[ServeDetail], inside: bool) -> list[list[tuple[float, int]]]:
    """Each run's span as (work, requests) steps in the order counted: its windows, and
    the idle window's runtime work where windows were added after it (inside the span)."""
    out = []
    for d in details:
        steps = [(r.totalled(inside), r.requests) for r in d.reps if r.collector is not None]
        idle = d.idle.runtime_work if d.idle is not None else None
        if idle and d.added_windows:
            at = len(d.reps) - d.added_windows
            steps.insert(at, (idle, 0))
        if steps:
            out.append(steps)
    return out


def _largest_collection(reps: Sequence[Rep], spans: Sequence[Sequence[tuple[float, int]]]) -> float:
    """C, read from the windows: the largest mean call seen in one window, or the widest
    range of a run's cumulative work less its own mean rate, whichever is larger. Its own
    rate, not the cell's: runs that disagree would otherwise widen C until every run's
    interval held the cell's mean, however far apart they were."""
    calls = max((r.runtime_work / r.runtime_calls for r in reps if r.runtime_calls), default=0.0)
    widest = 0.0
    for steps in spans:
        rate = sum(w for w, _ in steps) / max(sum(n for _, n in steps), 1)
        d = low = high = 0.0
        for work, requests in steps:
            d += work - rate * requests
            low, high = min(low, d), max(high, d)
        widest = max(widest, high - low)
    return max(calls, widest)


def span_bound(details: Sequence[ServeDetail], inside: bool = False,
               scale: float = 1.0) -> SpanBound | None:  # fmt: skip
    """The bound over the runs' spans (the docstring), or None where a run's windows were
    not one span (the interval over windows judges then). `inside`: the scheduler is
    part of the total; `scale` scales C (a caller asking how the need reads with a
    collection smaller than seen)."""
    if not details or not all(d.contiguous for d in details):
        return None
    spans = _spans(details, inside)
    reps = [r for d in details for r in d.reps if r.collector is not None]
    if not spans or not reps:
        return None
    requests = [sum(n for _, n in steps) for steps in spans]
    works = [sum(w for w, _ in steps) for steps in spans]
    seen = _largest_collection(reps, [[s for s in steps if s[1]] for steps in spans])
    idle = max((d.idle.runtime_work or 0.0 for d in details if d.idle is not None), default=0.0)
    seconds = next((d.idle.seconds for d in details if d.idle is not None), 0.0)
    if idle > seen:
        why = (
            f"the runtime's own work ran with no request: {numfmt.si(idle)} instructions in "
            f"the {seconds:g} s idle window, more than the largest collection seen in a "
            f"window ({numfmt.si(seen)}): driven by the clock, not by allocation, so its "
            "share of a request follows how long the request took, and no span bounds it"
        )
        return SpanBound(math.inf, -math.inf, seen * scale, tuple(requests), why)
    c = max(seen, _largest_collection(reps, spans)) * scale
    low = max((w - c) / n for w, n in zip(works, requests, strict=True))
    high = min((w + c) / n for w, n in zip(works, requests, strict=True))
    if low > high:
        why = (
            f"the runs' spans disagree by more than the largest collection seen "
            f"({numfmt.si(c)} instructions): the runtime's work is not periodic in requests "
            "over spans this short; longer ones (more windows a run: --max-windows, "
            "--max-extra-seconds) may each see whole cycles"
        )
        return SpanBound(low, high, c, tuple(requests), why)
    return SpanBound(low, high, c, tuple(requests))


def figures(
    details: Sequence[ServeDetail],
    mutator: float | None,
    valid: bool,
    max_spread: float,
    idle_arrival: bool = False,
) -> RuntimeFigures | None:
    """A cell's runtime figures from its valid runs' details, its median (the mutator),
    whether it is valid, its spread limit and whether its requests reached an idle
    server (the scheduler is then part of the total); None for a cell whose reps hold no
    runtime work (runtimes without a collector, cells measured before: nothing changes
    for them). It takes the cell's parts, not the Cell: model.py builds the Cell from
    these figures."""
    runtime = next((d.runtime for d in details if d.runtime), None)
    if runtime is None:
        return None
    reps = [r for d in details for r in d.reps if r.collector is not None]
    if not reps:
        return None
    requests = sum(r.requests for r in reps)
    collector = sum(r.collector or 0.0 for r in reps) / requests
    compiler = sum(r.compiler or 0.0 for r in reps) / requests
    sched = _scheduler(reps)
    inside = idle_arrival and sched[0] is not None
    per_window = [r.totalled(inside) / r.requests for r in reps]
    n = len(per_window)
    bound = span_bound(details, inside)
    if bound is not None:
        half = bound.half_width(sum(r.totalled(inside) for r in reps) / requests)
    else:
        spread_hw = t95(n - 1) * statistics.stdev(per_window) / math.sqrt(n) if n > 1 else math.inf
        work = sum(r.runtime_work for r in reps)
        calls = sum(r.runtime_calls or 0 for r in reps)
        event = work / calls if calls else 0.0
        edges_hw = len(details) * event / requests
        half = math.hypot(spread_hw, edges_hw)  # independent: where collections fell, and edges
    clock = any(d.clock_subtracted for d in details)
    added = sum(d.added_windows for d in details)
    cap = next((d.window_cap for d in details if d.window_cap), None)

    def out(total: float | None, total_valid: bool, reason: str | None) -> RuntimeFigures:
        return RuntimeFigures(runtime, mutator, collector, compiler, half, n, total,
                              total_valid, reason, clock, added, cap, sched[0], sched[1],
                              inside, bound)  # fmt: skip

    if mutator is None or not valid:
        return out(None, False, "the mutator's figure is not valid")
    # the scheduler's only where each request finds the server parked (the docstring)
    total = mutator + collector + compiler + ((sched[0] or 0.0) if inside else 0.0)
    limit = max_spread * total
    if 2 * half <= limit:
        return out(total, True, None)
    if bound is not None:
        return out(total, False, _span_reason(bound, half, details, total, max_spread, cap))
    return out(total, False,
               _reason(half, n, spread_hw, edges_hw, limit, total, max_spread, cap))  # fmt: skip


def _scheduler(reps: Sequence[Rep]) -> tuple[float | None, float]:
    """The scheduler's mean per request over the windows, and its 95% half-width (no
    interval from one window). A window that counted none among windows that did ran
    none: 0 there."""
    if all(r.scheduler is None for r in reps):
        return None, math.inf
    mean = sum(r.scheduler or 0.0 for r in reps) / sum(r.requests for r in reps)
    per_window = [(r.scheduler or 0.0) / r.requests for r in reps]
    n = len(per_window)
    half = t95(n - 1) * statistics.stdev(per_window) / math.sqrt(n) if n > 1 else math.inf
    return mean, half


def windows_to_fit(earlier: Sequence[ServeDetail], run: ServeDetail, runs: int,
                   max_spread: float, spread_scale: float = 1.0,
                   idle_arrival: bool = False) -> int | None:  # fmt: skip
    """The fewest windows `run` needs (its reps counted) for the cell's total to be valid,
    projected: its windows pooled with the cell's `earlier` runs', and each of the cell's
    `runs` still to come taking as many windows alike `run`'s. None when more than
    MAX_WINDOWS_ASKED would be needed or `run` holds no runtime work. `spread_scale`
    scales the spread measured between windows (the caller asks how the need reads with
    a spread narrower than a few windows measured)."""
    mine = [r for r in run.reps if r.collector is not None]
    if not run.runtime or not mine:
        return None
    before = [r for d in earlier for r in d.reps if r.collector is not None]
    seen = before + mine
    inside = idle_arrival and any(r.scheduler is not None for r in seen)
    per_window = [r.totalled(inside) / r.requests for r in seen]
    requests = sum(r.requests for r in seen)
    lives = max(runs, len(earlier) + 1)  # runs in the cell, each with its edges
    alike = lives - len(earlier)  # this run and those to come
    values = [statistics.median(d.mutator_per_request) for d in (*earlier, run)]
    total = statistics.median(values) + sum(r.totalled(inside) for r in seen) / requests
    limit = max_spread * total
    per_rep = sum(r.requests for r in mine) / len(mine)
    if span_bound([*earlier, run], inside) is not None:
        return _span_windows(earlier, run, alike - 1, limit, spread_scale, inside, per_rep)
    if len(per_window) < 2:
        return len(run.reps) + 1  # a second window is what gives a spread at all
    sd = statistics.stdev(per_window) * spread_scale
    work = sum(r.runtime_work for r in seen)
    calls = sum(r.runtime_calls or 0 for r in seen)
    event = work / calls if calls else 0.0

    def fits(m: int) -> bool:
        n = len(before) + m * alike
        spread_hw = t95(n - 1) * sd / math.sqrt(n)
        edges_hw = lives * event / (sum(r.requests for r in before) + m * alike * per_rep)
        return 2 * math.hypot(spread_hw, edges_hw) <= limit

    return _fewest(fits, len(run.reps))


def span_refused(details: Sequence[ServeDetail], idle_arrival: bool = False) -> str | None:
    """Why the bound over these runs' spans does not hold, or None (it holds, or the
    interval over windows judges them): no window added would bring it in."""
    inside = idle_arrival and any(r.scheduler is not None for d in details for r in d.reps)
    bound = span_bound(details, inside)
    # runs that disagree may agree over longer spans; a clock-driven collector never will
    return None if bound is None or math.isfinite(bound.low) else bound.refused


def _span_windows(earlier: Sequence[ServeDetail], run: ServeDetail, to_come: int, limit: float,
                  scale: float, inside: bool, per_rep: float) -> int | None:  # fmt: skip
    """windows_to_fit under the bound over spans: `run`'s span lengthened window by window
    at its own mean, the runs `to_come` alike it about the cell's mean, C as seen (times
    `scale`). None where the bound is refused: no window brings it in."""
    bound = span_bound([*earlier, run], inside, scale)
    if bound is None or not math.isfinite(bound.low):
        return None
    spans = _spans([*earlier, run], inside)
    works = [sum(w for w, _ in s) for s in spans]
    requests = [sum(n for _, n in s) for s in spans]
    have = len(run.reps)
    c = bound.collection
    if bound.refused is not None:
        # spans that saw different parts of a cycle: projected with a C as large as
        # their disagreement, which longer spans may see as one cycle
        rate = sum(works) / sum(requests)
        c += max(abs(w - rate * n) for w, n in zip(works, requests, strict=True))

    def fits(m: int) -> bool:
        grown = requests[-1] + (m - have) * per_rep
        w = [*works[:-1], works[-1] * grown / requests[-1]]
        n = [*requests[:-1], grown]
        mean = sum(w) / sum(n)
        low = max(max((a - c) / b for a, b in zip(w, n, strict=True)),
                  mean - c / grown if to_come else -math.inf)  # fmt: skip
        high = min(min((a + c) / b for a, b in zip(w, n, strict=True)),
                   mean + c / grown if to_come else math.inf)  # fmt: skip
        half = (
            max(mean - low, high - mean, c / (sum(n) + to_come * grown))
            if low <= high
            else c / grown
        )
        return 2 * half <= limit

    return _fewest(fits, have)


def _fewest(fits: Callable[[int], bool], have: int) -> int | None:
    """The fewest windows from `have` on that fit (None: more than MAX_WINDOWS_ASKED).
    Every part of the interval shrinks as windows are added, so doubling then halving
    finds it."""
    if fits(have):
        return have
    high = have
    while not fits(high):
        if high >= MAX_WINDOWS_ASKED:
            return None
        high *= 2
    low = high // 2
    while low + 1 < high:
        mid = (low + high) // 2
        if fits(mid):
            high = mid
        else:
            low = mid
    return high


def _reason(half: float, n: int, spread_hw: float, edges_hw: float, limit: float,
            total: float, max_spread: float, cap: str | None) -> str:  # fmt: skip
    width = 2 * half / total * 100
    head = (
        f"the total's 95% interval is {width:.2f}% of it over {n} window"
        f"{'s' if n != 1 else ''}, wider than the {max_spread * 100:g}% limit"
    )
    if cap is not None:  # windows were added until a cap stopped them
        head += f" (more windows than the cap of {cap} a run allows)"
    if n < 2 or not math.isfinite(spread_hw):
        return f"{head}: one window gives no interval; measure at least 2 (--reps)"
    if edges_hw * 2 >= limit:
        return (
            f"{head}: the runtime's work comes in events too large for the requests "
            "counted; longer windows (--requests) would bring it in"
        )

    # both parts shrink with more windows: the spread as t/sqrt(n), the edges as 1/n.
    # Where no run added windows (files written before they were), t stays at the
    # windows counted, as those files were first shown; where a cap stopped them, t at
    # the windows the estimate is for, as the runs projected it (windows_to_fit): a
    # fixed t overestimates, 51 more windows where 12 fit
    def fits(m: int) -> bool:
        spread = spread_hw if cap is None else spread_hw / t95(n - 1) * t95(m - 1)
        return 2 * math.hypot(spread * math.sqrt(n / m), edges_hw * n / m) <= limit

    high = _fewest(fits, n)
    if high is None or high >= MAX_WINDOWS_ASKED:
        return f"{head}: many more windows would be needed"
    return f"{head}: about {high - n} more window{'s' if high - n != 1 else ''} would bring it in"


def _span_reason(bound: SpanBound, half: float, details: Sequence[ServeDetail], total: float,
                 max_spread: float, cap: str | None) -> str:  # fmt: skip
    if bound.refused is not None:
        return f"no bound over the runs' spans holds: {bound.refused}"
    spans = _requests_range(bound.spans)
    head = (
        f"the total's bound over {len(bound.spans)} span{'s' if len(bound.spans) != 1 else ''} "
        f"of {spans} requests is {2 * half / total * 100:.2f}% of it, wider than the "
        f"{max_spread * 100:g}% limit: the largest collection seen, {numfmt.si(bound.collection)} "
        "instructions, may fall either side of a span's edges"
    )
    if cap is not None:
        head += f" (a run's windows stopped at {cap})"
    # each interval is C/W wide about its span's mean: W = 2C / (limit x total) brings it in
    need = 2 * bound.collection / (max_spread * total)
    per_window = [sum(r.requests for r in d.reps) / len(d.reps) for d in details if d.reps]
    now = len(bound.spans) and sum(bound.spans) / len(bound.spans)
    more = math.ceil((need - now) / max(statistics.mean(per_window), 1.0))
    if more < 1 or not math.isfinite(need) or more >= MAX_WINDOWS_ASKED:
        return f"{head}: longer spans would bring it in"
    # a projection at the C seen: a runtime whose work still moves shows a larger C as its
    # spans grow (docs/measuring.md has Express's), and then needs more than said
    return (
        f"{head}: about {more} more window{'s' if more != 1 else ''} a run would bring it in, "
        "if no larger collection shows in them"
    )


def _requests_range(spans: Sequence[int]) -> str:
    low, high = min(spans), max(spans)
    return f"{low:,}" if low == high else f"{low:,}-{high:,}"


def to_json(f: RuntimeFigures) -> dict[str, Any]:
    """The figures as a cell's JSON shows them (derived from its runs, like its median)."""
    return (
        {
            "runtime": f.runtime,
            "mutator": f.mutator,
            "collector": round(f.collector, 3),
            "compiler": round(f.compiler, 3),
            # one window has no interval: null, as JSON has no infinity
            "interval_95": round(f.half_width, 3) if math.isfinite(f.half_width) else None,
            "windows": f.windows,
            "total": None if f.total is None else round(f.total, 3),
            "total_valid": f.total_valid,
            "total_reason": f.reason,
            "clock_subtracted": f.clock_subtracted,
        }
        | _added_json(f)
        | _scheduler_json(f)
        | _bound_json(f)
    )


def _bound_json(f: RuntimeFigures) -> dict[str, Any]:
    """Written only where the bound over spans judged the total: files from before read
    as they did, and a new one says which rule judged it."""
    if f.bound is None:
        return {}
    return {"rule": RULE_SPAN, "collection": round(f.bound.collection, 3),
            "spans": list(f.bound.spans)}  # fmt: skip


def _scheduler_json(f: RuntimeFigures) -> dict[str, Any]:
    """Written only where a window counted the scheduler: other cells read as they did."""
    if f.scheduler is None:
        return {}
    return {
        "scheduler": round(f.scheduler, 3),
        "scheduler_interval_95": _finite(f.scheduler_half_width),
    }


def _finite(x: float) -> float | None:
    return round(x, 3) if math.isfinite(x) else None


def _added(f: RuntimeFigures) -> str:
    return f", {f.added_windows} added for the interval" if f.added_windows else ""


def _added_json(f: RuntimeFigures) -> dict[str, Any]:
    """Written only where windows were added: cells measured before read as they did."""
    out: dict[str, Any] = {}
    if f.added_windows:
        out["added_windows"] = f.added_windows
    if f.window_cap is not None:
        out["window_cap"] = f.window_cap
    return out


CSV_COLUMNS = ("runtime", "mutator", "collector", "compiler", "interval_95", "total",
               "total_valid")  # fmt: skip
# after them, only in a file where some cell counted the scheduler (files measured before,
# and every runtime but Go's, keep their columns)
SCHEDULER_CSV_COLUMNS = ("scheduler", "scheduler_interval_95")


def csv_columns(figs: Sequence[RuntimeFigures | None]) -> tuple[str, ...]:
    """The runtime's columns of a results CSV whose cells have these figures."""
    if any(f is not None and f.scheduler is not None for f in figs):
        return (*CSV_COLUMNS, *SCHEDULER_CSV_COLUMNS)
    return CSV_COLUMNS


def csv_values(f: RuntimeFigures | None, scheduler: bool = False) -> list[object]:
    """A cell's runtime columns; `scheduler`: the file has the scheduler's columns."""
    return _csv_values(f) + (_scheduler_csv(f) if scheduler else [])


def _scheduler_csv(f: RuntimeFigures | None) -> list[object]:
    if f is None or f.scheduler is None:
        return [""] * len(SCHEDULER_CSV_COLUMNS)
    half = f.scheduler_half_width
    return [f"{f.scheduler:.3f}", f"{half:.3f}" if math.isfinite(half) else ""]


def _csv_values(f: RuntimeFigures | None) -> list[object]:
    if f is None:
        return [""] * len(CSV_COLUMNS)
    return [
        f.runtime,
        "" if f.mutator is None else numfmt.plain(f.mutator),
        f"{f.collector:.3f}",
        f"{f.compiler:.3f}",
        f"{f.half_width:.3f}" if math.isfinite(f.half_width) else "",
        "" if f.total is None else f"{f.total:.3f}",
        "true" if f.total_valid else "false",
    ]


def note(f: RuntimeFigures) -> str:
    """One line for the table's notes: the three figures, `~` on a total not valid."""
    si = numfmt.si
    work = f"collector {si(f.collector)}"
    if f.compiler:
        work += f" + compiler {si(f.compiler)}"
    mutator = "-" if f.mutator is None else si(f.mutator)
    if f.bound is not None:
        b = f.bound
        seen = (
            f"a collection up to {si(b.collection)}"
            if b.collection
            else "no collection in any window: none rarer than that is seen"
        )
        spread = (f"±{si(f.half_width)}" if math.isfinite(f.half_width) else "(no bound)") + (
            f" (mean of {f.windows} windows{_added(f)}; bound over {len(b.spans)} "
            f"span{'s' if len(b.spans) != 1 else ''} of {_requests_range(b.spans)} requests, "
            f"{seen})"
        )
    elif math.isfinite(f.half_width):
        spread = f"±{si(f.half_width)} (mean of {f.windows} windows{_added(f)}, 95%)"
    else:
        spread = f"(mean of {f.windows} window{'s' if f.windows != 1 else ''}: no interval)"
    head = f"{f.runtime}: mutator {mutator} per request (the figure above), {work} {spread}"
    clock = (
        "; the clock's rate x window time is taken out of the mutator" if f.clock_subtracted else ""
    )
    sched = _scheduler_note(f)
    if f.total is None:
        return f"{head}; no total ({f.reason}){sched}{clock}"
    if f.total_valid:
        return f"{head}; total {si(f.total)}{sched}{clock}"
    return f"{head}; total ~{si(f.total)}: {f.reason}{sched}{clock}"


def _scheduler_note(f: RuntimeFigures) -> str:
    if f.scheduler is None:
        return ""
    half = f.scheduler_half_width
    spread = f"±{numfmt.si(half)} (95%)" if math.isfinite(half) else "(one window: no interval)"
    if f.scheduler_in_total:
        return (
            f"; the scheduler {numfmt.si(f.scheduler)} {spread} in the total: each request "
            "reached an idle server and found it parked (--arrival idle)"
        )
    return (
        f"; beside it the scheduler {numfmt.si(f.scheduler)} {spread}, in neither the "
        "figure nor the total: its wait for requests not yet arrived depends on the "
        "client's timing and the machine's load"
    )
