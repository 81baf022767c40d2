"""`icount interleave --base-target A --new-target B`: two server builds measured
alternately, a fresh server process each run (base, new, base, new ...), and a control
build in the same rounds where one is given (turns.py, compare/control.py).

Every path of the targets is a cell. Each run is one run of that serve cell: planned
by `icount serve`'s plan (serve/plan.py: backend, load generator, CPUs, each target's
warm-up and window size), measured by serve/runs.py `measure_run` on the load CPUs,
the window method the first run decided kept for the rest, as serve/session.py does.
So that only the code differs between the arms, every arm runs where the others do:
built into folders of one length, started in the work dir of the cell (one name for
all arms), its program from WORKDIR/bin/NAME (environment.fixed_program): the same
binary from two folders counts the same.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icount import cpus as cpus_mod
from icount import environment, results
from icount.compare.control import ControlArm, Rounds, judged
from icount.compare.model import Comparison, Row, Verdict, compare_pairs
from icount.compare.thresholds import Thresholds
from icount.errors import RunFailedError, UsageError
from icount.interleave.turns import BASE, CONTROL, NEW, Interleaved, rounds
from icount.progress import Progress
from icount.results import UNIT_PER_REQUEST
from icount.serve.adapter import PathSpec
from icount.serve.plan import Plan, ServeRequest, prepare, target_digest
from icount.serve.runs import WindowMethod, measure_run
from icount.serve.server import Target, launch_problem
from icount.serve.targets import choose_targets
from icount.session.scheduler import work_dir_key


@dataclass(frozen=True)
class Arms:
    """What an interleave of servers measures: the plan (of the base target; the other
    arms are measured with its backend, load generator and CPUs), each arm's target,
    and the paths that are its cells, in order."""

    plan: Plan
    targets: dict[str, Target]
    paths: tuple[str, ...]

    @property
    def control(self) -> bool:
        return CONTROL in self.targets

    def record(self, pairs: int) -> dict[str, Any]:
        """What the interleave measured with, for the comparison's provenance: serve's
        options as serve's provenance records a session's plan, the backend, load
        generator and CPUs they resolved to, and each arm's target and cell options."""
        plan = self.plan
        saved = plan.request.to_json(())
        for unused in ("targets", "cmd", "runs", "cold_start", "memory"):  # one run a turn
            saved.pop(unused, None)
        arms = {}
        for arm, t in self.targets.items():
            opts = plan.options(t)
            # arrival as a serve cell's params record it (one for every arm: the plan's)
            arms[arm] = {"target": t.adapter.name, "digest": target_digest(t.adapter),
                         "requests": opts.requests, "warmup": opts.warmup.param(),
                         "arrival": str(opts.arrival)}  # fmt: skip
        return {**saved, "pairs": pairs, "paths": list(self.paths),
                "backend": plan.backend.name, "load": plan.load_kind,
                "server_cpus": list(plan.cpus.server), "load_cpus": list(plan.cpus.load),
                "max_load": plan.request.max_load, "arms": arms}  # fmt: skip


def _path(target: Target, name: str) -> PathSpec | None:
    return next((p for p in target.adapter.paths if p.name == name), None)


def prepare_arms(
    request: ServeRequest, given: dict[str, str], only: Sequence[str], work: Path
) -> Arms:
    """Resolve the targets (`given`: arm -> adapter file, folder or bundled name) and
    the paths (`only`, or every path of new then those only the base has) before any
    server starts; `work` is where builds and runs go."""
    # no windows added for a collected runtime's total: the pairs judge each run's
    # figure, its mutator, and nothing would read them (a minute or two a run)
    plan = prepare(
        dataclasses.replace(request, targets=(given[BASE],), runs=1, max_windows=request.reps),
        output=work / "serve.json",
        resume=None,
        force=True,
    )
    results.release_unused(plan.out)  # nothing is written there: the claim only
    adapters = {BASE: plan.targets[0].adapter}
    for arm in (NEW, CONTROL):
        if arm in given:
            adapters[arm] = choose_targets((given[arm],), None).adapters[0]
    # folders of one length: a build's path can be in the server's arguments or files
    targets = {
        arm: Target(a, work / "build" / f"arm{i}")
        for i, (arm, a) in enumerate(sorted(adapters.items(), key=lambda kv: _ORDER[kv[0]]))
    }
    names = [p.name for p in targets[NEW].adapter.paths]
    names += [p.name for p in targets[BASE].adapter.paths if p.name not in names]
    for name in only:
        if name not in names:
            raise UsageError(
                f"--path {name}: neither target has that path", hint=f"paths: {', '.join(names)}"
            )
    paths = tuple(n for n in names if not only or n in only)
    if CONTROL in targets:
        for name in paths:
            both = _path(targets[BASE], name) and _path(targets[NEW], name)
            if both and _path(targets[CONTROL], name) is None:
                raise UsageError(
                    f"--control-target {given[CONTROL]} has no path {name!r}, which base "
                    "and new are compared on",
                    hint="give the control the same paths, or choose paths with --path",
                )
    return Arms(dataclasses.replace(plan, targets=(targets[BASE],)), targets, paths)


