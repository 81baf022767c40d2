"""All the cells of one `icount serve`: build targets, measure every path, save as we go.

The results file is written (atomically) after every cell, so an interrupted session
loses at most the cell in progress; `--resume FILE` starts from that file's cells
and measures only the missing ones, refusing when the file was measured in another
environment or with other parameters. With --shard only the shard's cells are
measured (every cell keeps its place in the whole plan); with --jobs N, N cells run at
once (icount/jobs.py), each on its own CPUs, and the file is still saved after each.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from icount import cpus as cpus_mod
from icount import environment, jobs, results
from icount.errors import RunFailedError, UsageError
from icount.progress import Progress
from icount.results import UNIT_INSTRUCTIONS, UNIT_PER_REQUEST, Cell, Results, Run
from icount.results.details import ServeDetail, ServeParams, request_params
from icount.serve import spread
from icount.serve.adapter import Adapter, PathSpec
from icount.serve.plan import Plan
from icount.serve.runs import CellOptions, WindowMethod, measure_cold_start, measure_run
from icount.serve.server import Target
from icount.serve.targets import binary_sizes
from icount.shards import PlannedCell

# The params two cells must share to sit in one results file (resume).
COMPARABLE_PARAMS = (
    "requests",
    "warmup",
    "concurrency",
    "load",
    "reps",
    "request_target",
    "http_method",
    "thread",
    "processes",
)


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


def cell_params(path: PathSpec, opts: CellOptions) -> ServeParams:
    """What the cell is measured with: everything that moves a per-request figure but
    the request bytes, which the session adds once a run has sent them."""
    params: ServeParams = {
        "requests": opts.requests,
        "warmup": "auto" if opts.warmup is None else opts.warmup,
        "concurrency": opts.concurrency,
        "load": opts.load_kind,
        "reps": opts.reps,
        "request_target": path.request_target,
        "http_method": path.http_method,
        **({"kind": "cold-start"} if path.cold_start else {}),
        "server_cpus": list(opts.cpus.server),
        "load_cpus": list(opts.cpus.load),
    }
    params.update(opts.backend.cell_params())  # type: ignore[typeddict-item]
    return params


def target_digest(adapter: Adapter) -> str:
    """sha256 of how a target is built, started and checked: not of where its adapter
    file lies, which differs between machines."""
    a = adapter
    what = (a.build, a.start, sorted(a.env.items()), a.ready_target, a.ready_timeout_s,
            a.binary, a.paths, a.requires, a.warmup_hint)  # fmt: skip
    return hashlib.sha256(repr(what).encode()).hexdigest()


def planned_cells(plan: Plan) -> list[PlannedCell]:
    """Every cell of the session, in order, as shards are assigned: what it is measured
    with (its params but the CPU numbers, which differ between machines) and its
    expected cost, the requests its runs send (a JIT server's larger warm-up included;
    `--warmup auto` counted at its least, two windows)."""
    planned = []
    for t in plan.targets:
        opts = plan.options(t)
        digest = target_digest(t.adapter)
        warmup = opts.warmup if opts.warmup is not None else 2 * opts.requests
        cost = opts.runs * (warmup + opts.reps * opts.requests)
        for p in plan.paths(t):
            params: dict[str, Any] = dict(cell_params(p, opts))
            del params["server_cpus"], params["load_cpus"]
            identity = {**params, "runs": opts.runs, "max_spread": opts.max_spread,
                        "target_sha256": digest}  # fmt: skip
            planned.append(PlannedCell(t.adapter.name, p.name, plan.backend.name, identity, cost))
    return planned


def _comparable(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: params.get(k) for k in COMPARABLE_PARAMS}


def check_resume(previous: Results, plan: Plan) -> None:
    """Refuse to continue a file whose cells are not comparable with this session's."""
    diff = environment.fingerprint_differences(
        previous.fingerprint, plan.fingerprint, same_method=True
    )
    if diff:
        raise UsageError(
            f"the file to resume was measured in another environment (differs in "
            f"{', '.join(diff)})",
            hint="start a new results file with -o",
        )
    planned = {
        (t.adapter.name, p.name, plan.backend.name): cell_params(p, plan.options(t))
        for t in plan.targets
        for p in plan.paths(t)
    }
    for cell in previous.cells:
        want = planned.get(cell.key)
        if want is None:
            continue
        old, new = _comparable(cell.params), _comparable(want)
        if old != new:
            what = ", ".join(
                f"{k} {old[k]!r} there, {new[k]!r} now" for k in old if old[k] != new[k]
            )
            raise UsageError(
                f"{cell.key_text} in the file to resume was measured with other parameters "
                f"({what})",
                hint="use the same options, or start a new results file with -o",
            )


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
    built = state.built.get(t.adapter.name, "")
    setup_error = built if built.startswith("build failed") else None
    history = state.durations.setdefault(t.adapter.name, [])

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
                outcome = measure_run(t, p, opts, run_dir, state.window, noted)
            if state.window is None:
                state.window = outcome.window
            state.client_rps.setdefault(key, []).append(list(outcome.client_rps))
            history.append(time.monotonic() - t0)
            runs.append(Run(outcome.value, outcome.reason is None, outcome.reason, outcome.detail))
            if outcome.detail is not None:
                windows += [
                    spread.Window(f"run {i + 1} rep {j + 1}", rep, functions)
                    for j, (rep, functions) in enumerate(
                        zip(outcome.detail.reps, outcome.functions, strict=False)
                    )
                    if functions is not None
                ]
            counter.add(1)
            if outcome.reason is not None:
                break
    counter.add(opts.runs - len(runs))
    request = next(
        (r.detail.request for r in runs if isinstance(r.detail, ServeDetail) and r.detail.request),
        None,
    )
    params = cell_params(p, opts)
    params.update(request_params(request))  # type: ignore[typeddict-item]
    return Cell(
        name=t.adapter.name,
        path=p.name,
        backend=backend,
        unit=UNIT_INSTRUCTIONS if p.cold_start else UNIT_PER_REQUEST,
        runs=tuple(runs),
        params=params,
        runs_wanted=opts.runs,
        max_spread=opts.max_spread,
        extra=_extra(t, windows, opts.max_spread),
        setup_error=setup_error,
        order=order,
    )


