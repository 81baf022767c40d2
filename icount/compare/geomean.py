"""The geometric mean of a comparison's changes: one figure for a change over many cells.

A change that makes one cell 2x faster and another 2x slower is no change overall: the
geometric mean of the ratios new/base is 1, where their arithmetic mean says +25%. It is
taken over every cell whose two sides are valid with medians above 0 (a ratio exists),
whatever its verdict, so that cells inside their thresholds count too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from icount import numfmt
from icount.compare.model import Comparison


@dataclass(frozen=True)
class GeoMean:
    ratio: float  # new/base
    cells: int  # the cells it is taken over

    @property
    def change(self) -> float:
        return self.ratio - 1


def of(c: Comparison) -> GeoMean | None:
    """Over the rows whose change is a finite percentage (the base median is not so near
    0 that the ratio overflows: 5e-324 made it infinite)."""
    logs = [
        math.log1p(r.delta_pct)
        for r in c.rows
        if r.base is not None
        and r.new is not None
        and r.new.median > 0
        and r.delta_pct is not None
        and math.isfinite(r.delta_pct)
        and r.delta_pct > -1
    ]
    if not logs:
        return None
    try:
        ratio = math.exp(math.fsum(logs) / len(logs))
    except OverflowError:
        return None
    return GeoMean(ratio, len(logs)) if math.isfinite(ratio) else None


def line(c: Comparison) -> str | None:
    """'geometric mean of new/base over 3 cells: 0.9876 (-1.24%)'."""
    g = of(c)
    if g is None:
        return None
    return (
        f"geometric mean of new/base over {numfmt.plural(g.cells, 'cell')}: {g.ratio:.4f} "
        f"({numfmt.signed_percent(g.change)})"
    )
