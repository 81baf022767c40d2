"""All the cells of one `icount serve`: build targets, measure every path.

The scheduler (icount/session/scheduler.py) saves the results file after every cell,
takes only the shard's cells (--shard) not already in the file to resume (--resume),
and runs --jobs cells at once; this module supplies serve's cells and how one is
measured: every run on a fresh server, on the job's own CPUs.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from icount import cpus as cpus_mod
from icount import environment, eta, jobs, memory, results
from icount.errors import RunFailedError
from icount.progress import Progress
from icount.results import UNIT_INSTRUCTIONS, UNIT_PER_REQUEST, Cell, Results
from icount.serve import cell_extras
from icount.serve.adapter import PathSpec
from icount.serve.cell_runs import CellRuns, Learnt, Reporter, no_more_runs, run_cell
from icount.serve.cell_windows import gather
from icount.serve.plan import Plan
from icount.serve.server import Target, launch_problem
from icount.serve.targets import shown_beside
from icount.session import scheduler
from icount.session.resume import TARGET_DIGESTS


@dataclass
class SessionState:
    """What the session learnt on the way, for the provenance."""

    learnt: Learnt = field(default_factory=Learnt)  # by the runs
    built: dict[str, str] = field(default_factory=dict)  # adapter -> "built" or why not
    resumed: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        window = self.learnt.window
        return {
            "client_rps_per_run_and_rep": dict(sorted(self.learnt.client_rps.items())),
            "callgrind_window": {
                "method": window.name if window else None,
                "why": window.why if window else "",
            },
            "builds": dict(sorted(self.built.items())),
            "resumed_cells": sorted(self.resumed),
        }


@dataclass(frozen=True)
class Ready:
    """A target as the session built it, read once before its cells: why none of them
    can run, and what the table shows beside their counts (serve/targets.py)."""

    setup_error: str | None
    beside: Mapping[str, Any]


def _build(targets: Sequence[Target], state: SessionState, progress: Progress) -> None:
    from icount.serve.adapter import build_adapter

    for t in targets:
        if not t.adapter.build:
            state.built[t.adapter.name] = "nothing to build"
            continue
        progress(f"building {t.adapter.name}", 0, 0)
        try:
            build_adapter(t.adapter, t.build_dir)
            state.built[t.adapter.name] = "built"
        except RunFailedError as e:
            state.built[t.adapter.name] = f"build failed: {e}"


def _ready(target: Target, plan: Plan, state: SessionState) -> Ready:
    built = state.built.get(target.adapter.name, "")
    setup_error = built if built.startswith("build failed") else None
    setup_error = setup_error or launch_problem(target, plan.backend)
    return Ready(setup_error, shown_beside(target))


def provenance(plan: Plan, state: SessionState) -> dict[str, Any]:
    shard = plan.shard_spec
    return {
        "plan": plan.request.to_json(plan.targets),
        "backend_choice": plan.backend_why,
        "load_choice": plan.load_why,
        "skipped_targets": dict(plan.skipped),
        **cpus_mod.provenance(plan.cpus),
        "jobs": plan.job_cpus.to_json(),
        "shard": None if shard is None else shard.to_json(),
        TARGET_DIGESTS: dict(sorted(plan.digests.items())),
        **state.to_json(),
    }


Planned = scheduler.Planned[tuple[Target, PathSpec]]


@dataclass(frozen=True)
class _Cells:
    """What measuring any cell of the session takes: the plan, its targets as built, what
    the runs learn on the way, and where they report."""

    plan: Plan
    ready: Mapping[str, Ready]  # by target name
    learnt: Learnt
    progress: Progress
    pace: eta.Pace

    def runs(self, target: Target, path: PathSpec, job: jobs.Job) -> CellRuns:
        opts = self.plan.options(target)
        cpus = self.plan.job_cpus.splits[job.slot]
        return CellRuns(target, path, dataclasses.replace(opts, cpus=cpus), self.plan.artifacts)

    def measure(self, planned: Planned, job: jobs.Job, counter: jobs.Tally) -> Cell:
        """Every run of one cell, on its job's CPUs (the built-in client runs in this
        thread), and what the cell holds beside them."""
        target, path = planned.item
        cell = self.runs(target, path, job)
        report = Reporter(self.progress, counter, self.pace, job)
        ready = self.ready[target.adapter.name]
        self.pace.start(cell.key)  # to its end: --memory's native runs cost time too
        if ready.setup_error is None:
            outcomes = run_cell(cell, self.learnt, report)
        else:
            outcomes = []
            no_more_runs(cell, report)
        got = gather(outcomes, path.cold_start)
        request = self.plan.request
        extra = cell_extras.extra(ready.beside, got, cell.opts.max_spread, request.collectors)
        if request.memory and ready.setup_error is None:  # --memory: after the counted runs
            peaks = cell_extras.memory_peaks(cell, got, report)
            if peaks is not None:
                extra[memory.KEY] = peaks
        self.pace.finish(cell.key)
        return Cell(
            name=target.adapter.name,
            path=path.name,
            backend=self.plan.backend.name,
            unit=UNIT_INSTRUCTIONS if path.cold_start else UNIT_PER_REQUEST,
            runs=got.runs,
            params=cell_extras.params(cell, got),
            runs_wanted=cell.opts.runs,
            max_spread=cell.opts.max_spread,
            extra=extra,
            setup_error=ready.setup_error,
            order=planned.order,
            profile=got.profile,
        )


def run_session(
    plan: Plan,
    progress: Progress,
    recorder: environment.ProvenanceRecorder,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> Results:
    """Measure every (target, path) cell of the plan (of its shard, with --shard) missing
    from `plan.start`, --jobs at a time, saving the results file (and its provenance)
    after each; returns all cells. `clock` times the runs for the time left."""
    state = SessionState()
    planned = [
        scheduler.Planned(
            (t.adapter.name, p.name, plan.backend.name), i, plan.options(t).runs, (t, p)
        )
        for i, (t, p) in enumerate(plan.cells())
    ]
    todo = scheduler.todo(planned, plan.start)
    state.resumed = [c.key_text for c in plan.start.cells]
    targets = sorted({c.item[0].adapter.name: c.item[0] for c in todo}.values(),
                     key=lambda t: t.adapter.name)  # fmt: skip
    _build(targets, state, progress)
    splits = plan.job_cpus.splits
    each = [CellRuns(*c.item, plan.options(c.item[0]), plan.artifacts) for c in todo]
    pace = eta.Pace({c.key: c.work for c in each}, jobs=len(splits), clock=clock)
    save = scheduler.Saver(plan.out, recorder, lambda: provenance(plan, state))
    try:
        ready = {t.adapter.name: _ready(t, plan, state) for t in targets}
        for c in each:  # no run of theirs will take any time
            if ready[c.target.adapter.name].setup_error is not None:
                pace.finish(c.key)
        cells = _Cells(plan, ready, state.learnt, progress, pace)
        return scheduler.measure_cells(
            todo, plan.start, cells.measure, save, jobs_at_once=len(splits), progress=progress
        )
    finally:
        results.release_unused(plan.out)  # written: another icount may write it now
