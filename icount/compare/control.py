"""The rounds of an interleaved comparison, and its control arm (pure).

A control arm is a third build, unchanged, measured in the same rounds as base and
new (`--control-cmd`, `--control-target`). Nothing about it changed, so whatever its
figure does from round to round is the measurement's own drift: the machine warming
up, a cache, a counter that grows. That drift bounds what the comparison can claim: a
change of new against base no larger than the control's drift (max - min over the
median of its rounds) could be that drift alone, so it is reported as not claimable
and does not gate, whatever the threshold says.

With a control, each round's order is rotated (base new control, new control base,
control base new, ...): an arm that always ran in the same place of a round would
carry whatever that place does to a count (a cache the previous process warmed, a
clock that ramps up) in every round alike, and every pair's ratio would lean the same
way, which is what the pair rule takes for a real change. Rotated, a place's effect
moves from round to round, into the pairs' spread and the control's drift, where it
shows. Two arms keep base then new (A B A B), as they always have.
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

__all__ = ["BASE", "CONTROL", "NEW", "ControlArm", "Rounds", "judged", "round_order"]

BASE, NEW, CONTROL = "base", "new", "control"


def round_order(i: int, control: bool) -> tuple[str, ...]:
    """The arms of round `i` (from 0) in the order they run."""
    if not control:
        return (BASE, NEW)
    arms = (BASE, NEW, CONTROL)
    return arms[i % 3 :] + arms[: i % 3]


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
