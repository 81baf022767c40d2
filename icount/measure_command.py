"""`icount run`: count whole commands, several fresh processes each, into cells.

Core only: it reports progress through a callback and returns Results; it never
prints. The scheduler (icount/session/scheduler.py) takes the shard's commands not
yet measured and runs --jobs of them at once, each pinned to CPUs of its own; this
module measures one command. Each run executes in a fresh working directory of fixed
path length named after the command, in icount's cleared environment, with ASLR off
where permitted. What a session measures, and how, is planned in run_plan.py.
"""

from __future__ import annotations

import contextlib
import shutil
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from icount import build_label, cache_sim, environment, eta, jobs, memory, procs, startup_floor
from icount.backends import CommandBackend, fingerprint
from icount.cpus import pinned_self
from icount.errors import ParseError, UsageError
from icount.progress import Progress, tell_time_left
from icount.results import UNIT_INSTRUCTIONS, Cell, Results, Run, read_bounded
from icount.results.cell_profile import PER_RUN, cell_profile
from icount.results.details import CommandDetail, CommandParams
from icount.results.shard import ShardRecord
from icount.session import options as o
from icount.session import scheduler
from icount.shards import PlannedCell
from icount.window_profile import WindowProfile


@dataclass(frozen=True)
class CommandSpec:
    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RunOptions:
    backend: CommandBackend
    runs: int = o.RUNS
    max_spread: float = o.MAX_SPREAD
    allowed_exits: frozenset[int] = frozenset({0})
    timeout: float | None = None
    cwd: Path | None = None  # None: a fresh fixed-length directory per run
    # --jobs N: the CPUs of each of N commands measured at once; (): one at a time,
    # wherever the kernel puts it
    jobs: tuple[tuple[int, ...], ...] = ()
    memory: bool = False  # --memory: the peak RSS of as many native runs
    floors: startup_floor.Floors | None = None  # --floor: each kind's start-up floor
    cache_sim: bool = False  # --cache-sim: one more run, simulating caches (callgrind)


def resolve(spec: CommandSpec, base: Path) -> CommandSpec:
    """Make the program and any existing relative file arguments absolute.

    Commands run in another directory and with a fixed PATH, so what the user's
    shell would have found is resolved here, before anything is measured. Raises
    ToolMissingError for a program that does not exist.
    """
    problem = environment.exec_problem(spec.argv, spec.env)
    if problem is not None:
        raise UsageError(f"command {spec.name}: {problem}")
    exe = procs.resolve_command(spec.argv[0])
    args = environment.absolute_file_args(spec.argv[1:], base)
    return CommandSpec(spec.name, (exe, *args), spec.env)


MAX_COMMANDS_BYTES = 1024 * 1024  # a page of TOML


def load_commands_file(path: Path, env: Mapping[str, str]) -> list[CommandSpec]:
    """The [[command]] tables of a commands file (`run --file`), each with `env` under
    its own."""
    import tomllib

    data = read_bounded(path, MAX_COMMANDS_BYTES, ParseError, "a commands file")
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ParseError(f"not UTF-8 text (byte {e.start})", source=str(path)) from None
    except tomllib.TOMLDecodeError as e:
        raise ParseError(f"invalid TOML: {e}", source=str(path)) from None
    entries = doc.get("command")
    if not isinstance(entries, list) or not entries:
        raise UsageError(f"{path}: expected one or more [[command]] tables")
    specs = []
    for i, entry in enumerate(entries, 1):
        argv = entry.get("argv") if isinstance(entry, dict) else None
        label = entry.get("name") if isinstance(entry, dict) else None
        extra = entry.get("env", {}) if isinstance(entry, dict) else None
        if not isinstance(label, str) or not label:
            raise UsageError(f'{path}: command {i} needs a name = "..."')
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise UsageError(f'{path}: command {label!r} needs argv = ["prog", "arg", ...]')
        if not isinstance(extra, dict) or not all(isinstance(v, str) for v in extra.values()):
            raise UsageError(f"{path}: command {label!r}: env must map names to strings")
        specs.append(CommandSpec(label, tuple(argv), {**env, **extra}))
    return specs