_ORDER = {BASE: 0, NEW: 1, CONTROL: 2}


@contextmanager
def prepared(request: ServeRequest, given: dict[str, str], only: Sequence[str]) -> Iterator[Arms]:
    """prepare_arms in a temporary folder of its own, removed when the interleave ends."""
    with tempfile.TemporaryDirectory(prefix="icount-interleave-") as tmp:
        yield prepare_arms(request, given, only, Path(tmp))


def compare(
    arms: Arms,
    pairs: int,
    name: str | None,
    limits: Thresholds,
    argv: Sequence[str],
    progress: Progress | None = None,
) -> tuple[Comparison, dict[str, Any]]:
    """The comparison (the cell named `name`, or the new target's name), and its
    provenance: the machine's state over the measurement (`argv` the command line) and
    what it measured with (Arms.record)."""
    cell = name or arms.targets[NEW].adapter.name
    recorder = environment.ProvenanceRecorder(list(argv))
    comparison = measure(arms, pairs, cell, limits, progress)
    return comparison, recorder.finish({"plan": arms.record(pairs)})


def _setup(arms: Arms, progress: Progress | None) -> dict[str, str]:
    """Build every arm and check that the backend can start it: arm -> why it cannot."""
    from icount.serve.adapter import build_adapter

    problems: dict[str, str] = {}
    backend = arms.plan.backend
    for arm, t in arms.targets.items():
        if t.adapter.build:
            if progress:
                progress(f"building {arm} ({t.adapter.name})", 0, 0)
            try:
                build_adapter(t.adapter, t.build_dir)
            except RunFailedError as e:
                problems[arm] = f"build failed: {e}"
                continue
        why = launch_problem(t, backend)
        if why is not None:
            problems[arm] = why
    return problems


def measure(
    arms: Arms,
    pairs: int,
    name: str,
    limits: Thresholds,
    progress: Progress | None = None,
) -> Comparison:
    """Every path's rounds, path after path, judged on the median of its pairs' ratios
    (and against the control's drift, with one)."""
    plan = arms.plan
    backend = plan.backend.name
    problems = _setup(arms, progress)
    window: list[WindowMethod | None] = [None]  # the first run's decision, for the rest
    rows: list[Row] = []
    for path in arms.paths:
        specs = {arm: _path(t, path) for arm, t in arms.targets.items()}
        missing = [arm for arm in (BASE, NEW) if specs[arm] is None]
        if missing:
            verdict = Verdict.MISSING_IN_BASE if BASE in missing else Verdict.MISSING_IN_NEW
            why = f"no path {path!r} in the {missing[0]} target"
            rows += compare_pairs(name, backend, UNIT_PER_REQUEST, (), (verdict, why), limits,
                                  path).rows  # fmt: skip
            continue
        done = _path_rounds(arms, path, specs, pairs, problems, window, name, progress)
        row = _row(name, backend, path, done, limits)
        rows.append(judged(row, Rounds(done.pairs, done.control)))
    only = rows[0].rounds if len(rows) == 1 else None
    # one cell: its pairs are the comparison's, shown as a command interleave's are
    return Comparison(tuple(rows), limits, pairs=only.pairs if only is not None else ())


def _row(name: str, backend: str, path: str, done: Interleaved, limits: Thresholds) -> Row:
    failed = done.failed
    if failed is None and not done.pairs:  # a control that could not start: nothing ran
        failed = (Verdict.UNCHANGED, "")
    (row,) = compare_pairs(name, backend, UNIT_PER_REQUEST, done.pairs, failed, limits, path).rows
    return row


def _path_rounds(
    arms: Arms,
    path: str,
    specs: dict[str, PathSpec | None],
    pairs: int,
    problems: dict[str, str],
    window: list[WindowMethod | None],
    name: str,
    progress: Progress | None,
) -> Interleaved:
    for arm in (BASE, NEW):
        if arm in problems:
            verdict = Verdict.INVALID_IN_BASE if arm == BASE else Verdict.INVALID_IN_NEW
            return Interleaved((), (verdict, f"{arm}: {problems[arm]}"))
    if CONTROL in problems:
        return Interleaved((), None, ControlArm((), f"control: {problems[CONTROL]}"))
    plan = arms.plan
    safe = environment.safe_name

    def run(arm: str, i: int) -> tuple[float | None, str | None]:
        t, spec = arms.targets[arm], specs[arm]
        assert spec is not None
        run_dir = plan.artifacts.parent / "runs" / safe(path) / f"pair-{i:03d}-{arm}"
        outcome = measure_run(t, spec, plan.options(t), run_dir, window[0], lambda text: None)
        if window[0] is None:
            window[0] = outcome.window
        return outcome.value, outcome.reason

    key = work_dir_key((name, path, plan.backend.name))
    with cpus_mod.pinned_self(plan.cpus.load), environment.work_dirs_named(key):
        return rounds(run, pairs, arms.control, progress, path)
