"""What an `icount run` session will measure, and how: the plan.

`RunRequest` is the session as asked: the commands and typed options, parsed once
(by the CLI, or from the provenance of the file to resume). It is saved in the
provenance file, so that `--resume FILE` continues with the same commands and
options (`resume_request`). `prepare` resolves a request into a `RunPlan`: the
backend, the CPUs of each job (--jobs), the shard this process measures (--shard),
the fingerprint and the cells already measured, checking the file to resume.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from icount import backends, environment, memory, procs, results, shards, startup_floor
from icount import cpus as cpus_mod
from icount.errors import UsageError
from icount.measure_command import CommandSpec, RunOptions, measure, planned_cells
from icount.progress import Progress
from icount.results import UNIT_INSTRUCTIONS, Cell, Results
from icount.session import options as o
from icount.session import planning, scheduler
from icount.session import resume as resume_mod

ANY_EXIT = frozenset(range(-255, 256))


@dataclass(frozen=True)
class RunRequest:
    """`icount run` as asked: the commands (resolved: absolute programs) and options."""

    commands: tuple[CommandSpec, ...] = ()
    backend: str = "auto"
    runs: int = o.RUNS
    max_spread: float = o.MAX_SPREAD
    allowed_exits: frozenset[int] | None = frozenset({0})  # None: any
    timeout: float | None = None
    keep_profiles: bool = False
    memory: bool = False  # --memory: peak RSS of native runs beside the counts
    floor: str | None = None  # --floor: 'auto' (each cell's kind) or a command line
    cache_sim: bool = False  # --cache-sim: estimated cycles from callgrind's caches
    profile_top: int = o.PROFILE_TOP  # functions each cell's profile keeps (callgrind)

    def backend_settings(self) -> dict[str, object]:
        """The settings the backend is built with (backends.settings), given or not."""
        return {"keep_profiles": self.keep_profiles, "profile_top": self.profile_top}

    def to_json(self) -> dict[str, Any]:
        """The plan as the provenance records it, every option of RESUMED_OPTIONS as
        `resume_request` reads it back."""
        saved = {f: getattr(self, f) for f in RESUMED_OPTIONS}
        saved["max_spread"] = o.percent_text(self.max_spread)
        exits = self.allowed_exits
        saved["allowed_exits"] = None if exits is None else sorted(exits)
        for option in _WRITTEN_WHEN_SET:
            if not saved[option]:
                del saved[option]
        commands = [
            {"name": c.name, "argv": list(c.argv), "env": dict(sorted(c.env.items()))}
            for c in self.commands
        ]
        return {"commands": commands, **saved}


def _exits_from_json(value: Any) -> frozenset[int] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise ValueError(value)
    return frozenset(o.int_from_json(v, -255, 255) for v in value)


def _commands_from_json(value: Any) -> tuple[CommandSpec, ...]:
    if not isinstance(value, list) or not value:
        raise ValueError(value)
    specs = []
    for doc in value:
        if not isinstance(doc, dict):
            raise ValueError(doc)
        argv, env = doc.get("argv"), doc.get("env", {})
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise ValueError(doc)
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise ValueError(doc)
        specs.append(CommandSpec(o.str_from_json(doc.get("name")), tuple(argv), env))
    return tuple(specs)


# Options that --resume takes from the file unless given again, and how each is read.
RESUMED_OPTIONS: dict[str, Callable[[Any], Any]] = {
    "backend": o.str_from_json,
    "runs": lambda v: o.int_from_json(v, 1, 1000),
    "max_spread": o.spread_from_json,
    "allowed_exits": _exits_from_json,
    "timeout": lambda v: None if v is None else o.float_from_json(v, 0.001, 1e9),
    "memory": o.bool_from_json,
    "floor": o.str_from_json,
    "cache_sim": o.bool_from_json,
}
# the command-line parameter of an option whose field is named otherwise
_PARAMETER = {"allowed_exits": "allow_exit"}
# recorded only when on: a plan without them reads as one written before they existed
_WRITTEN_WHEN_SET = ("memory", "floor", "cache_sim")


def resume_request(request: RunRequest, resume: Path, explicit: frozenset[str]) -> RunRequest:
    """`request` completed from the session being resumed: every option in
    RESUMED_OPTIONS not given explicitly. Its commands are never the file's: a results
    file from elsewhere (a cache, an artifact) must not choose what runs, so they are
    given again (the refusal names those it recorded)."""
    plan = resume_mod.saved_plan(resume)
    if not request.commands:
        import shlex

        from icount.text import printable

        try:
            recorded = _commands_from_json(plan.get("commands"))
        except ValueError:
            recorded = ()
        listed = "; ".join(printable(f"{c.name}={shlex.join(c.argv)}") for c in recorded[:3])
        more = f" and {len(recorded) - 3} more" if len(recorded) > 3 else ""
        raise UsageError(
            f"--resume {resume} runs only the commands given again (--cmd NAME=..., --file "
            "or after --), never those the file records",
            hint=f"it records {listed}{more}" if recorded else "give the commands again",
        )
    changes = planning.resumed_options(RESUMED_OPTIONS, plan, explicit, resume, _PARAMETER)
    return replace(request, **changes)


@dataclass(frozen=True)
class RunPlan:
    request: RunRequest
    opts: RunOptions
    backend_why: str
    out: Path
    start: Results  # the cells already measured (--resume), and the shard record
    shard_spec: shards.ShardSpec | None = None

    @property
    def artifacts(self) -> Path:
        return self.out.with_suffix(".artifacts")

    def notes(self) -> list[str]:
        """What the user should know before the measurement starts."""
        lines = [f"backend {self.opts.backend.name}: {self.backend_why}"]
        if self.start.shard is not None and self.shard_spec is not None:
            lines.append(shards.describe(self.start.shard, self.shard_spec))
        if self.opts.jobs:
            each = "; ".join(cpus_mod.format_cpu_list(c) for c in self.opts.jobs)
            lines.append(f"{len(self.opts.jobs)} commands at once, on CPUs {each}")
        return lines

    def provenance(self) -> dict[str, Any]:
        spec = self.shard_spec
        jobs = self.opts.jobs
        return {
            "plan": self.request.to_json(),
            "backend_choice": self.backend_why,
            "jobs": {"jobs": max(len(jobs), 1), "cpus": [list(c) for c in jobs]},
            "shard": None if spec is None else spec.to_json(),
        }


def _ours(cell: Cell) -> bool:
    return cell.unit == UNIT_INSTRUCTIONS and cell.path == "" and "argv" in cell.params


def _measured_with(cell: Cell) -> dict[str, Any]:
    p = cell.params
    return {
        "argv": p.get("argv"),
        "env": p.get("env"),
        "allowed_exits": p.get("allowed_exits"),
        "runs": cell.runs_wanted,
        "max_spread": cell.max_spread,
    }


def _floors(floor: str | None) -> startup_floor.Floors | None:
    """--floor auto: each cell's kind's trivial program; --floor CMD: that command for
    every cell, its program resolved as a measured command's is."""
    if floor is None:
        return None
    if floor == "auto":
        return startup_floor.Floors()
    try:
        argv = shlex.split(floor)
    except ValueError as e:
        raise UsageError(f"--floor: {e}") from None
    if not argv:
        raise UsageError("--floor is empty", hint="give a command line, or auto")
    return startup_floor.Floors(given=(procs.resolve_command(argv[0]), *argv[1:]))