def measure_once(spec: CommandSpec, opts: RunOptions, run_dir: Path) -> Run:
    return measure_profiled(spec, opts, run_dir)[0]


def measure_profiled(
    spec: CommandSpec, opts: RunOptions, run_dir: Path
) -> tuple[Run, WindowProfile | None]:
    """One run, and its functions where the backend sees them (a valid run's only)."""
    workdir = opts.cwd or environment.make_workdir()
    # the program's fixed-path link goes in a work dir of icount's, never in a --cwd
    links = workdir if opts.cwd is None else environment.make_workdir()
    env = environment.clean_env(workdir, spec.env)
    try:
        argv = environment.fixed_program(spec.argv, links)
        c = opts.backend.count_command(argv, run_dir, env=env, cwd=workdir, timeout=opts.timeout)
    finally:
        shutil.rmtree(links, ignore_errors=True)
    detail = CommandDetail(c.returncode, c.processes)
    if c.timed_out:
        return Run(None, False, f"timed out after {opts.timeout:g} s (--timeout)", detail), None
    if c.returncode not in opts.allowed_exits:
        why = procs.exit_reason(c.returncode, run_dir / "stderr")
        if c.problem is not None:  # valgrind's own complaint, with its remedy where known
            why = f"{why}; {c.problem}"
        return Run(c.instructions, False, why, detail), None
    if c.problem is not None or c.instructions is None:
        return Run(None, False, c.problem or "nothing counted", detail), None
    return Run(float(c.instructions), True, None, detail), c.profile


def planned_cells(specs: Sequence[CommandSpec], opts: RunOptions) -> list[PlannedCell]:
    """Every command of the session, in order, as shards are assigned. A command's cost
    is not known before it runs: all weigh the same, and shards take turns."""
    return [
        PlannedCell(
            spec.name,
            "",
            opts.backend.name,
            {**_params(spec, opts), "runs": opts.runs, "max_spread": opts.max_spread},
            float(opts.runs),
        )
        for spec in specs
    ]


def _params(spec: CommandSpec, opts: RunOptions) -> CommandParams:
    return {
        "argv": list(spec.argv),
        "env": dict(sorted(spec.env.items())),
        "allowed_exits": sorted(opts.allowed_exits),
    }


