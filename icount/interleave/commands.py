"""`icount interleave --base-cmd A --new-cmd B`: two commands measured alternately, a
fresh process each run, with a control command in the same rounds where one is given.

On a noisy backend (perf on a shared machine) slow drifts in the machine's state
hit both sides of a pair alike, so the ratio new/base of each pair carries less
noise than two separate batches would; the median of the ratios is what is gated
on (see model.compare_pairs). A control arm (a third, unchanged build) runs in the
same rounds; its drift bounds what the comparison may claim (compare/control.py).

Each run is a fresh process measured exactly as `icount run` measures one
(measure_command.measure_once), in the work dir `icount run` gives the cell, so that
every arm runs from the same fixed path (environment.fixed_program). Servers:
servers.py, on the same turns (turns.py).
"""

from __future__ import annotations

import dataclasses
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path

from icount import environment
from icount.compare.control import Rounds, judged
from icount.compare.model import Comparison, compare_pairs
from icount.compare.thresholds import Thresholds
from icount.errors import UsageError
from icount.interleave.turns import BASE, CONTROL, NEW, Interleaved, rounds
from icount.measure_command import CommandSpec, RunOptions, measure_once, resolve
from icount.progress import Progress
from icount.session.scheduler import work_dir_key


@dataclass(frozen=True)
class Commands:
    """What an interleave of commands measures: each arm's command, resolved (programs
    made absolute), the cell's name, and the backend `--backend` resolved to."""

    arms: dict[str, CommandSpec]
    name: str
    backend: str
    backend_why: str
    timeout: float | None

    @property
    def control(self) -> bool:
        return CONTROL in self.arms


def spec(name: str, line: str, flag: str) -> CommandSpec:
    """A command line as the cell `name` runs it; a line that does not split (an
    unclosed quote) or is empty is refused naming `flag`."""
    try:
        argv = shlex.split(line)
    except ValueError as e:
        raise UsageError(f"{flag}: {e}") from None
    if not argv:
        raise UsageError(f"{flag} is empty")
    return CommandSpec(name, tuple(argv))


def prepare(lines: dict[str, tuple[str, str]], name: str, backend: str,
            timeout: float | None, cwd: Path) -> Commands:  # fmt: skip
    """The arms (`lines`: arm -> (its flag, its command line)) resolved from `cwd`, and
    the backend chosen, before anything runs."""
    from icount import backends

    arms = {arm: resolve(spec(name, line, flag), cwd) for arm, (flag, line) in lines.items()}
    choice = backends.choose(backend)
    return Commands(arms, name, choice.backend, choice.why, timeout)


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


def measure(
    commands: Commands, pairs: int, limits: Thresholds, progress: Progress | None = None
) -> Comparison:
    """The rounds, in a temporary folder of their own, judged on the median of the
    pairs' ratios (and against the control's drift, with one)."""
    from icount import backends
    from icount.results import UNIT_INSTRUCTIONS

    opts = RunOptions(backend=backends.command_backend(commands.backend), timeout=commands.timeout)
    arms = commands.arms
    with tempfile.TemporaryDirectory(prefix="icount-interleave-") as tmp:
        done = run_pairs(arms[BASE], arms[NEW], opts, pairs, Path(tmp), progress,
                         arms.get(CONTROL), commands.backend)  # fmt: skip
    name, backend = commands.name, commands.backend
    c = compare_pairs(name, backend, UNIT_INSTRUCTIONS, done.pairs, done.failed, limits)
    if done.control is None:
        return c
    rows = tuple(judged(r, Rounds(done.pairs, done.control)) for r in c.rows)
    return dataclasses.replace(c, rows=rows)
