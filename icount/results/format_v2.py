"""Reading version 2 of the results layout (the one icount writes; see files.py)."""

from __future__ import annotations

from typing import Any

from icount.results.cell_profile import CellProfile, profile_from_json
from icount.results.details import Detail, ServeDetail, detail_from_json
from icount.results.fields import (
    bool_,
    check_extra,
    free_form,
    in_cell,
    in_run,
    int_,
    list_,
    obj,
    opt_count,
    opt_str,
    positive_int,
    spread_limit,
    str_,
)
from icount.results.model import Cell, Results, Run
from icount.results.shard import shard_from_json
from icount.text import printable


def from_json(doc: dict[str, Any]) -> Results:
    fingerprint = free_form(doc["fingerprint"], "fingerprint")
    shard = doc.get("shard")
    cells = list_(doc["cells"], "cells")
    return Results(
        fingerprint,
        tuple(in_cell(c, i, _cell) for i, c in enumerate(cells)),
        None if shard is None else shard_from_json(shard),
    )


def checked_run(d: dict[str, Any], detail: Detail) -> Run:
    """A run's value, validity and reason (both layouts name them alike): a valid run
    has a value, and no value is negative."""
    valid = bool_(d["valid"], "valid")
    value = opt_count(d["value"], "value")
    if valid and value is None:
        raise ValueError("valid, but it has no value (null)")
    return Run(value=value, valid=valid, reason=opt_str(d.get("reason"), "reason"), detail=detail)


def _run(doc: Any) -> Run:
    d = obj(doc, "run")
    return checked_run(d, detail_from_json(d.get("detail")))


def _cell(doc: Any) -> Cell:
    d = obj(doc, "cell")
    unit = str_(d["unit"], "cell.unit")
    cell = Cell(
        name=str_(d["name"], "cell.name"),
        path=str_(d["path"], "cell.path"),
        backend=str_(d["backend"], "cell.backend"),
        unit=unit,
        runs=tuple(in_run(r, i, _run) for i, r in enumerate(list_(d["runs"], "cell.runs"))),
        params=free_form(d.get("params", {}), "cell.params"),
        runs_wanted=positive_int(d["runs_wanted"], "cell.runs_wanted"),
        max_spread=spread_limit(d["max_spread"], "cell.max_spread"),
        extra=check_extra(free_form(d.get("extra", {}), "cell.extra")),
        setup_error=opt_str(d.get("setup_error"), "cell.setup_error"),
        order=int_(d.get("order", 0), "cell.order"),
        profile=profile_from_json(d.get("profile")),
    )
    check_stored_statistics(cell, d)
    if cell.profile is not None:
        check_profile(cell.profile, cell.runs)
    return cell


# Slack for the profile's rounding (three decimals) and float sums
_REL, _ABS = 1e-6, 0.01


def check_profile(p: CellProfile, runs: tuple[Run, ...]) -> None:
    """A profile is the medians over the cell's windows (results/cell_profile.py): so many
    windows as its runs counted at most, its rows as `cell_profile` keeps them, and no
    figure beyond its windows' counts. A function's self cost, the calls into it (each a
    call instruction counted) and the allocator's calls are each at most the largest
    window's count per request (per run); the self costs, which share out each window,
    add up to at most twice it (a median is at most twice the mean of non-negative
    values). Inclusive costs are not bounded: pooled recursion and code without a
    symbol count nested calls twice. A profile claiming 5e14 instructions for `main`
    in a cell of 120k was 'explained' as +8.33e+12%."""
    what = "cell.profile"
    windows = sum(len(r.detail.reps) if isinstance(r.detail, ServeDetail) else 1 for r in runs)
    if not 1 <= p.windows <= windows:
        raise ValueError(f"{what}.windows {p.windows} is not 1 to the {windows} windows counted")
    if len(p.functions) > p.top:
        raise ValueError(f"{what} keeps {len(p.functions)} functions, more than its top {p.top}")
    if len(p.functions) < p.top and (p.others.functions or p.others.self_ir):
        raise ValueError(f"{what} keeps fewer functions than its top {p.top}, and others")
    if len({f.name for f in p.functions}) < len(p.functions):
        raise ValueError(f"{what}.functions names a function twice")
    figures = [r.value for r in runs if r.value is not None]
    figures += [rep.per_request for r in runs if isinstance(r.detail, ServeDetail)
                for rep in r.detail.reps]  # fmt: skip
    if not figures:
        return
    largest = max(figures)
    limit = largest * (1 + _REL) + _ABS
    singles = [(f"{what}.functions[] {printable(f.name)}", x)
               for f in p.functions for x in (f.self_ir, f.calls)]  # fmt: skip
    singles += [(f"{what}.others", p.others.self_ir), (f"{what}.others", p.others.calls),
                (f"{what}.allocations", p.allocations), (f"{what}.frees", p.frees)]  # fmt: skip
    for field, x in singles:
        if x > limit:
            raise ValueError(f"{field} {x:g} is beyond the cell's largest window, {largest:g}")
    whole = sum(f.self_ir for f in p.functions) + p.others.self_ir
    if whole > 2 * limit + _ABS * len(p.functions):
        raise ValueError(f"{what}'s self costs add up to {whole:g}, beyond twice the cell's "
                         f"largest window, {largest:g}")  # fmt: skip


def check_stored_statistics(cell: Cell, d: dict[str, Any]) -> None:
    """The statistics stored beside the runs are derived from them: a file where they
    disagree was edited or damaged, and its numbers cannot be trusted."""
    s = cell.summary
    derived: dict[str, Any] = {
        "median": s.median if s else None,
        "min": s.min if s else None,
        "max": s.max if s else None,
        "valid": cell.valid,
    }
    for key, want in derived.items():
        if key in d and d[key] != want:
            raise ValueError(f"stored {key} {d[key]!r} disagrees with its runs")
