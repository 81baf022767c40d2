"""Why the windows of a cell differ: the functions whose per-request cost differs most
between its lowest and its highest window.

A spread is a measurement too. Go's 1000-request windows differ by 7-9% because its
garbage collector runs in some and not in others: comparing the two windows' profiles
function by function names `runtime.scanobject`, `gcDrain` and friends, which tells a
user that longer windows will average it, where a bare "spread 8%" tells nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icount.results.details import Rep
from icount.stats import summarize

EXPLAIN_FROM = 0.25  # explain spreads of a quarter of --max-spread and more
TOP = 5  # functions named


@dataclass(frozen=True)
class Window:
    """One counted window of a cell, with the self instructions of its functions."""

    label: str  # "run 2 rep 1"
    rep: Rep
    functions: Mapping[str, float]


def explain(windows: Sequence[Window], max_spread: float) -> dict[str, Any] | None:
    """The functions behind the spread of `windows`, or None when the spread is below
    EXPLAIN_FROM of the limit (or there is nothing to compare). Deterministic: ties in
    size are broken by name."""
    if len(windows) < 2:
        return None
    summary = summarize([w.rep.per_request for w in windows])
    spread = summary.spread if summary.median else 0.0
    if spread < max_spread * EXPLAIN_FROM:
        return None
    low = min(windows, key=lambda w: (w.rep.per_request, w.label))
    high = max(windows, key=lambda w: (w.rep.per_request, w.label))
    lows, highs = _pooled(low.functions), _pooled(high.functions)
    deltas = {
        name: highs.get(name, 0) / high.rep.requests - lows.get(name, 0) / low.rep.requests
        for name in set(lows) | set(highs)
    }
    top = sorted(deltas.items(), key=lambda kv: (-abs(kv[1]), kv[0]))[:TOP]
    gap = high.rep.per_request - low.rep.per_request
    return {
        "spread": round(spread, 6),
        "low": {"window": low.label, "per_request": round(low.rep.per_request, 3)},
        "high": {"window": high.label, "per_request": round(high.rep.per_request, 3)},
        "functions": [[name, round(delta, 1)] for name, delta in top],
        "explained": round(sum(d for _, d in top) / gap, 3) if gap else 0.0,
    }


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
