"""An interleaved comparison's pairs and its control arm's figures, as data (their
judging is control.py's): model.py's rows hold them, and control.py reads rows."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from icount.numfmt import percent, plural, signed_percent


def exact(x: float) -> Fraction:
    """The decimal a figure is written as (in results files, on the command line):
    the shortest that reads back as the same float, so 0.007 is 7/1000, not the
    binary fraction nearest to it."""
    return Fraction(repr(float(x)))


@dataclass(frozen=True)
class Pair:
    """One interleaved pair: a base run then a new run."""

    base: float | None
    new: float | None

    @property
    def ratio(self) -> float | None:
        if self.base is None or self.new is None or self.base == 0:
            return None
        return self.new / self.base


@dataclass(frozen=True)
class ControlArm:
    """The control's figure in each round (None where it was not measured: it failed,
    or the rounds stopped before it), and why it failed, if it did."""

    values: tuple[float | None, ...]
    failed: str | None = None

    @property
    def counted(self) -> list[float]:
        return [v for v in self.values if v is not None]

    @property
    def drift(self) -> Fraction | None:
        """(max - min) / median over the rounds it counted; None under two rounds or a
        median of 0 (no drift can be read from those)."""
        v = self.counted
        median = statistics.median(exact(x) for x in v) if v else Fraction(0)
        if len(v) < 2 or median == 0:
            return None
        return (exact(max(v)) - exact(min(v))) / abs(median)

    @property
    def first_last(self) -> Fraction | None:
        """(last - first) / first of the rounds it counted."""
        v = self.counted
        if len(v) < 2 or v[0] == 0:
            return None
        return (exact(v[-1]) - exact(v[0])) / abs(exact(v[0]))

    def describe(self) -> str:
        """'control drift 0.52% over 3 rounds (max-min over median), first->last +0.52%'."""
        drift, first_last = self.drift, self.first_last
        if drift is None or first_last is None:
            return f"control counted {plural(len(self.counted), 'round')}: no drift to read"
        return (
            f"control drift {percent(float(drift))} over {plural(len(self.counted), 'round')} "
            f"(max-min over median), first->last {signed_percent(float(first_last))}"
        )

    def to_json(self) -> dict[str, Any]:
        drift, first_last = self.drift, self.first_last
        return {
            "values": list(self.values),
            "drift": None if drift is None else float(drift),
            "first_last": None if first_last is None else float(first_last),
            "failed": self.failed,
        }


@dataclass(frozen=True)
class Rounds:
    """An interleaved row's own rounds: its pairs, and the control's figures."""

    pairs: tuple[Pair, ...]
    control: ControlArm | None = None

    @property
    def median_ratio(self) -> float | None:
        ratios = [r for r in (p.ratio for p in self.pairs) if r is not None]
        return float(statistics.median(ratios)) if ratios else None

    def to_json(self) -> dict[str, Any]:
        return {
            "pairs": [{"base": p.base, "new": p.new, "ratio": p.ratio} for p in self.pairs],
            "median_ratio": self.median_ratio,
            "control": None if self.control is None else self.control.to_json(),
        }
