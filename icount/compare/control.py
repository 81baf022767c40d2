"""A row of an interleaved comparison judged against its control arm (pure).

A control arm is a third build, unchanged, measured in the same rounds as base and
new (`--control-cmd`, `--control-target`; icount/interleave/turns.py rotates the
order of each round). Nothing about it changed, so whatever its figure does from
round to round is the measurement's own drift: the machine warming up, a cache, a
counter that grows. That drift bounds what the comparison can claim: a change of new
against base no larger than the control's drift (max - min over the median of its
rounds) could be that drift alone, so it is reported as not claimable and does not
gate, whatever the threshold says.
"""

from __future__ import annotations

import dataclasses
import statistics
from fractions import Fraction
from typing import TYPE_CHECKING

from icount.compare.rounds import ControlArm, Pair, Rounds, exact
from icount.numfmt import signed_percent

if TYPE_CHECKING:
    from icount.compare.model import Row

__all__ = ["ControlArm", "Rounds", "judged"]


def _exact_change(pairs: tuple[Pair, ...]) -> Fraction | None:
    """The median of the pairs' exact ratios, less 1: what compare_pairs gates on."""
    ratios = [exact(p.new) / exact(p.base) for p in pairs if p.new is not None and p.base]
    return statistics.median(ratios) - 1 if ratios else None


def judged(row: Row, rounds: Rounds) -> Row:
    """`row` (compare_pairs's) with its rounds, and judged against its control: a change
    within the control's drift is not claimable (unchanged), and a control that failed
    leaves nothing claimable. Every row with a control says what the control did."""
    from icount.compare.model import Verdict

    row = dataclasses.replace(row, rounds=rounds)
    control = rounds.control
    if control is None or row.verdict in (Verdict.INVALID_IN_BASE, Verdict.INVALID_IN_NEW):
        return row
    if row.verdict in (Verdict.MISSING_IN_BASE, Verdict.MISSING_IN_NEW):
        return row
    if control.failed is not None:
        return dataclasses.replace(
            row,
            verdict=Verdict.UNCHANGED,
            why=f"the control failed ({control.failed}): its drift is unknown, so no change "
            "is claimable",
        )
    text = control.describe()
    drift, change = control.drift, _exact_change(rounds.pairs)
    moved = row.verdict in (Verdict.REGRESSED, Verdict.IMPROVED)
    if moved and change is not None and (drift is None or abs(change) <= drift):
        return dataclasses.replace(
            row,
            verdict=Verdict.UNCHANGED,
            why=f"the change {signed_percent(float(change))} is within the {text}: not claimable",
        )
    return dataclasses.replace(row, why="; ".join(p for p in (row.why, text) if p))
