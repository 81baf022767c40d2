"""Reading version 2 of the results layout (the one icount writes; see files.py)."""

from __future__ import annotations

from typing import Any

from icount.results.details import Detail, detail_from_json
from icount.results.fields import (
    bool_,
    check_extra,
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
from icount.results.profile import profile_from_json
from icount.results.shard import shard_from_json


def from_json(doc: dict[str, Any]) -> Results:
    fingerprint = obj(doc["fingerprint"], "fingerprint")
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
        params=obj(d.get("params", {}), "cell.params"),
        runs_wanted=positive_int(d["runs_wanted"], "cell.runs_wanted"),
        max_spread=spread_limit(d["max_spread"], "cell.max_spread"),
        extra=check_extra(obj(d.get("extra", {}), "cell.extra")),
        setup_error=opt_str(d.get("setup_error"), "cell.setup_error"),
        order=int_(d.get("order", 0), "cell.order"),
        profile=profile_from_json(d.get("profile")),
    )
    check_stored_statistics(cell, d)
    return cell


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
