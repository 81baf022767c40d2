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

The interval has two parts, independent, added in quadrature: Student's t over the
windows' per-request figures (they differ by where the collections fell), and the
edges: the work comes in events
(calls into an entry point), and the requests a run's windows span hold one event more
or less than their share, so each run adds up to one event of uncertainty. Windows taken
back to back at a fixed phase to the collector can agree exactly; the edge term is what
keeps the interval honest then.
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

    @property
    def work(self) -> float:
        return self.collector + self.compiler


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
    spread_hw = t95(n - 1) * statistics.stdev(per_window) / math.sqrt(n) if n > 1 else math.inf
    work = sum(r.runtime_work for r in reps)
    calls = sum(r.runtime_calls or 0 for r in reps)
    event = work / calls if calls else 0.0
    edges_hw = len(details) * event / requests
    half = math.hypot(spread_hw, edges_hw)  # independent: where collections fell, and edges
    clock = any(d.clock_subtracted for d in details)
    added = sum(d.added_windows for d in details)
    cap = next((d.window_cap for d in details if d.window_cap), None)
    if mutator is None or not valid:
        return RuntimeFigures(runtime, mutator, collector, compiler, half, n, None, False,
                              "the mutator's figure is not valid", clock, added,
                              cap, *sched, inside)  # fmt: skip
    # the scheduler's only where each request finds the server parked (the docstring)
    total = mutator + collector + compiler + ((sched[0] or 0.0) if inside else 0.0)
    limit = max_spread * total
    if 2 * half <= limit:
        return RuntimeFigures(runtime, mutator, collector, compiler, half, n, total, True,
                              None, clock, added, cap, *sched, inside)  # fmt: skip
    why = _reason(half, n, spread_hw, edges_hw, limit, total, max_spread, cap)
    return RuntimeFigures(runtime, mutator, collector, compiler, half, n, total, False, why,
                          clock, added, cap, *sched, inside)  # fmt: skip


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
    if len(per_window) < 2:
        return len(run.reps) + 1  # a second window is what gives a spread at all
    sd = statistics.stdev(per_window) * spread_scale
    work = sum(r.runtime_work for r in seen)
    requests = sum(r.requests for r in seen)
    calls = sum(r.runtime_calls or 0 for r in seen)
    event = work / calls if calls else 0.0
    lives = max(runs, len(earlier) + 1)  # runs in the cell, each with its edges
    alike = lives - len(earlier)  # this run and those to come
    values = [statistics.median(d.mutator_per_request) for d in (*earlier, run)]
    total = statistics.median(values) + sum(r.totalled(inside) for r in seen) / requests
    limit = max_spread * total
    per_rep = sum(r.requests for r in mine) / len(mine)

    def fits(m: int) -> bool:
        n = len(before) + m * alike
        spread_hw = t95(n - 1) * sd / math.sqrt(n)
        edges_hw = lives * event / (sum(r.requests for r in before) + m * alike * per_rep)
        return 2 * math.hypot(spread_hw, edges_hw) <= limit

    return _fewest(fits, len(run.reps))


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
    )


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
    spread = (
        f"±{si(f.half_width)} (mean of {f.windows} windows{_added(f)}, 95%)"
        if math.isfinite(f.half_width)
        else f"(mean of {f.windows} window{'s' if f.windows != 1 else ''}: no interval)"
    )
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
