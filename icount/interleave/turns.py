"""The turns of an interleave: base and new alternately, A B A B ..., with a control arm
where one is given, run by one loop whatever an arm's run is (a command, a server).

With a control, each round's order is rotated (base new control, new control base,
control base new, ...): an arm that always ran in the same place of a round would
carry whatever that place does to a count (a cache the previous process warmed, a
clock that ramps up) in every round alike, and every pair's ratio would lean the same
way, which is what the pair rule takes for a real change. Rotated, a place's effect
moves from round to round, into the pairs' spread and the control's drift, where it
shows (compare/control.py judges a row against that drift). Two arms keep base then
new (A B A B) in every round.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from icount.compare.model import Verdict
from icount.compare.rounds import ControlArm, Pair
from icount.progress import Progress

BASE, NEW, CONTROL = "base", "new", "control"


@dataclass(frozen=True)
class Interleaved:
    pairs: tuple[Pair, ...]
    # (invalid in base/new, "base run 2: exited with status 1"); None when every run counted
    failed: tuple[Verdict, str] | None
    control: ControlArm | None = None  # with a control arm: its figure each round


# (arm, round from 1) -> (the run's value, or None and why it is invalid)
MeasureArm = Callable[[str, int], tuple[float | None, str | None]]


def round_order(i: int, control: bool) -> tuple[str, ...]:
    """The arms of round `i` (from 0) in the order they run."""
    if not control:
        return (BASE, NEW)
    arms = (BASE, NEW, CONTROL)
    return arms[i % 3 :] + arms[: i % 3]


def rounds(
    measure: MeasureArm,
    pairs: int,
    control: bool,
    progress: Progress | None = None,
    label: str = "",
) -> Interleaved:
    """`pairs` rounds of base and new (and the control), in round_order. Stops at the
    first failed run: the comparison is invalid then (or, the control's, has nothing to
    claim), and further runs would only cost time."""
    arms = 3 if control else 2
    done: list[Pair] = []
    controls: list[float | None] = []
    head = f"{label}: " if label else ""
    for i in range(1, pairs + 1):
        got: dict[str, float | None] = {}
        for j, arm in enumerate(round_order(i - 1, control)):
            if progress:
                progress(f"{head}pair {i}/{pairs}: {arm}", arms * (i - 1) + j, arms * pairs)
            value, why = measure(arm, i)
            got[arm] = value
            if why is None:
                continue
            done.append(Pair(got.get(BASE), got.get(NEW)))
            if arm == CONTROL:
                failed = ControlArm((*controls, None), f"control run {i}: {why}")
                return Interleaved(tuple(done), None, failed)
            verdict = Verdict.INVALID_IN_BASE if arm == BASE else Verdict.INVALID_IN_NEW
            ctl = ControlArm((*controls, got.get(CONTROL))) if control else None
            return Interleaved(tuple(done), (verdict, f"{arm} run {i}: {why}"), ctl)
        done.append(Pair(got[BASE], got[NEW]))
        controls.append(got.get(CONTROL))
    if progress:
        progress("done", arms * pairs, arms * pairs)
    return Interleaved(tuple(done), None, ControlArm(tuple(controls)) if control else None)
