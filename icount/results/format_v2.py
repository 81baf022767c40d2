"""Reading version 2 of the results layout (the one icount writes; see files.py)."""

from __future__ import annotations

from typing import Any

from icount.results.details import detail_from_json
from icount.results.fields import (
    bool_,
    check_extra,
    int_,
    list_,
    obj,
    opt_num,
    opt_str,
    positive_int,
    spread_limit,
    str_,
)
from icount.results.model import Cell, Results, Run
from icount.results.shard import shard_from_json


def from_json(doc: dict[str, Any]) -> Results:
    fingerprint = obj(doc["fingerprint"], "fingerprint")
    shard = doc.get("shard")
    return Results(
        fingerprint,
        tuple(_cell(c) for c in list_(doc["cells"], "cells")),
        None if shard is None else shard_from_json(shard),
    )


def _run(doc: Any) -> Run:
    d = obj(doc, "run")
    return Run(
        value=opt_num(d["value"], "run.value"),
        valid=bool_(d["valid"], "run.valid"),
        reason=opt_str(d.get("reason"), "run.reason"),
        detail=detail_from_json(d.get("detail")),
    )


def _cell(doc: Any) -> Cell:
    d = obj(doc, "cell")
    unit = str_(d["unit"], "cell.unit")
    cell = Cell(
        name=str_(d["name"], "cell.name"),
        path=str_(d["path"], "cell.path"),
        backend=str_(d["backend"], "cell.backend"),
        unit=unit,
        runs=tuple(_run(r) for r in list_(d["runs"], "cell.runs")),
        params=obj(d.get("params", {}), "cell.params"),
        runs_wanted=positive_int(d["runs_wanted"], "cell.runs_wanted"),
        max_spread=spread_limit(d["max_spread"], "cell.max_spread"),
        extra=check_extra(obj(d.get("extra", {}), "cell.extra")),
        setup_error=opt_str(d.get("setup_error"), "cell.setup_error"),
        order=int_(d.get("order", 0), "cell.order"),
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
            raise ValueError(
                f"cell {cell.key_text}: stored {key} {d[key]!r} disagrees with its runs"
            )