def prepare(
    request: RunRequest,
    *,
    output: Path | None,
    resume: Path | None,
    force: bool,
    shard: shards.ShardSpec | None = None,
    jobs: int = 1,
) -> RunPlan:
    """Resolve and check everything before the first command runs. The results file's
    number, when it is not given, is reserved (results.output_path) and released again
    when the plan is refused."""
    with planning.reserved_output(output, resume, "run", force=force) as out:
        return _prepare(request, out, resume, shard, jobs)


def _prepare(
    request: RunRequest,
    out: Path,
    resume: Path | None,
    shard: shards.ShardSpec | None,
    jobs: int,
) -> RunPlan:
    if request.memory:  # before anything runs, not at the first cell's native runs
        procs.require("time", memory.TIME_REMEDY)
    choice = backends.choose(request.backend)
    if request.cache_sim and choice.backend != "callgrind":
        raise UsageError(
            f"--cache-sim simulates caches under callgrind, not {choice.backend}",
            hint="give --backend callgrind",
        )
    settings = backends.settings(choice.backend, request.backend_settings())
    backend = backends.command_backend(choice.backend, settings)
    job_cpus = (
        cpus_mod.command_cpus(
            cpus_mod.allowed_cpus(),
            jobs,
            load_independent=backend.instrumented,
            backend=choice.backend,
        )
        if jobs > 1
        else ()
    )
    opts = RunOptions(
        backend=backend,
        runs=request.runs,
        max_spread=request.max_spread,
        allowed_exits=ANY_EXIT if request.allowed_exits is None else request.allowed_exits,
        timeout=request.timeout,
        jobs=job_cpus,
        memory=request.memory,
        floors=_floors(request.floor),
        cache_sim=request.cache_sim,
    )
    fp = backends.fingerprint(backend, "command")
    previous, shard = planning.to_resume(resume, "run", _ours, shard)
    specs = request.commands
    record = planning.shard_record("run", lambda: planned_cells(specs, opts), shard)
    start = planning.start(
        fp,
        record,
        previous,
        resume,
        lambda: {c.key: c.identity for c in planned_cells(specs, opts)},
        _measured_with,
    )
    return RunPlan(request, opts, choice.why, out, start, shard)


def run_session(
    plan: RunPlan, progress: Progress | None, recorder: environment.ProvenanceRecorder
) -> Results:
    """Measure the plan's commands (of its shard) missing from `plan.start`, saving the
    results file and its provenance after each; returns all cells."""
    save = scheduler.Saver(plan.out, recorder, plan.provenance)
    try:
        return measure(
            plan.request.commands, plan.opts, plan.artifacts, progress, save, start=plan.start
        )
    finally:
        if plan.opts.floors is not None:
            plan.opts.floors.cleanup()
        results.release_unused(plan.out)  # written: another icount may write it now
