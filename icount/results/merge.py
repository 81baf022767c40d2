"""Joining results files: the shards of one session, or files of distinct cells.

`load_inputs` reads files and folders (a folder stands for every results file in it),
`merge_inputs` joins what it read. Shard files (--shard I/N) are merged only as a
complete set of one session: one plan, one environment, one icount version, each shard
once and each holding exactly the cells the plan gave it. The merged results are the
session's results as one unsharded run writes them (no shard record), so their tables
and JSON are byte-identical to that run's. Files that are not shards merge as before:
when no cell appears twice and their environments agree on what moves counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from icount.errors import ResultsFileError, UsageError
from icount.results.files import load
from icount.results.model import Cell, Results
from icount.results.shard import ShardRecord

PROVENANCE_SUFFIX = ".provenance.json"
SHOWN = 6  # items named in one message before '... and N more'


def input_files(paths: Sequence[Path]) -> list[tuple[str, Path]]:
    """(name to show, file) for each results file: files as given, folders expanded to
    their *.json files (provenance files beside them left out), in name order."""
    found: list[tuple[str, Path]] = []
    for p in paths:
        if p.is_dir():
            inside = sorted(
                f
                for f in p.iterdir()
                if f.suffix == ".json" and not f.name.endswith(PROVENANCE_SUFFIX)
            )
            if not inside:
                raise ResultsFileError(
                    "a folder with no results files (*.json) in it", source=str(p)
                )
            found += [(str(f), f) for f in inside if f.is_file()]
        else:
            found.append((str(p), p))
    return found


def load_inputs(paths: Sequence[Path]) -> list[tuple[str, Results]]:
    return [(src, load(f)) for src, f in input_files(paths)]


def merge_inputs(named: Sequence[tuple[str, Results]], *, one_shard: bool = False) -> Results:
    """Shards of one session into that session, or distinct files into one.
    `one_shard`: a single shard file alone is returned as it is, shard record and all
    (for showing it: a merge of it would refuse the missing shards)."""
    if one_shard and len(named) == 1:
        return named[0][1]
    shards = [src for src, r in named if r.shard is not None]
    if shards and len(shards) < len(named):
        whole = next(src for src, r in named if r.shard is None)
        raise UsageError(
            f"{whole} is a whole session and {shards[0]} one shard of a session: merge the "
            "shards of one session on their own",
            hint="merge them first: icount table SHARDS... -f json > merged.json",
        )
    if shards:
        return merge_shards(named)
    from icount import environment  # late: it imports psutil, which `icount size` never needs

    first_src, first = named[0]
    for src, res in named[1:]:
        diff = environment.fingerprint_differences(
            first.fingerprint, res.fingerprint, same_method=True
        )
        if diff:
            raise UsageError(
                f"{src} was measured in another environment than {first_src} "
                f"(differs in {', '.join(diff)}); its counts are not comparable"
            )
    return merge(one_after_another(named))


def one_after_another(named: Sequence[tuple[str, Results]]) -> list[tuple[str, Results]]:
    """Each file's cells placed after the previous file's, in their own order: the rows
    of `icount table c.json go.json` are c's, then go's. (Shards keep the order their
    plan gave them: that is what makes their merge the unsharded session's bytes.)"""
    from dataclasses import replace

    shifted, offset = [], 0
    for src, res in named:
        cells = tuple(replace(c, order=c.order + offset) for c in res.cells)
        shifted.append((src, replace(res, cells=cells)))
        offset += max((c.order for c in res.cells), default=-1) + 1
    return shifted


def merge(named: Iterable[tuple[str, Results]]) -> Results:
    """Merge several results files; cells with the same key in two files are refused."""
    seen: dict[tuple[str, str, str], str] = {}
    cells: list[Cell] = []
    fingerprint: Mapping[str, Any] = {}
    collisions: list[str] = []
    for src, res in named:
        if not fingerprint:
            fingerprint = res.fingerprint
        for cell in res.cells:
            if cell.key in seen:
                collisions.append(f"{cell.key_text} ({seen[cell.key]} and {src})")
            else:
                seen[cell.key] = src
                cells.append(cell)
    if collisions:
        raise UsageError(
            "cells collide: " + "; ".join(collisions), hint="merge only files with distinct cells"
        )
    return Results(fingerprint, tuple(cells))


def _listed(items: Sequence[str], total: int | None = None, sep: str = ", ") -> str:
    """The first SHOWN of `items` (of `total`, where only those were made)."""
    n = len(items) if total is None else total
    more = f"{sep}... and {n - SHOWN} more" if n > SHOWN else ""
    return sep.join(items[:SHOWN]) + more


def _differs(what: str, there: Any, here: Any) -> str:
    return f"{what} {there!r} there, {here!r} here"


def _record(res: Results) -> ShardRecord:
    assert res.shard is not None
    return res.shard


def merge_shards(named: Sequence[tuple[str, Results]]) -> Results:
    """The whole session from all of its shard files, or UsageError naming what is wrong."""
    first_src, first = named[0]
    head = _record(first)
    for src, res in named[1:]:
        _same_session(first_src, first, src, res)
    by_index: dict[int, str] = {}
    for src, res in named:
        index = _record(res).index
        if index in by_index:
            raise UsageError(
                f"shard {index}/{head.total} is given twice: {by_index[index]} and {src}",
                hint="give each shard's file once",
            )
        by_index[index] = src
    missing = [i for i in range(1, head.total + 1) if i not in by_index]
    if missing:
        shown = [
            _listed([e.key_text for e in head.assigned(i)]) or "no cells" for i in missing[:SHOWN]
        ]
        what = _listed(
            [f"{i}/{head.total} ({c})" for i, c in zip(missing, shown, strict=False)],
            len(missing),
            "; ",
        )
        have = ", ".join(f"{i}/{head.total} {by_index[i]}" for i in sorted(by_index))
        raise UsageError(
            f"shard{'s' if len(missing) > 1 else ''} missing: {what}; given: {have}",
            hint=f"give all {head.total} shard files of the session",
        )
    cells: list[Cell] = []
    for src, res in named:
        _holds_its_cells(src, res)
        cells += res.cells
    _one_commit(named)
    return Results(first.fingerprint, tuple(cells))


def _one_commit(named: Sequence[tuple[str, Results]]) -> None:
    """The shards of one session were measured at one commit of the measured code: the
    provenance beside each results file records it (`commit`, from git in the folder
    icount ran in). Shards without a provenance, or outside git, cannot say; they pass."""
    seen: list[tuple[str, str]] = []
    for src, _ in named:
        commit = _commit(src)
        if commit is None:
            continue
        if seen and commit != seen[0][1]:
            first_src, first = seen[0]
            raise UsageError(
                f"the shards were measured at two commits: {first} ({first_src}) and "
                f"{commit} ({src}); merged, they would be a table no session produced",
                hint="measure every shard at one commit (one pipeline run), then merge",
            )
        seen.append((src, commit))


def _commit(src: str) -> str | None:
    from icount.results.stamps import recorded

    return recorded(src)[0]


def _same_session(first_src: str, first: Results, src: str, res: Results) -> None:
    a, b = _record(first), _record(res)
    va, vb = first.fingerprint.get("icount_version"), res.fingerprint.get("icount_version")
    if va != vb:
        raise UsageError(
            f"{src} was written by icount {vb}, {first_src} by icount {va}: shards of one "
            "session come from one icount version",
            hint="measure every shard with the same icount",
        )
    from icount import environment  # late: it imports psutil

    # under callgrind the programs saw the CPU valgrind presents: the hosts' may differ
    unseen = set(environment.HOST_CPU_FIELDS) - set(
        environment.cpu_fields(first.fingerprint, res.fingerprint)
    )
    diff = sorted(
        k
        for k in {*first.fingerprint, *res.fingerprint}
        if first.fingerprint.get(k) != res.fingerprint.get(k) and k not in unseen
    )
    if diff:
        shown = _listed(
            [_differs(k, first.fingerprint.get(k), res.fingerprint.get(k)) for k in diff]
        )
        raise UsageError(
            f"{src} (shard {b.label}) was measured in another environment than {first_src} "
            f"(shard {a.label}): {shown}",
            hint="run every shard of a session on the same kind of machine and image",
        )
    if a.command != b.command:
        raise UsageError(
            f"{src} is a shard of an icount {b.command} session, {first_src} of an icount "
            f"{a.command} session"
        )
    if a.total != b.total:
        raise UsageError(
            f"{src} is shard {b.label} and {first_src} shard {a.label}: one session is split "
            "into one number of shards"
        )
    if a.digest != b.digest:
        raise UsageError(
            f"{src} (shard {b.label}) is a shard of another plan than {first_src} "
            f"(shard {a.label}): {plan_differences(a, b)}",
            hint="merge the shards of one session: same targets or commands and options",
        )
    if a.plan != b.plan:
        raise UsageError(
            f"{src} and {first_src} split the same plan differently (edited files?)",
            hint="measure the shards again with one icount",
        )


def plan_differences(a: ShardRecord, b: ShardRecord) -> str:
    """What differs between two plans, 'there' being `a` and 'here' `b`."""
    in_a = {e.key: e for e in a.plan}
    in_b = {e.key: e for e in b.plan}
    parts: list[str] = []
    only_a = [e.key_text for e in a.plan if e.key not in in_b]
    only_b = [e.key_text for e in b.plan if e.key not in in_a]
    if only_a:
        parts.append(f"cells only there: {_listed(only_a)}")
    if only_b:
        parts.append(f"cells only here: {_listed(only_b)}")
    changed: list[str] = []
    for e in a.plan:
        other = in_b.get(e.key)
        if other is None or other.identity == e.identity:
            continue
        keys = sorted({*e.identity, *other.identity})
        changed += [
            _differs(f"{e.key_text} {k}", e.identity.get(k), other.identity.get(k))
            for k in keys
            if e.identity.get(k) != other.identity.get(k)
        ]
    if changed:
        parts.append(_listed(changed))
    if not parts:
        parts.append("the same cells in another order")
    return "; ".join(parts)


def _holds_its_cells(src: str, res: Results) -> None:
    record = _record(res)
    want = [e.key for e in record.assigned()]
    have = {c.key: c for c in res.cells}
    lacking = [e.key_text for e in record.assigned() if e.key not in have]
    if lacking:
        hint = (
            f"finish it with icount serve --resume {src}, then merge again"
            if record.command == "serve"
            else "measure that shard again"
        )
        raise UsageError(
            f"{src} (shard {record.label}) lacks {_listed(lacking)}: the shard did not finish",
            hint=hint,
        )
    foreign = sorted(c.key_text for c in res.cells if c.key not in set(want))
    if foreign:
        raise UsageError(
            f"{src} (shard {record.label}) holds cells its plan gives to other shards: "
            f"{_listed(foreign)} (an edited file?)"
        )
    moved = sorted(c.key_text for c in res.cells if record.order(c.key) != c.order)
    if moved:
        raise UsageError(
            f"{src} (shard {record.label}): cells out of their plan's order: {_listed(moved)} "
            "(an edited file?)"
        )
