"""`--interleave`: measure base and new alternately, A B A B ..., with a control arm
where one is given.

On a noisy backend (perf on a shared machine) slow drifts in the machine's state
hit both sides of a pair alike, so the ratio new/base of each pair carries less
noise than two separate batches would; the median of the ratios is what is gated
on (see model.compare_pairs). A control arm (a third, unchanged build) runs in the
same rounds; its drift bounds what the comparison may claim, and with it each
round's order is rotated (compare/control.py says why).

Commands: each run is a fresh process measured exactly as `icount run` measures one
(measure_command.measure_once), in the work dir `icount run` gives the cell, so that
every arm runs from the same fixed path (environment.fixed_program). Servers:
compare/interleave_serve.py, on `rounds` here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from icount import environment
from icount.compare.control import BASE, CONTROL, NEW, ControlArm, round_order
from icount.compare.model import Pair, Verdict
from icount.measure_command import CommandSpec, RunOptions, measure_once
from icount.progress import Progress
from icount.session.scheduler import work_dir_key


@dataclass(frozen=True)
class Interleaved:
    pairs: tuple[Pair, ...]
    # (invalid in base/new, "base run 2: exited with status 1"); None when every run counted
    failed: tuple[Verdict, str] | None
    control: ControlArm | None = None  # with a control arm: its figure each round


# (arm, round from 1) -> (the run's value, or None and why it is invalid)
MeasureArm = Callable[[str, int], tuple[float | None, str | None]]


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


def run_pairs(
    base: CommandSpec,
    new: CommandSpec,
    opts: RunOptions,
    pairs: int,
    artifacts: Path,
    progress: Progress | None = None,
    control: CommandSpec | None = None,
    backend: str = "",
) -> Interleaved:
    """Rounds of fresh processes of the commands, base first in each (rotated with a
    control), every arm in the work dir of the cell (name, backend) of `icount run`."""
    specs = {BASE: base, NEW: new, CONTROL: control}

    def measure(arm: str, i: int) -> tuple[float | None, str | None]:
        spec = specs[arm]
        assert spec is not None
        run = measure_once(spec, opts, artifacts / f"pair-{i:03d}-{arm}")
        return (run.value, None) if run.valid else (None, run.reason or "not counted")

    with environment.work_dirs_named(work_dir_key((new.name, "", backend))):
        return rounds(measure, pairs, control is not None, progress)
