"""Why the windows of a cell differ: the functions whose per-request cost differs most
between its lowest and its highest window.

A spread is a measurement too. A function that runs in some windows and not in others
(periodic work, a cache that fills) shows up when the two windows' profiles are compared
function by function, which tells a user what moved and that longer windows will average
it, where a bare "spread 8%" tells nothing.

A collected runtime's cell is its mutator (icount/results/runtime.py): its windows' own
work (collector, compiler, Go's scheduler) is counted apart, so the spread that matters
is the mutator windows', and the functions that explain it are the mutator's. Stated of
the whole counts, the note named the work already counted apart as what moved the median
(Go's scanblock, netpoll and stealWork, where the mutator's windows agreed). Where the
runtime's work is found by the self cost of its functions (Go's, icount/runtimes.py),
the same matching takes those functions out of the comparison; where it is found
inclusively below entry points (V8's marking below `Heap::CollectGarbage`), a window's
self costs by name cannot tell the runtime's functions from the request's, and the note
says that what it names includes them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icount import runtimes
from icount.results.details import Rep
from icount.spread_note import MUTATOR, OF_WINDOW
from icount.stats import summarize

EXPLAIN_FROM = 0.25  # explain spreads of a quarter of --max-spread and more
TOP = 5  # functions named
# what runtime_work counts by self cost: these functions' self costs are the runtime's
_BY_SELF = (runtimes.SELF, runtimes.SCHEDULER)


@dataclass(frozen=True)
class Window:
    """One counted window of a cell, with the self instructions of its functions."""

    label: str  # "run 2 rep 1"
    rep: Rep
    functions: Mapping[str, float]
    # a collected runtime's window: its figure per request, the run's mutator
    # (ServeDetail.mutator: the clock's share out where it was subtracted); None: the
    # window's instructions less the runtime's work counted apart
    mutator: float | None = None

    @property
    def figure(self) -> float:
        """What the cell's median is taken of: the mutator where the runtime's work is
        counted apart, the whole window elsewhere."""
        if not _collected(self.rep):
            return self.rep.per_request
        if self.mutator is not None:
            return self.mutator
        return (self.rep.instructions - self.rep.apart) / self.rep.requests


def _collected(rep: Rep) -> bool:
    return rep.collector is not None or rep.scheduler is not None


def explain(windows: Sequence[Window], max_spread: float) -> dict[str, Any] | None:
    """The functions behind the spread of `windows`, or None when the spread is below
    EXPLAIN_FROM of the limit (or there is nothing to compare). For a collected runtime,
    the spread of the mutator's windows and the functions behind it (`figure`,
    `whole_spread`, `functions_of` say so). Deterministic: ties in size are broken by
    name."""
    if len(windows) < 2:
        return None
    collected = any(_collected(w.rep) for w in windows)
    summary = summarize([w.figure for w in windows])
    spread = summary.spread if summary.median else 0.0
    if spread < max_spread * EXPLAIN_FROM:
        return None
    low = min(windows, key=lambda w: (w.figure, w.label))
    high = max(windows, key=lambda w: (w.figure, w.label))
    of = OF_WINDOW
    lows, highs = low.functions, high.functions
    if collected:
        split = [_mutator_functions(w) for w in (low, high)]
        if split[0] is not None and split[1] is not None:
            of, (lows, highs) = MUTATOR, (split[0], split[1])
    lows, highs = _pooled(lows), _pooled(highs)
    deltas = {
        name: highs.get(name, 0) / high.rep.requests - lows.get(name, 0) / low.rep.requests
        for name in set(lows) | set(highs)
    }
    top = sorted(deltas.items(), key=lambda kv: (-abs(kv[1]), kv[0]))[:TOP]
    # the share of what the named functions add up to between the two windows: the
    # mutator's gap, or the whole windows' where the runtime's work is among them
    gap = high.figure - low.figure
    if collected and of == OF_WINDOW:
        gap = high.rep.per_request - low.rep.per_request
    out = {
        "spread": round(spread, 6),
        "low": {"window": low.label, "per_request": round(low.figure, 3)},
        "high": {"window": high.label, "per_request": round(high.figure, 3)},
        "functions": [[name, round(delta, 1)] for name, delta in top],
        "explained": round(sum(d for _, d in top) / gap, 3) if gap else 0.0,
    }
    if collected:
        whole = summarize([w.rep.per_request for w in windows])
        out |= {
            "figure": MUTATOR,
            "whole_spread": round(whole.spread if whole.median else 0.0, 6),
            "functions_of": of,
        }
    return out


def _mutator_functions(window: Window) -> dict[str, float] | None:
    """The window's functions less the runtime's, where the runtime's work counted apart
    is exactly the self cost of functions the runtime's table names by self cost (Go,
    icount/runtimes.py; matched as runtime_work matches them: the first entry whose
    pattern matches the name, without its recursion level, decides). None where the
    work counted apart is not that sum: entry points counted inclusively (V8, HotSpot,
    --collector), whose callees no name tells apart."""
    runtime = runtimes.detect(list(window.functions))
    if runtime is None or not any(e.kind in _BY_SELF for e in runtime.entries):
        return None
    mine: dict[str, float] = {}
    matched = 0.0
    for name, cost in window.functions.items():
        if _self_kind(runtime.name, _RECURSION.sub("", name)):
            matched += cost
        else:
            mine[name] = cost
    # runtime_work sums integer self costs; rounding allows for a part of an instruction
    if abs(matched - window.rep.apart) > max(1.0, 1e-9 * window.rep.instructions):
        return None
    return mine


@functools.cache
def _entries(runtime: str) -> tuple[tuple[re.Pattern[str], bool], ...]:
    table = next(r for r in runtimes.TABLE if r.name == runtime)
    return tuple((re.compile(e.pattern), e.kind in _BY_SELF) for e in table.entries)


def _self_kind(runtime: str, base: str) -> bool:
    """Whether runtime_work counts `base`'s self cost as the runtime's."""
    for rx, by_self in _entries(runtime):
        if rx.fullmatch(base):
            return by_self
    return False


UNNAMED = "[code without a symbol: JIT-compiled or stripped]"
_HEX = re.compile(r"0x[0-9a-fA-F]+")
# callgrind's --separate-recs (2 by default) names a function's recursive activations
# `name'2`, `name'3`...: the same code, pooled with its first level
_RECURSION = re.compile(r"'[0-9]+$")


def _pooled(functions: Mapping[str, float]) -> dict[str, float]:
    """Functions by name, the ones callgrind knows only by address pooled into one:
    a JIT places its code at different addresses in each process (and moves it), so
    two windows compared address by address show pairs of +888 and -888 that are the
    same code, where the pool shows what the JIT's code costs more or less. (Code of a
    stripped binary lands in the same pool: its addresses are stable, but it has no
    name to show either.) A recursion level (`'2`) joins its function."""
    out: dict[str, float] = {}
    for name, cost in functions.items():
        base = _RECURSION.sub("", name)
        key = UNNAMED if _HEX.fullmatch(base) else base
        out[key] = out.get(key, 0.0) + cost
    return out


# Code without a symbol is noted from this share of a cell's instructions. Both notes
# that name functions (a spread's causes, above) and --collector patterns see code only by
# its name; Debian's stripped packages left 18-25% of a window without one (php-cli's
# `php -S` 18%, nginx 24%, lighttpd 25%, 2026-12-07), a JIT's code 30% (node-http), where
# the bundled c-epoll, built with symbols, leaves none (0 of its 882 per request). 5% is
# five times the default --max-spread: unnamed code that large can hold all of a spread's
# cause, or a collector, out of sight.
UNSYMBOLIZED_NOTED = 0.05


def unsymbolized_share(windows: Sequence[Window]) -> float | None:
    """The share of the windows' instructions in code callgrind names only by address."""
    total = sum(w.rep.instructions for w in windows)
    if total <= 0:
        return None
    unnamed = sum(
        cost
        for w in windows
        for name, cost in w.functions.items()
        if _HEX.fullmatch(_RECURSION.sub("", name))
    )
    return unnamed / total


