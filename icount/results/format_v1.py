"""Reading version 1 of the results layout (icount 0.1.0) into today's model.

What changed since (files.py lists it): run details are typed, reps no longer store
their rounded per-request figure, `warmup_windows` became `warmup_curve` (requests
served, per request), params `method`/`target` became `http_method`/`request_target`,
`invalid_reason` became `setup_error`, and the statistics a v1 file stores are checked
against its runs exactly as for version 2.
"""

from __future__ import annotations

from typing import Any

from icount.results.details import (
    WINDOW_DIFFERENTIAL,
    WINDOW_DUMPS,
    WINDOW_FIFO,
    CommandDetail,
    Detail,
    Lifetimes,
    Rep,
    RequestIdentity,
    ServeDetail,
)
from icount.results.fields import (
    check_extra,
    count,
    count_int,
    free_form,
    in_cell,
    in_run,
    int_,
    list_,
    obj,
    opt_str,
    positive_int,
    spread_limit,
    str_,
)
from icount.results.format_v2 import check_stored_statistics, checked_run
from icount.results.model import UNIT_PER_REQUEST, Cell, Results, Run

# v1 named the window method "windows" under perf
_WINDOWS = {"dump": WINDOW_DUMPS, "windows": WINDOW_FIFO, "differential": WINDOW_DIFFERENTIAL}
_PARAM_NAMES = {"method": "http_method", "target": "request_target"}


def from_json(doc: dict[str, Any]) -> Results:
    fingerprint = free_form(doc["fingerprint"], "fingerprint")
    cells = list_(doc["cells"], "cells")
    return Results(fingerprint, tuple(in_cell(c, i, _cell) for i, c in enumerate(cells)))


def _serve_detail(d: dict[str, Any], requests_per_window: int | None) -> Detail:
    if not d:  # a run that failed before it counted anything
        return None
    window = str_(d["method"], "detail.method")
    if window not in _WINDOWS:
        raise ValueError(f"detail.method {window!r} is not one icount 0.1 wrote")
    reps = tuple(
        Rep(count(obj(r, "rep")["instructions"], "rep.instructions"),
            positive_int(r["requests"], "rep.requests"))
        for r in list_(d["reps"], "detail.reps")
    )  # fmt: skip
    request = d.get("request")
    identity = None
    if request is not None and obj(request, "detail.request").get("request_bytes") is not None:
        identity = RequestIdentity(
            count_int(request["request_bytes"], "request.request_bytes"),
            str_(request["request_sha256"], "request.request_sha256"),
        )
    windows = list_(d.get("warmup_windows", []), "detail.warmup_windows")
    if windows and requests_per_window is None:
        raise ValueError("warmup_windows without params.requests")
    curve = tuple(
        ((i + 1) * (requests_per_window or 0), count(v, "warmup_windows[]"))
        for i, v in enumerate(windows)
    )
    lifetimes = d.get("lifetimes")
    life = None
    if lifetimes is not None:
        lt = obj(lifetimes, "detail.lifetimes")
        req, ins = list_(lt["requests"], "requests"), list_(lt["instructions"], "instructions")
        life = Lifetimes(
            (count_int(req[0], "lifetimes.requests"), count_int(req[1], "lifetimes.requests")),
            (count(ins[0], "lifetimes.instructions"), count(ins[1], "lifetimes.instructions")),
        )
    return ServeDetail(
        window=_WINDOWS[window],
        warmup=count_int(d["warmup"], "detail.warmup"),
        reps=reps,
        request=identity,
        warmup_curve=curve,
        lifetimes=life,
    )


def _run(doc: Any, per_request: bool, requests_per_window: int | None) -> Run:
    d = obj(doc, "run")
    raw = obj(d.get("detail", {}), "run.detail")
    detail: Detail
    if per_request:
        detail = _serve_detail(raw, requests_per_window)
    elif not raw:  # v1 required no detail; icount 0.1 itself always wrote one
        detail = None
    else:
        processes = raw.get("processes")
        detail = CommandDetail(
            int_(raw["exit"], "detail.exit"),
            None if processes is None else count_int(processes, "detail.processes"),
        )
    return checked_run(d, detail)


def _cell(doc: Any) -> Cell:
    d = obj(doc, "cell")
    unit = str_(d["unit"], "cell.unit")
    params = {
        _PARAM_NAMES.get(k, k): v for k, v in free_form(d.get("params", {}), "params").items()
    }
    requests = params.get("requests")
    per_window = requests if isinstance(requests, int) and not isinstance(requests, bool) else None
    cell = Cell(
        name=str_(d["name"], "cell.name"),
        path=str_(d["path"], "cell.path"),
        backend=str_(d["backend"], "cell.backend"),
        unit=unit,
        runs=tuple(
            in_run(r, i, lambda r: _run(r, unit == UNIT_PER_REQUEST, per_window))
            for i, r in enumerate(list_(d["runs"], "cell.runs"))
        ),
        params=params,
        runs_wanted=positive_int(d["runs_wanted"], "cell.runs_wanted"),
        max_spread=spread_limit(d["max_spread"], "cell.max_spread"),
        extra=check_extra(free_form(d.get("extra", {}), "cell.extra")),
        setup_error=opt_str(d.get("invalid_reason"), "cell.invalid_reason"),
    )
    check_stored_statistics(cell, d)
    return cell
