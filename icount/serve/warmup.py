"""Warm-up: how a server reaches the state it is counted in, and how icount knows.

A JIT runtime's per-request count falls for thousands of requests (Node's http module:
~414k after 100 requests, ~56k after ~9,000; Express 1.05M after 1000, a plateau of
~610k to 37,000, then 556k after 135,000),
so a count taken too early is valid-looking and wrong. Three defences:

- `--warmup auto` (the default for known JIT runtimes started with `--cmd`): probe
  windows of `--requests` requests, counted, with cheap warm-up between them that doubles
  each time (uninstrumented under callgrind, ~5x faster), until two probes in a row
  agree within half the spread limit, or three, noisy but no longer falling, agree
  within it. The second of two was taken after about twice as many requests as the
  first, so they agree only where the curve is flat over a doubling of the requests
  served, not where two adjacent windows of a slowly falling curve happen to agree (the
  old rule). Capped in requests and in time; when it gives up, the curve is kept and
  the reason says what to try: more warm-up for a curve still falling, longer windows
  for one that stopped falling but whose windows differ by more than the limit (a
  collector). A curve that falls too slowly to show between probes is caught by the
  next defence.
- Whatever the warm-up, the reps of every run are checked: three or more reps that fall
  window after window, by half the limit or more, mean the server was still warming up,
  and the run is invalid with the reason, never a valid cell.
- The curve (requests served, per-request figure) is recorded in the results file.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from icount.stats import summarize

MIN_PROBES = 3  # the first two probes are 1 and 3 windows in: too early to call
AUTO_MAX_REQUESTS = 200_000  # requests served by the end of an auto warm-up, at most
AUTO_MAX_SECONDS = 900.0  # and wall time
# Runtimes that compile as they run: their --cmd servers warm up with `auto` by default.
JIT_RUNTIMES = frozenset({"node", "nodejs", "bun", "deno", "java", "pypy", "pypy3", "dotnet"})


class WarmupFailed(Exception):
    """`--warmup auto` gave up; the message says where the curve was going."""

    def __init__(self, message: str, curve: Sequence[tuple[int, float]]) -> None:
        super().__init__(message)
        self.curve = tuple(curve)


@dataclass(frozen=True)
class AutoLimits:
    max_requests: int = AUTO_MAX_REQUESTS
    max_seconds: float = AUTO_MAX_SECONDS


def is_jit(program: str) -> bool:
    """True for a server started as a known JIT runtime (node, bun, java, ...)."""
    name = Path(program).name
    return name in JIT_RUNTIMES or name.rstrip("0123456789.") in JIT_RUNTIMES


def settled(values: Sequence[float], limit: float) -> bool:
    """After MIN_PROBES probes: the last two per-request figures agree within `limit`
    (half the spread limit), or the last three lie within twice that and do not fall
    probe after probe. The second rule is for a flat curve whose windows differ by a
    little more than half the limit (a collector that runs in some windows): two
    neighbours may not agree within `limit` long after the curve stopped falling. A
    curve still falling by more than the noise falls across the three probes and is
    left to go on; windows noisier than the limit settle neither way, and the advice
    when auto gives up says so (Express's 1000-request windows differ by up to ~9%)."""
    if len(values) < MIN_PROBES or min(values[-3:]) <= 0:
        return False
    a, b = values[-2], values[-1]
    if abs(a - b) / b < limit:
        return True
    last = values[-3:]
    return not _falls_throughout(last) and summarize(last).spread < 2 * limit


def suggest(served: int) -> int:
    """A --warmup N to try after an auto warm-up gave up at `served`: twice as far,
    rounded up to a readable number."""
    target = max(2 * served, 1000)
    magnitude: int = 10 ** (len(str(target)) - 2)
    return -(-target // magnitude) * magnitude  # rounded up


def auto_warmup(
    probe: Callable[[int], float],
    cheap: Callable[[int], None],
    probe_requests: int,
    max_spread: float,
    note: Callable[[str], None],
    limits: AutoLimits = AutoLimits(),
    clock: Callable[[], float] = time.monotonic,
) -> tuple[int, tuple[tuple[int, float], ...]]:
    """Probe windows with growing cheap warm-up between them until the curve settles.

    `probe(n)` counts a window of n requests and returns its per-request figure;
    `cheap(n)` serves n requests uncounted. Returns (requests served, the curve); raises
    WarmupFailed when the caps are reached first.
    """
    limit = max_spread / 2
    curve: list[tuple[int, float]] = []
    served = 0
    gap = probe_requests
    start = clock()
    while True:
        note(f"warm-up auto: probe {len(curve) + 1} after {served} requests")
        value = probe(probe_requests)
        served += probe_requests
        curve.append((served, round(value, 3)))
        values = [v for _, v in curve]
        if settled(values, limit):
            return served, tuple(curve)
        elapsed = clock() - start
        if served + gap > limits.max_requests or elapsed > limits.max_seconds:
            first, last = values[0], values[-1]
            where = (
                f"from {first:.6g} to {last:.6g} per request over {served} requests"
                if len(values) > 1
                else f"{last:.6g} per request"
            )
            cap = (
                f"{limits.max_requests} requests"
                if served + gap > limits.max_requests
                else f"{limits.max_seconds:g} s"
            )
            raise WarmupFailed(
                f"--warmup auto did not settle within {cap}: the count went {where}, "
                + _advice(values, served, probe_requests, max_spread),
                curve,
            )
        cheap(gap)
        served += gap
        gap *= 2


def _advice(values: Sequence[float], served: int, window: int, max_spread: float) -> str:
    """What to try when auto gave up. A curve still falling needs more warm-up; one
    that stopped falling but whose windows differ by more than the limit (a collector
    running in some windows and not others) needs longer windows: such noise shrinks
    about as the window grows, whatever the warm-up."""
    last = values[-3:]
    falling = len(last) < 3 or _falls_throughout(last)
    spread = summarize(last).spread if min(last) > 0 else 0.0
    if not falling and spread >= max_spread:
        # Such noise shrinks about as the window grows: a window `spread / max_spread`
        # times longer lands on the limit itself (a collector every 1000 requests, 1000-
        # request windows 8.7% apart: 8700-request windows read 1.05% apart), so twice
        # that, which leaves the spread half the limit; never the window already in use
        longer = suggest(max(int(window * spread / max_spread), window))
        return (
            f"it stopped falling but its windows differ by {_range_text(last)} (work that "
            f"runs in some windows and not others, such as a collector): longer windows "
            f"(--requests {longer} or more) would average it"
        )
    apart = f"the last two probes {_range_text(values[-2:])} apart; " if len(values) > 1 else ""
    return f"{apart}try --warmup {suggest(served)}"


def _range_text(values: Sequence[float]) -> str:
    s = summarize(values)
    return f"{s.spread * 100:.2f}%" if s.median else "?"


def _falls_throughout(values: Sequence[float]) -> bool:
    """Each value lower than the one before."""
    return all(b < a for a, b in itertools.pairwise(values))


def moved_after_settling(
    curve: Sequence[tuple[int, float]], per_request: Sequence[float], max_spread: float
) -> str | None:
    """Why the reps after an auto warm-up contradict it, or None. The probe it settled
    on and the median of the reps that followed measure the same thing; when they differ
    by the limit or more, auto stopped on a plateau the curve later fell from (Express's
    ~610k from 6,000 to 37,000 requests, 556k after 135,000), or the windows are noisier
    than the limit, and either way the cell would print a figure auto did not vouch for."""
    if not curve or not per_request:
        return None
    probe = curve[-1][1]
    median = statistics.median(per_request)
    apart = abs(median - probe) / probe if probe else 0.0
    if apart < max_spread:
        return None
    return (
        f"the count moved after --warmup auto settled: its last probe read {probe:.6g} per "
        f"request, the reps after it {median:.6g} ({apart * 100:.2f}% apart, the limit is "
        f"{max_spread * 100:g}%): the curve was on a plateau it later fell from, or its "
        f"windows are noisier than the limit; use --warmup {suggest(curve[-1][0] * 2)} or "
        "longer windows (--requests)"
    )


def still_warming(
    per_request: Sequence[float], max_spread: float, warmed: int = 0, auto: bool = False
) -> str | None:
    """Why the reps of one process say it was still warming up, or None: at least three
    reps, each lower than the one before by an eighth of the limit or more, and by half
    the limit or more from first to last. Two reps cannot tell a trend from noise (a
    clock tick in the first window), and neither can three that fall by chance, one step
    of the fall too small to be a trend. `warmed`: the requests served before the reps,
    `auto` after `--warmup auto`; the advice names a setting these rules have not refused
    yet (more warm-up than was tried, never auto again after auto)."""
    if len(per_request) < 3:
        return None
    steps = [(a - b) / b if b else 0.0 for a, b in itertools.pairwise(per_request)]
    drop = (per_request[0] - per_request[-1]) / per_request[-1] if per_request[-1] else 0.0
    if min(steps) >= max_spread / 8 and drop >= max_spread / 2:
        shown = ", ".join(f"{v:.6g}" for v in per_request)
        more = f"--warmup {suggest(warmed)}" if warmed else "a larger --warmup N"
        tried_auto = auto or warmed >= AUTO_MAX_REQUESTS  # auto would stop sooner
        advice = more if tried_auto else f"--warmup auto or {more}"
        return (
            f"still warming up: each window counted less than the one before ({shown} per "
            f"request, {drop * 100:.2f}% from first to last); use {advice}"
        )
    return None