def _measure_cell(
    spec: CommandSpec,
    order: int,
    opts: RunOptions,
    artifacts: Path,
    progress: Progress | None,
    counter: jobs.Tally,
    job: jobs.Job,
    pace: eta.Pace,
) -> Cell:
    runs: list[Run] = []
    key = str(order)
    walls: list[float] = []  # the runs' wall times, against which --cache-sim's is stated
    profiles: list[tuple[WindowProfile, int]] = []
    # read before the runs: the binary measured, not one rebuilt meanwhile
    label = build_label.label_of(spec.argv[0])
    cpus = opts.jobs[job.slot] if opts.jobs else None
    # the commands inherit the CPUs of the thread that starts them
    pace.start(key)  # to the cell's end: its floor, cache simulation and native runs
    with pinned_self(cpus) if cpus else contextlib.nullcontext():
        for i in range(opts.runs):
            job.check()
            if progress:
                tell_time_left(progress, pace.left())
                progress(f"{spec.name}: run {i + 1}/{opts.runs}", counter.done, counter.total)
            pace.begin(key)
            t0 = time.monotonic()
            run, profile = measure_profiled(
                spec, opts, artifacts / environment.safe_name(spec.name) / f"run-{i + 1}"
            )
            walls.append(time.monotonic() - t0)
            pace.end(key, measured=run.valid)
            runs.append(run)
            if profile is not None:
                profiles.append((profile, 1))
            counter.add(1)
            if not run.valid:
                counter.add(opts.runs - i - 1)
                break
    extra: dict[str, object] = {"build": label}
    if opts.floors is not None and len(runs) == opts.runs and all(r.valid for r in runs):
        floor_dir = artifacts / "floors"

        def floor_runs(argv: tuple[str, ...]) -> list[Run]:
            if progress:
                tell_time_left(progress, pace.left())
                progress(f"{spec.name}: start-up floor", counter.done, counter.total)
            fspec = CommandSpec(spec.name, argv, spec.env)
            name = environment.safe_name(" ".join(argv))
            return [
                measure_once(fspec, opts, floor_dir / name / f"run-{i + 1}")
                for i in range(opts.runs)
            ]

        with pinned_self(cpus) if cpus else contextlib.nullcontext():
            extra[startup_floor.KEY] = startup_floor.floor_of(
                label, spec.argv, opts.floors, floor_dir / "build", floor_runs
            )
    if opts.cache_sim and len(runs) == opts.runs and all(r.valid for r in runs):
        if progress:
            tell_time_left(progress, pace.left())
            progress(f"{spec.name}: cache simulation", counter.done, counter.total)
        sim_dir = artifacts / environment.safe_name(spec.name) / "cache-sim"
        with pinned_self(cpus) if cpus else contextlib.nullcontext():
            extra[cache_sim.KEY] = cache_sim.simulate(
                spec.argv, spec.env, sim_dir, opts.timeout, statistics.median(walls)
            )
    if opts.memory and len(runs) == opts.runs and all(r.valid for r in runs):
        if progress:
            tell_time_left(progress, pace.left())
            progress(f"{spec.name}: peak memory, native", counter.done, counter.total)
        native = artifacts / environment.safe_name(spec.name) / "native"
        with pinned_self(cpus) if cpus else contextlib.nullcontext():
            extra[memory.KEY] = memory.command_peaks(
                spec.argv, spec.env, opts.runs, opts.allowed_exits, opts.timeout, native
            )
    pace.finish(key)
    return Cell(
        name=spec.name,
        path="",
        backend=opts.backend.name,
        unit=UNIT_INSTRUCTIONS,
        runs=tuple(runs),
        params=_params(spec, opts),
        runs_wanted=opts.runs,
        max_spread=opts.max_spread,
        extra=extra,
        order=order,
        profile=cell_profile(profiles, PER_RUN),
    )


def measure(
    specs: Sequence[CommandSpec],
    opts: RunOptions,
    artifacts: Path,
    progress: Progress | None = None,
    on_cell: Callable[[Results], None] | None = None,
    shard: ShardRecord | None = None,
    start: Results | None = None,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> Results:
    """Measure every command (of `shard`'s, when given; not in `start`, the file being
    resumed) `opts.runs` times, len(opts.jobs) commands at a time, calling `on_cell`
    with the results so far after each. A failed run ends its cell early (the cell is
    invalid whatever the other runs say); other cells go on. The time left told to
    `progress` is each command's runs left at what its own runs took (`clock`), before
    one of its own has ended at what the commands ended so far took a run (their floor,
    cache simulation and native runs included), else at the mean run so far."""
    if start is None:
        start = Results(fingerprint(opts.backend, "command"), (), shard)
    planned = [
        scheduler.Planned((spec.name, "", opts.backend.name), order, opts.runs, spec)
        for order, spec in enumerate(specs)
    ]

    todo = scheduler.todo(planned, start)
    pace = eta.Pace(
        {str(c.order): eta.Work(opts.runs, 1.0, likes=("command",)) for c in todo},
        jobs=len(opts.jobs),
        clock=clock,
    )

    def one(cell: scheduler.Planned[CommandSpec], job: jobs.Job, counter: jobs.Tally) -> Cell:
        return _measure_cell(cell.item, cell.order, opts, artifacts, progress, counter, job, pace)

    return scheduler.measure_cells(
        todo,
        start,
        one,
        on_cell or (lambda res: None),
        jobs_at_once=len(opts.jobs),
        progress=progress,
    )
