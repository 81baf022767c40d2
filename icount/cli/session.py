"""What `icount run` and `icount serve` do around a planned session, written once: the
file to resume named as the results file is, the plan's notes, the session measured
with progress and its provenance recorded, the results file's claim given back, and
where the results went."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

import typer

if TYPE_CHECKING:
    from icount.environment import ProvenanceRecorder
    from icount.progress import Progress
    from icount.results import Results


class Planned(Protocol):
    """A command's plan (run_plan.RunPlan, serve.plan.Plan), as far as this module reads it."""

    @property
    def out(self) -> Path: ...

    @property
    def artifacts(self) -> Path: ...

    def notes(self) -> list[str]: ...


P = TypeVar("P", bound=Planned)


def resume_file(resume: Path | None) -> Path | None:
    """--resume as results.output_path names the file it writes (absolute, normalised),
    so that the file resumed is known as the one written."""
    return None if resume is None else Path(os.path.normpath(resume.absolute()))


def measure(
    command: str,
    plan: P,
    session: Callable[[P, Progress, ProvenanceRecorder], Results],
    *,
    quiet: bool,
    outputs: str,
    cpus: Sequence[int] | None = None,
) -> Results:
    """Measure `plan` with `session` (icount pinned to `cpus` where given), its notes
    first and where its results and `outputs` went after, unless `quiet`."""
    from icount import environment, results
    from icount.cli.options import argv_tail, output_errors
    from icount.cli.progress import progress
    from icount.cpus import pinned_self

    try:
        if not quiet:
            for line in plan.notes():
                typer.echo(f"icount: {line}", err=True)
        recorder = environment.ProvenanceRecorder(["icount", command, *argv_tail()])
        pinned = pinned_self(cpus) if cpus is not None else contextlib.nullcontext()
        with output_errors(plan.out), pinned, progress(quiet) as cb:
            res = session(plan, cb, recorder)
    finally:
        results.release_unused(plan.out)
    if not quiet:
        typer.echo(f"icount: results in {plan.out} ({outputs} in {plan.artifacts}/)", err=True)
    return res
