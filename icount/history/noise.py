"""What a cell's own history says is noise, and the threshold that follows (pure).

rustc-perf's rule: a change is significant only beyond the upper fence Q3 + 3 x IQR of
the benchmark's changes between consecutive commits (|relative change| of the medians).
Most consecutive commits do not touch a given cell, so those changes are its noise, and
the few real changes in the history sit beyond the fence without moving it much.

A cell whose every past measurement repeated to the instruction (all runs of each
commit equal) and whose fence is 0 (most consecutive commits gave it exactly the same
count) is deterministic: any change is real, so it is gated exactly, whatever
threshold was given (+1 instruction fails). A noisy cell's threshold is the larger of
the given one and its fence.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Any

from icount.environment import fingerprint_differences
from icount.numfmt import plural
from icount.results import Cell, Results

CellKey = tuple[str, str, str]
IQR_FACTOR = 3
# Fewer consecutive changes than this give no quartiles worth trusting.
MIN_CHANGES = 4
# The most recent commits a fence is taken over: old noise says little about today's.
WINDOW = 100


@dataclass(frozen=True)
class Noise:
    """A cell's history: how many commits hold it, its consecutive changes, the fence."""

    commits: int
    changes: int
    fence: float | None  # Q3 + 3 x IQR of |relative changes|; None with too few changes
    exact: bool  # every run of every commit repeated, and the fence is 0


@dataclass(frozen=True)
class Applied:
    """The threshold a comparison uses for one cell, and the one line saying why."""

    threshold: float
    min_delta: float
    basis: str


def _pct(x: float) -> str:
    return f"{x * 100:.3g}%"


def of_cells(cells: Sequence[Cell]) -> Noise:
    """The noise of one cell over its past commits, oldest first (valid cells only)."""
    cells = [c for c in cells if c.valid and c.summary is not None][-WINDOW:]
    medians = [c.summary.median for c in cells if c.summary is not None]
    changes = [abs(b - a) / abs(a) for a, b in itertools.pairwise(medians) if a]
    repeated = all(c.summary is not None and c.summary.min == c.summary.max for c in cells)
    if len(changes) < MIN_CHANGES:
        return Noise(len(cells), len(changes), None, False)
    q1, _, q3 = statistics.quantiles(changes, n=4, method="inclusive")
    fence = _round_up(q3 + IQR_FACTOR * (q3 - q1))
    return Noise(len(cells), len(changes), fence, repeated and fence == 0)


def _round_up(x: float) -> float:
    """`x` up to 3 significant digits: the threshold printed is the one applied, and
    rounding up never fails a change the unrounded fence would pass."""
    if x <= 0:
        return 0.0
    d = Decimal(repr(x))
    return float(d.quantize(Decimal(1).scaleb(d.adjusted() - 2), rounding=ROUND_CEILING))


def of_history(
    past: Sequence[Results], fingerprint: Mapping[str, Any]
) -> tuple[dict[CellKey, Noise], int]:
    """Each cell's noise over the past results (oldest first) measured in an
    environment that counts as `fingerprint`'s does, and how many were left out for
    another environment (their noise is another machine's)."""
    kept = [r for r in past if not fingerprint_differences(r.fingerprint, fingerprint)]
    series: dict[CellKey, list[Cell]] = {}
    for r in kept:
        for c in r.cells:
            series.setdefault(c.key, []).append(c)
    return {k: of_cells(v) for k, v in series.items()}, len(past) - len(kept)


def apply(given: float, min_delta: float, noise: Noise | None) -> Applied:
    """The threshold for a cell whose given threshold is `given`, with its history."""
    if noise is None:
        return Applied(given, min_delta, "no commit in the history holds this cell; given applies")
    held = f"{plural(noise.commits, 'commit')}"
    if noise.fence is None:
        return Applied(
            given,
            min_delta,
            f"history too short ({held}, {MIN_CHANGES + 1} needed); given {_pct(given)} applies",
        )
    if noise.exact:
        return Applied(
            0.0, 0.0, f"history repeats to the instruction over {held}: exact, any change counts"
        )
    fence = f"Q3 + 3 x IQR of {noise.changes} changes between commits is {_pct(noise.fence)}"
    if noise.fence > given:
        return Applied(noise.fence, min_delta, f"history: {fence}, above the given {_pct(given)}")
    return Applied(given, min_delta, f"history: {fence}; the given {_pct(given)} is larger")
