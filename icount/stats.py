"""Cell statistics: median, range and spread of repeated measurements."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from icount.numfmt import plain

DEFAULT_MAX_SPREAD = 0.01  # a cell is valid only if (max - min) / median < 1%


@dataclass(frozen=True)
class Summary:
    median: float
    min: float
    max: float
    spread: float  # (max - min) / median; 0 for a single value
    n: int


def summarize(values: Sequence[float]) -> Summary:
    if not values:
        raise ValueError("no values to summarize")
    med = float(statistics.median(values))
    lo, hi = float(min(values)), float(max(values))
    if med == 0:
        spread = 0.0 if hi == lo else float("inf")
    else:
        spread = (hi - lo) / abs(med)
    return Summary(median=med, min=lo, max=hi, spread=spread, n=len(values))


def spread_reason(summary: Summary, max_spread: float) -> str | None:
    """Why a cell fails the spread rule, or None when it passes."""
    if not math.isfinite(summary.spread):  # runs that differ around a median of 0
        return (
            f"runs range {plain(summary.min)}-{plain(summary.max)} around a median of 0 over "
            f"{summary.n} runs: no spread can be taken"
        )
    if summary.spread >= max_spread:
        return (
            f"spread {summary.spread * 100:.2f}% over {summary.n} runs is not below "
            f"--max-spread {max_spread * 100:g}%"
        )
    return None
