"""The geometric mean of a comparison's changes: one figure for a change over many cells.

A change that makes one cell 2x faster and another 2x slower is no change overall: the
geometric mean of the ratios new/base is 1, where their arithmetic mean says +25%. It is
taken over every cell whose two sides are valid with medians above 0 (a ratio exists),
whatever its verdict, so that cells inside their thresholds count too.

A collected runtime's cell (model.TotalChange) counts by its total, mutator + the
runtime's own work per request: every other cell's figure is its whole count, and so is
the figure of a results file written before the runtime's work was counted apart, so the
total is the one figure of such a cell that is like for like with the rest of the mean
and with an old file on the other side (its mutator against an old file's whole count
read -7.74% and +8.40% on the measured node /json cell, and skewed the mean by as much
divided by the cells). A runtime's cell whose total is not valid on a side (`~`: its
interval wider than the spread limit) is left out rather than counted by its mutator:
the mutator is a part of the cell's cost, and a mean of parts and wholes says neither.
The line says how many cells counted by their total and how many were left out, only
where a comparison has such cells (every other comparison prints what it always did).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from icount import numfmt
from icount.compare.model import Comparison, Row


@dataclass(frozen=True)
class GeoMean:
    ratio: float  # new/base
    cells: int  # the cells it is taken over
    totals: int = 0  # of `cells`, the collected runtimes' counted by their total
    left_out: int = 0  # collected runtimes' cells left out: a total not valid on a side

    @property
    def change(self) -> float:
        return self.ratio - 1


def _usable(pct: float | None) -> bool:
    """A change whose ratio has a logarithm: finite (a base median of 5e-324 made it
    infinite) and above -100%."""
    return pct is not None and math.isfinite(pct) and pct > -1


def _change(r: Row) -> tuple[str, float | None]:
    """("whole", change) for a cell without a runtime's figures, ("total", change) for a
    collected runtime's with valid totals, ("left out", None) for one without; ("none",
    None) for a row with no ratio."""
    if r.base is None or r.new is None:
        return "none", None
    t = r.total
    if t is None:
        ok = r.new.median > 0 and _usable(r.delta_pct)
        return ("whole", r.delta_pct) if ok else ("none", None)
    # model._total sets delta only where both totals are valid (an old side's whole count
    # is its total, its cell valid under the spread rule)
    if t.delta is None:
        return "left out", None
    new_total = t.new.total if t.new is not None else t.new_whole
    ok = new_total is not None and new_total > 0 and _usable(t.delta_pct)
    return ("total", t.delta_pct) if ok else ("none", None)


def of(c: Comparison) -> GeoMean | None:
    """Over the rows whose change is a finite percentage, a collected runtime's by its
    total (see the module's note)."""
    kinds = [_change(r) for r in c.rows]
    logs = [math.log1p(pct) for _, pct in kinds if pct is not None]
    totals = sum(1 for k, pct in kinds if k == "total" and pct is not None)
    left_out = sum(1 for k, _ in kinds if k == "left out")
    if not logs:
        return None
    try:
        ratio = math.exp(math.fsum(logs) / len(logs))
    except OverflowError:
        return None
    return GeoMean(ratio, len(logs), totals, left_out) if math.isfinite(ratio) else None


def line(c: Comparison) -> str | None:
    """'geometric mean of new/base over 3 cells: 0.9876 (-1.24%)', and with collected
    runtimes' cells '...; 2 by their total (mutator + the runtime's work), 1 left out
    (its total not valid)'."""
    g = of(c)
    if g is None:
        return None
    text = (
        f"geometric mean of new/base over {numfmt.plural(g.cells, 'cell')}: {g.ratio:.4f} "
        f"({numfmt.signed_percent(g.change)})"
    )
    if g.totals:
        its = "its" if g.totals == 1 else "their"
        text += f"; {g.totals} by {its} total (mutator + the runtime's work)"
    if g.left_out:
        text += (
            f"; {g.left_out} left out ({'its total' if g.left_out == 1 else 'their totals'} "
            "not valid)"
        )
    return text