def run_session(
    plan: Plan, progress: Progress, recorder: environment.ProvenanceRecorder
) -> Results:
    """Measure every (target, path) cell of the plan (of its shard, with --shard) missing
    from `plan.start`, --jobs at a time, saving the results file (and its provenance)
    after each; returns all cells."""
    state = SessionState()

    def save(res: Results) -> None:
        results.save(plan.out, res, recorder.finish(provenance(plan, state)), overwrite=True)

    backend = plan.backend.name
    done_keys = {c.key for c in plan.start.cells}
    order = {
        (t.adapter.name, p.name): i
        for i, (t, p) in enumerate((t, p) for t in plan.targets for p in plan.paths(t))
    }
    mine = None if plan.shard is None else {e.key for e in plan.shard.assigned()}
    todo = [
        (t, p)
        for t in plan.targets
        for p in plan.paths(t)
        if (t.adapter.name, p.name, backend) not in done_keys
        and (mine is None or (t.adapter.name, p.name, backend) in mine)
    ]
    state.resumed = [c.key_text for c in plan.start.cells]
    _build(sorted({t.adapter.name: t for t, _ in todo}.values(), key=lambda t: t.adapter.name),
           state, progress)  # fmt: skip
    res = plan.start
    counter = jobs.Tally(sum(plan.options(t).runs for t, _ in todo))
    splits = plan.job_cpus.splits

    def work(item: tuple[Target, PathSpec], job: jobs.Job) -> Cell:
        t, p = item
        return _measure_cell(plan, state, t, p, splits[job.slot], order[(t.adapter.name, p.name)],
                             counter, progress, job)  # fmt: skip

    def done(item: tuple[Target, PathSpec], cell: Cell) -> None:
        nonlocal res
        res = res.with_cell(cell)
        save(res)

    jobs.run_jobs(todo, len(splits), work, done)
    progress("done", counter.total, counter.total)
    save(res)
    return res