def naming_notes(windows: Sequence[Window], collectors: Sequence[str]) -> list[str]:
    """What the names in a cell's windows cannot tell: the share of its instructions in
    code without a symbol, where it is UNSYMBOLIZED_NOTED or more, with the remedy (and,
    where no runtime was recognised, that a collector it hides is in the figure); and
    each --collector pattern that matched no function in any window (nothing was
    counted apart for it: a collector of 0 would say it cost nothing)."""
    if not windows:
        return []
    notes = []
    share = unsymbolized_share(windows)
    if share is not None and share >= UNSYMBOLIZED_NOTED:
        notes.append(
            f"{share * 100:.0f}% of the instructions ran in code without a symbol (a "
            "stripped binary or library, or a JIT's compiled code), which the notes that "
            "name functions and --collector patterns cannot see: installing the debug "
            "symbols of the server and its libraries names it (Debian: their -dbgsym "
            "packages, from the debian-debug archive, or debuginfod); a JIT's code has none"
            + (
                ""
                if any(w.rep.collector is not None for w in windows)
                else "; no collected runtime was recognised in it, so a collector's or a "
                "JIT compiler's work, if the server has one, is in the figure, not apart"
            )
        )
    names = {_RECURSION.sub("", name) for w in windows for name in w.functions}
    for pattern in collectors:
        rx = re.compile(pattern)
        if not any(rx.fullmatch(name) for name in names):
            notes.append(
                f"warning: --collector {pattern!r} matched no function in any window: "
                "nothing was counted apart for it (a stripped library names none of its "
                "own functions: see its debug symbols)"
            )
    return notes
