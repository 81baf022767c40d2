"""May this results file be continued (--resume) by this session? Refusals, one line each.

A file is continued only when its cells could have come from the session now planned:
measured by the same command, in the same environment and way, with the same
parameters, the same targets (their adapters unchanged: `target_sha256`) and, for a
shard, as the same shard of the same plan. Otherwise a table would mix figures no one
session produced.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from icount import environment, results, shards
from icount.errors import ParseError, UsageError
from icount.results import Cell, Results
from icount.results.merge import plan_differences
from icount.results.shard import ShardRecord
from icount.text import printable

NEW_FILE = "start a new results file with -o"
TARGET_DIGESTS = "target_sha256"  # provenance: target name -> how it is built, started, checked


def read_provenance(resume: Path) -> dict[str, Any]:
    """The provenance file beside the file to resume; empty when there is none."""
    try:
        doc = results.read_json(results.provenance_path(resume), "provenance file")
    except ParseError:  # missing, or not a regular file: never read a FIFO
        return {}
    return doc if isinstance(doc, dict) else {}


def saved_plan(resume: Path) -> dict[str, Any]:
    """What the session being resumed was asked to do (its provenance's "plan")."""
    plan = read_provenance(resume).get("plan")
    return plan if isinstance(plan, dict) else {}


def load(resume: Path, command: str, ours: Callable[[Cell], bool]) -> Results:
    """The file to resume, refused when it holds cells another command measured."""
    previous = results.load(resume)
    foreign = sorted(c.key_text for c in previous.cells if not ours(c))
    if foreign:
        raise UsageError(
            f"the file to resume holds cells that are not from icount {command} "
            f"({', '.join(printable(k) for k in foreign)})",
            hint=NEW_FILE,
        )
    return previous


def shard_of(previous: Results, resume: Path) -> shards.ShardSpec | None:
    """The shard the file was measured as: resumed without --shard, it stays that one."""
    done = previous.shard
    if done is None:
        return None
    return shards.ShardSpec(done.index, done.total, f"the file to resume, {resume}")


def check_environment(previous: Results, fingerprint: Mapping[str, Any]) -> None:
    diff = environment.fingerprint_differences(previous.fingerprint, fingerprint, same_method=True)
    if diff:
        raise UsageError(
            f"the file to resume was measured in another environment (differs in "
            f"{', '.join(diff)})",
            hint=NEW_FILE,
        )


def recorded_digests(previous: Results, resume: Path) -> dict[str, str]:
    """Target name -> its digest when the file was measured: from the provenance, or
    from the shard plan (which has recorded it longer)."""
    found: dict[str, str] = {}
    if previous.shard is not None:
        for entry in previous.shard.plan:
            digest = entry.identity.get(TARGET_DIGESTS)
            if isinstance(digest, str):
                found[entry.name] = digest
    saved = read_provenance(resume).get(TARGET_DIGESTS)
    if isinstance(saved, dict):
        found.update({k: v for k, v in saved.items() if isinstance(v, str)})
    return found


def check_targets(
    previous: Results, recorded: Mapping[str, str], now: Mapping[str, str], resume: Path
) -> None:
    """Refuse a file whose cells of a target were measured before its adapter changed
    (how it is built, started or checked); files that recorded no digest pass."""
    for name in sorted({c.name for c in previous.cells}):
        before, after = recorded.get(name), now.get(name)
        if before is not None and after is not None and before != after:
            raise UsageError(
                f"target {printable(name)} changed since {resume} was measured (its adapter "
                "builds, starts or checks it differently now)",
                hint=f"{NEW_FILE}, or undo the change to {printable(name)}'s adapter",
            )


def check_shard(previous: Results, now: ShardRecord | None) -> None:
    before = previous.shard
    if before is None and now is None:
        return
    if before is None and now is not None:
        raise UsageError(
            f"the file to resume holds a whole session, not shard {now.label}",
            hint="resume it without --shard (or --shard none in a CI job that sets one)",
        )
    if now is None:
        return  # the file's shard is taken when none is given (shard_of)
    assert before is not None
    if (before.index, before.total) != (now.index, now.total):
        raise UsageError(
            f"the file to resume is shard {before.label} of its session, not {now.label}",
            hint=f"resume it with --shard {before.label}",
        )
    if before.digest != now.digest:
        raise UsageError(
            f"the file to resume is a shard of another plan: {plan_differences(before, now)}",
            hint="use the same targets and options, or start a new results file with -o",
        )


def check_params(
    cells: Iterable[Cell],
    planned: Mapping[tuple[str, str, str], Mapping[str, Any]],
    measured_with: Callable[[Cell], Mapping[str, Any]],
) -> None:
    """Refuse cells measured with other parameters than this session plans for them
    (`planned`: what each cell of the plan is measured with; `measured_with`: the same
    read from a cell of the file)."""
    for cell in cells:
        want = planned.get(cell.key)
        if want is None:
            continue
        old = measured_with(cell)
        what = ", ".join(
            f"{k} {old.get(k)!r} there, {v!r} now" for k, v in want.items() if old.get(k) != v
        )
        if what:
            raise UsageError(
                f"{printable(cell.key_text)} in the file to resume was measured with other "
                f"parameters ({printable(what)})",
                hint="use the same options, or start a new results file with -o",
            )
