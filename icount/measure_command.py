"""`icount run`: count whole commands, several fresh processes each, into cells.

Core only: it reports progress through a callback and returns Results; it never
prints. Each run executes in a fresh working directory of fixed path length, in
icount's cleared environment, with ASLR off where permitted.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from icount import environment, procs
from icount.backends import Backend, fingerprint
from icount.progress import Progress
from icount.results import UNIT_INSTRUCTIONS, Cell, Results, Run
from icount.results.details import CommandDetail, CommandParams
from icount.stats import DEFAULT_MAX_SPREAD


@dataclass(frozen=True)
class CommandSpec:
    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RunOptions:
    backend: Backend
    runs: int = 3
    max_spread: float = DEFAULT_MAX_SPREAD
    allowed_exits: frozenset[int] = frozenset({0})
    timeout: float | None = None
    cwd: Path | None = None  # None: a fresh fixed-length directory per run


def resolve(spec: CommandSpec, base: Path) -> CommandSpec:
    """Make the program and any existing relative file arguments absolute.

    Commands run in another directory and with a fixed PATH, so what the user's
    shell would have found is resolved here, before anything is measured. Raises
    ToolMissingError for a program that does not exist.
    """
    exe = procs.resolve_command(spec.argv[0])
    args = environment.absolute_file_args(spec.argv[1:], base)
    return CommandSpec(spec.name, (exe, *args), spec.env)


def measure_once(spec: CommandSpec, opts: RunOptions, run_dir: Path) -> Run:
    workdir = opts.cwd or environment.make_workdir()
    env = environment.clean_env(workdir, spec.env)
    try:
        c = opts.backend.count_command(
            spec.argv, run_dir, env=env, cwd=workdir, timeout=opts.timeout
        )
    finally:
        if opts.cwd is None:
            shutil.rmtree(workdir, ignore_errors=True)
    detail = CommandDetail(c.returncode, c.processes)
    if c.timed_out:
        return Run(None, False, f"timed out after {opts.timeout:g} s (--timeout)", detail)
    if c.returncode not in opts.allowed_exits:
        return Run(
            c.instructions, False, procs.exit_reason(c.returncode, run_dir / "stderr"), detail
        )
    if c.problem is not None or c.instructions is None:
        return Run(None, False, c.problem or "nothing counted", detail)
    return Run(float(c.instructions), True, None, detail)


def measure(
    specs: Sequence[CommandSpec],
    opts: RunOptions,
    artifacts: Path,
    progress: Progress | None = None,
    on_cell: Callable[[Results], None] | None = None,
) -> Results:
    """Measure every command `opts.runs` times. A failed run ends its cell early
    (the cell is invalid whatever the other runs say); other cells go on."""
    results = Results(fingerprint(opts.backend, "command"), ())
    total = len(specs) * opts.runs
    done = 0
    for order, spec in enumerate(specs):
        runs: list[Run] = []
        for i in range(opts.runs):
            if progress:
                progress(f"{spec.name}: run {i + 1}/{opts.runs}", done, total)
            run = measure_once(
                spec, opts, artifacts / environment.safe_name(spec.name) / f"run-{i + 1}"
            )
            runs.append(run)
            done += 1
            if not run.valid:
                done += opts.runs - i - 1
                break
        params: CommandParams = {
            "argv": list(spec.argv),
            "env": dict(sorted(spec.env.items())),
            "allowed_exits": sorted(opts.allowed_exits),
        }
        cell = Cell(
            name=spec.name,
            path="",
            backend=opts.backend.name,
            unit=UNIT_INSTRUCTIONS,
            runs=tuple(runs),
            params=params,
            runs_wanted=opts.runs,
            max_spread=opts.max_spread,
            order=order,
        )
        results = results.with_cell(cell)
        if on_cell:
            on_cell(results)
    if progress:
        progress("done", total, total)
    return results
