"""All the cells of one `icount serve`: build targets, measure every path.

The session floor (icount/session/scheduler.py) saves the results file after every cell,
takes only the shard's cells (--shard) not already in the file to resume (--resume),
and runs --jobs cells at once; this module supplies serve's cells and how one is
measured: every run on a fresh server, on the job's own CPUs.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from icount import build_label, environment, jobs, memory, results
from icount import cpus as cpus_mod
from icount.errors import RunFailedError
from icount.progress import Progress
from icount.results import UNIT_INSTRUCTIONS, UNIT_PER_REQUEST, Cell, Results, Run
from icount.results.cell_profile import PER_REQUEST, PER_RUN, cell_profile
from icount.results.details import ServeDetail, request_params
from icount.serve import native, spread
from icount.serve.adapter import PathSpec, binary_path
from icount.serve.plan import Plan, cell_params
from icount.serve.runs import WindowMethod, measure_cold_start, measure_run
from icount.serve.server import Target, launch_problem
from icount.serve.targets import binary_sizes
from icount.session import scheduler
from icount.session.resume import TARGET_DIGESTS
from icount.spread_note import NOTES
from icount.window_profile import WindowProfile


@dataclass
class SessionState:
    """What the session learnt on the way, for the provenance."""

    window: WindowMethod | None = None
    built: dict[str, str] = field(default_factory=dict)  # adapter -> "built" or why not
    resumed: list[str] = field(default_factory=list)
    client_rps: dict[str, list[list[float]]] = field(default_factory=dict)
    durations: dict[str, list[float]] = field(default_factory=dict)  # target -> run seconds

    def to_json(self) -> dict[str, Any]:
        return {
            "client_rps_per_run_and_rep": dict(sorted(self.client_rps.items())),
            "callgrind_window": {
                "method": self.window.name if self.window else None,
                "why": self.window.why if self.window else "",
            },
            "builds": dict(sorted(self.built.items())),
            "resumed_cells": sorted(self.resumed),
        }


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


def _eta(durations: Sequence[float], left: int) -> str:
    if not durations:
        return ""  # nothing measured yet to estimate from
    secs = sum(durations) / len(durations) * left
    return f"cell eta {secs:.0f} s" if secs < 120 else f"cell eta {secs / 60:.1f} min"


def _note(progress: Progress, head: str, eta: str, done: int, total: int, text: str) -> None:
    progress(f"{head}: {text} ({eta})" if eta else f"{head}: {text}", done, total)


def _extra(target: Target, windows: Sequence[spread.Window], max_spread: float) -> dict[str, Any]:
    """What the table shows beside the counts: the binary's size, and why the windows
    differ where they differ enough to ask."""
    extra = binary_sizes(target)
    binary = binary_path(target.adapter, target.build_dir)
    label = build_label.of_server(target.adapter.start, binary)
    if label is not None:  # what built it, which compare checks (build_label.py)
        extra["build"] = label
    explained = spread.explain(windows, max_spread)
    if explained is not None:
        extra["spread_explained"] = explained
    return extra


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


def _measure_cell(
    plan: Plan,
    state: SessionState,
    target: Target,
    path: PathSpec,
    cpus: cpus_mod.CpuSplit,
    order: int,
    counter: jobs.Tally,
    progress: Progress,
    job: jobs.Job,
) -> Cell:
    """Every run of one cell, on `cpus` (the built-in client runs in this thread)."""
    t, p, backend = target, path, plan.backend.name
    opts = dataclasses.replace(plan.options(t), cpus=cpus)
    # no square brackets: the progress bar reads its text as rich markup
    key = f"{t.adapter.name}/{p.name}/{backend}"
    runs: list[Run] = []
    windows: list[spread.Window] = []
    profiled: list[tuple[WindowProfile, int]] = []  # valid runs' windows, with their requests
    built = state.built.get(t.adapter.name, "")
    setup_error = built if built.startswith("build failed") else None
    setup_error = setup_error or launch_problem(t, plan.backend)
    history = state.durations.setdefault(t.adapter.name, [])
    said: list[str] = []  # the runs' notes (serve/connections.py), each once
    connection: str | None = None

    def note(head: str, eta: str, text: str) -> None:
        job.check()  # a cell still running when the session stops ends here
        _note(progress, head, eta, counter.done, counter.total, text)

    with cpus_mod.pinned_self(cpus.load):
        for i in range(opts.runs if setup_error is None else 0):
            job.check()
            t0 = time.monotonic()
            head = f"{key} run {i + 1}/{opts.runs}"
            eta = _eta(history, opts.runs - i)
            safe = environment.safe_name
            run_dir = plan.artifacts / "runs" / safe(t.adapter.name) / safe(p.name) / f"run-{i + 1}"
            noted = functools.partial(note, head, eta)
            if p.cold_start:
                outcome = measure_cold_start(t, p, opts, run_dir, noted)
            else:
                earlier = [r.detail for r in runs
                           if r.valid and isinstance(r.detail, ServeDetail)]  # fmt: skip
                outcome = measure_run(t, p, opts, run_dir, state.window, noted, earlier, i)
            if state.window is None:
                state.window = outcome.window
            state.client_rps.setdefault(key, []).append(list(outcome.client_rps))
            history.append(time.monotonic() - t0)
            runs.append(Run(outcome.value, outcome.reason is None, outcome.reason, outcome.detail))
            said += [line for line in outcome.notes if line not in said]
            connection = connection or outcome.connection
            if outcome.detail is not None and outcome.reason is None:
                pairs = zip(outcome.detail.reps, outcome.functions, strict=False)
                profiled += [(f, r.requests) for r, f in pairs if isinstance(f, WindowProfile)]
            if outcome.detail is not None:
                windows += [
                    # the figure the run's median takes: the mutator, for a collected runtime
                    spread.Window(
                        f"run {i + 1} rep {j + 1}", rep, functions, outcome.detail.mutator(rep)
                    )
                    for j, (rep, functions) in enumerate(
                        zip(outcome.detail.reps, outcome.functions, strict=False)
                    )
                    if functions is not None
                ]
            counter.add(1)
            if outcome.reason is not None:
                break
    counter.add(opts.runs - len(runs))
    extra = _extra(t, windows, opts.max_spread)
    said += spread.naming_notes(windows, plan.request.collectors)
    if said:
        extra[NOTES] = said
    if plan.request.memory and setup_error is None:  # --memory: native runs after the counted
        with cpus_mod.pinned_self(cpus.load):
            memo = functools.partial(note, f"{key} memory", "")
            peaks = native.cell_peaks(t, p, opts, runs, plan.artifacts / "runs", memo)
        if peaks is not None:
            extra[memory.KEY] = peaks
    request = next(
        (r.detail.request for r in runs if isinstance(r.detail, ServeDetail) and r.detail.request),
        None,
    )
    params = cell_params(p, opts)
    params.update(request_params(request))  # type: ignore[typeddict-item]
    if connection is not None:  # absent: keep-alive, as in files from before it was recorded
        params["connection"] = connection
    return Cell(
        name=t.adapter.name,
        path=p.name,
        backend=backend,
        unit=UNIT_INSTRUCTIONS if p.cold_start else UNIT_PER_REQUEST,
        runs=tuple(runs),
        params=params,
        runs_wanted=opts.runs,
        max_spread=opts.max_spread,
        extra=extra,
        setup_error=setup_error,
        order=order,
        profile=cell_profile(profiled, PER_RUN if p.cold_start else PER_REQUEST),
    )


def run_session(
    plan: Plan, progress: Progress, recorder: environment.ProvenanceRecorder
) -> Results:
    """Measure every (target, path) cell of the plan (of its shard, with --shard) missing
    from `plan.start`, --jobs at a time, saving the results file (and its provenance)
    after each; returns all cells."""
    state = SessionState()
    planned = [
        scheduler.Planned(
            (t.adapter.name, p.name, plan.backend.name), i, plan.options(t).runs, (t, p)
        )
        for i, (t, p) in enumerate(plan.cells())
    ]
    todo = scheduler.todo(planned, plan.start)
    state.resumed = [c.key_text for c in plan.start.cells]
    _build(sorted({c.item[0].adapter.name: c.item[0] for c in todo}.values(),
                  key=lambda t: t.adapter.name), state, progress)  # fmt: skip
    splits = plan.job_cpus.splits

    def measure(cell: scheduler.Planned[tuple[Target, PathSpec]], job: jobs.Job,
                counter: jobs.Tally) -> Cell:  # fmt: skip
        t, p = cell.item
        return _measure_cell(plan, state, t, p, splits[job.slot], cell.order, counter,
                             progress, job)  # fmt: skip

    save = scheduler.Saver(plan.out, recorder, lambda: provenance(plan, state))
    try:
        return scheduler.measure_cells(
            todo, plan.start, measure, save, jobs_at_once=len(splits), progress=progress
        )
    finally:
        results.release_unused(plan.out)  # written: another icount may write it now
