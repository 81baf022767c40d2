"""The steps `icount run` and `icount serve` plan a session with, written once: the
results file reserved (and refused where it would replace one), the options a
resumed file recorded, the file to resume and the shard to measure, and the cells
the session starts from once that file is found comparable.

Each command's plan (run_plan.py, serve/plan.py) says what is its own: the cells it
plans and what each is measured with; `icount interleave` plans its servers' runs
through serve's plan, so it reserves its file here too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from icount import results, shards
from icount.errors import UsageError
from icount.results import Cell, Results
from icount.results.shard import ShardRecord
from icount.session import resume as resume_mod


@contextlib.contextmanager
def reserved_output(
    output: Path | None, resume: Path | None, stem: str, *, force: bool
) -> Iterator[Path]:
    """The results file to write: --output, else the file to resume, else the next free
    icount-results/STEM-NNN.json, claimed (results.output_path). Without --force it
    replaces neither a results file nor the provenance beside it, but for the file
    resumed; refused, or the plan built inside the block refused, the claim and the
    number reserved are released."""
    out = results.output_path(output if output is not None else resume, stem)
    try:
        if not force and out != resume:
            results.refuse_to_replace(out)
        yield out
    except BaseException:
        results.release_unused(out)
        raise


def resumed_options(
    readers: Mapping[str, Callable[[Any], Any]],
    recorded: Mapping[str, Any],
    given: frozenset[str],
    resume: Path,
    parameter: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Each option of `readers` the session being resumed recorded (`recorded`: its
    provenance's plan) that the command line does not give again (`given`: parameter
    names; `parameter`: an option's parameter where its name differs), read back;
    a recorded value that is not one is a one-line refusal naming the file."""
    names = parameter or {}
    taken = {}
    for option, read in readers.items():
        if names.get(option, option) not in given and option in recorded:
            try:
                taken[option] = read(recorded[option])
            except ValueError:
                raise UsageError(
                    f"{resume}: the recorded {option} {recorded[option]!r} is not valid"
                ) from None
    return taken


def to_resume(
    resume: Path | None,
    command: str,
    ours: Callable[[Cell], bool],
    shard: shards.ShardSpec | None,
) -> tuple[Results | None, shards.ShardSpec | None]:
    """The file to resume (refused when another command measured a cell of it), and the
    shard to measure: --shard, else the shard the file was measured as."""
    if resume is None:
        return None, shard
    previous = resume_mod.load(resume, command, ours)
    return previous, shard or resume_mod.shard_of(previous, resume)


def shard_record(
    command: str, planned: Callable[[], list[shards.PlannedCell]], shard: shards.ShardSpec | None
) -> ShardRecord | None:
    """The record of the shard measured (`planned`: every cell of the session, in order),
    or None for the whole session."""
    return None if shard is None else shards.make_record(command, planned(), shard)


def start(
    fingerprint: dict[str, Any],
    record: ShardRecord | None,
    previous: Results | None,
    resume: Path | None,
    planned: Callable[[], Mapping[tuple[str, str, str], Mapping[str, Any]]],
    measured_with: Callable[[Cell], Mapping[str, Any]],
    digests: Mapping[str, str] | None = None,
) -> Results:
    """The results the session starts from: no cell, or the cells of the file to resume
    once they could have come from this session: measured in the same environment, of
    targets unchanged since (`digests`: target name -> its digest now), as the same
    shard, with the parameters it plans (`planned`: each cell's; `measured_with`: the
    same read from a cell of the file)."""
    if previous is None or resume is None:
        return Results(fingerprint, (), record)
    resume_mod.check_environment(previous, fingerprint)
    if digests:
        recorded = resume_mod.recorded_digests(previous, resume)
        resume_mod.check_targets(previous, recorded, digests, resume)
    resume_mod.check_shard(previous, record)
    resume_mod.check_params(previous.cells, planned(), measured_with)
    return Results(fingerprint, previous.cells, record)
