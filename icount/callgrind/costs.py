"""Summing a callgrind file's cost lines, in bulk, into a Profile.

tokens.py decodes every cost line's numbers at once; each value is then charged to
the function whose `fn=` line precedes it (self cost) or, on the line after a
`calls=`, to that call edge (inclusive cost), with `np.add.at`. Every part's sum is
checked against its `totals:` line here.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from icount.callgrind import tokens
from icount.callgrind.model import CostLines, Function, Part, Profile
from icount.callgrind.state import Collected
from icount.errors import ParseError


def build_profile(
    state: Collected,
    arr: tokens.U8,
    ends: tokens.I64,
    is_cost: npt.NDArray[np.bool_],
    *,
    keep_lines: bool,
) -> Profile:
    """Sum the cost lines into the Profile of what `state` collected."""
    events, positions = _layout(state)
    n_ev, n_pos = len(events), len(positions)
    function_keys, edge_pairs, edge_counts = state.graph()
    n_fn, n_edge = len(function_keys), len(edge_pairs)
    cost_idx = np.flatnonzero(is_cost)

    ts, te, counts = tokens.split_spans(arr, ends, is_cost)
    if len(counts) and (counts.min() < n_pos or counts.max() > n_pos + n_ev):
        bad = cost_idx[np.argmax((counts < n_pos) | (counts > n_pos + n_ev))]
        raise state.fail(
            int(bad), f"cost line needs {n_pos} position(s) and at most {n_ev} cost(s)"
        )
    first = np.cumsum(counts) - counts  # each line's first token
    # Column by column, at line level: cost k of a line is its token n_pos + k, when
    # the line has one (trailing zero costs may be left out).
    every = np.arange(len(counts))
    columns: list[tuple[npt.NDArray[np.intp], tokens.I64]] = []
    bad_costs: list[tuple[int, int]] = []  # (line, token) of each column's first bad cost
    for k in range(n_ev):
        fewer = len(counts) and int(counts.min()) <= n_pos + k
        has = np.flatnonzero(counts > n_pos + k) if fewer else every
        at = (first[has] if fewer else first) + (n_pos + k)
        vals, ok = tokens.costs(arr, ts[at], te[at])
        if not ok.all():
            j = int(np.argmin(ok))
            bad_costs.append((int(cost_idx[has[j]]), int(at[j])))
        columns.append((has, vals))
    if bad_costs:
        _bad_token(state, ts, te, *min(bad_costs), "cost")
    pos_columns: list[tuple[tokens.I64, tokens.Mask]] = []
    bad_positions: list[tuple[int, int]] = []
    for c in range(n_pos):
        at = first + c
        pos_val, pos_abs, pos_ok = tokens.positions(arr, ts[at], te[at])
        if not pos_ok.all():
            j = int(np.argmin(pos_ok))
            bad_positions.append((int(cost_idx[j]), int(at[j])))
        pos_columns.append((pos_val, pos_abs))
    if bad_positions:
        _bad_token(state, ts, te, *min(bad_positions), "position")

    fn_lines, fn_ids, call_lines, call_edges = state.index_arrays()
    line_fn = fn_ids[np.searchsorted(fn_lines, cost_idx, side="right") - 1]
    if len(line_fn) and line_fn.min() < 0:
        bad = int(cost_idx[np.argmax(line_fn < 0)])
        raise state.fail(bad, "cost line outside a function (no fn= before it)")
    edge_of_line = np.full(len(is_cost), -1, dtype=np.int64)
    edge_of_line[call_lines] = call_edges
    line_edge = edge_of_line[cost_idx]
    part_starts = np.array([p.first_line for p in state.parts], dtype=np.int64)
    line_part = None  # one part (the usual file): every line is in it
    if len(state.parts) > 1:
        line_part = np.searchsorted(part_starts, cost_idx, side="right") - 1

    self_cost = np.zeros((n_fn, n_ev), dtype=np.int64)
    call_cost = np.zeros((n_edge, n_ev), dtype=np.int64)
    part_sums = np.zeros((len(state.parts), n_ev), dtype=np.int64)
    for k, (has, vals) in enumerate(columns):
        whole = len(has) == len(counts)  # every line has this cost: no gathers
        edge = line_edge if whole else line_edge[has]
        self_at = np.flatnonzero(edge < 0)
        call_at = np.flatnonzero(edge >= 0)
        fn = line_fn if whole else line_fn[has]
        self_vals = vals[self_at]
        column = np.zeros(n_fn, dtype=np.int64)
        np.add.at(column, fn[self_at], self_vals)
        self_cost[:, k] = column
        column = np.zeros(n_edge, dtype=np.int64)
        np.add.at(column, edge[call_at], vals[call_at])
        call_cost[:, k] = column
        if line_part is None:
            part_sums[0, k] = self_vals.sum()
        else:
            column = np.zeros(len(state.parts), dtype=np.int64)
            np.add.at(column, (line_part if whole else line_part[has])[self_at], self_vals)
            part_sums[:, k] = column

    lines = None
    if keep_lines:
        line_costs = np.zeros((len(cost_idx), n_ev), dtype=np.int64)
        for k, (has, vals) in enumerate(columns):
            line_costs[has, k] = vals
        pos = np.zeros((len(cost_idx), n_pos), dtype=np.int64)
        for c, (pos_val, pos_abs) in enumerate(pos_columns):
            pos[:, c] = tokens.resolve(pos_val, pos_abs)
        lines = CostLines(
            line=cost_idx.astype(np.int64) + 1,
            function=line_fn,
            edge=line_edge,
            positions=pos,
            costs=line_costs,
        )

    parts = _check_parts(state, part_sums, events)
    totals = {e: sum(p.totals[e] for p in parts) for e in events}
    summaries = [p.summary for p in state.parts if p.events is not None]
    summary = None
    if summaries and all(s is not None for s in summaries):
        summary = {e: sum(s[k] for s in summaries if s is not None) for k, e in enumerate(events)}
    return Profile(
        source=state.source,
        events=events,
        positions=positions,
        totals=totals,
        summary=summary,
        command=state.command,
        pid=state.pid,
        creator=state.creator,
        parts=parts,
        functions=list(map(Function._make, function_keys)),
        self_cost=self_cost,
        call_caller=edge_pairs[:, 0].copy(),
        call_callee=edge_pairs[:, 1].copy(),
        call_count=edge_counts,
        call_cost=call_cost,
        lines=lines,
    )


def _bad_token(
    state: Collected, ts: tokens.I64, te: tokens.I64, line: int, k: int, what: str
) -> None:
    text = state.data[int(ts[k]) : int(te[k])]
    raise state.fail(line, f"bad {what} {text[:30]!r}")


def _layout(state: Collected) -> tuple[list[str], list[str]]:
    declared = [p for p in state.parts if p.events is not None]
    events = declared[0].events or []
    positions = declared[0].positions or ["line"]
    for p in declared[1:]:
        if p.events != events or (p.positions or ["line"]) != positions:
            raise state.fail(
                p.first_line, "parts with different events:/positions: are not supported"
            )
    for p in state.parts:
        if p.events is None and p.has_body:
            raise state.fail(p.first_line, "part has cost lines but no events: line")
    return events, positions


def _check_parts(state: Collected, sums: npt.NDArray[np.int64], events: list[str]) -> list[Part]:
    parts: list[Part] = []
    by_callgrind = (state.creator or "").startswith("callgrind")
    for k, p in enumerate(state.parts):
        if p.events is None:
            continue  # a header-only prologue, no costs
        summed = [int(x) for x in sums[k]]
        label = f"part {p.number if p.number is not None else k + 1}"
        if p.totals is not None:
            for e, got, want in zip(events, summed, p.totals, strict=True):
                if got != want:
                    raise ParseError(
                        f"{label}: cost lines sum to {got} {e} but totals: says {want} "
                        "(file truncated or corrupt)",
                        source=state.source,
                    )
            declared = True
        else:
            if by_callgrind:
                raise ParseError(
                    f"{label} has no totals: line (file truncated?)", source=state.source
                )
            if p.summary is not None and any(
                got > s for got, s in zip(summed, p.summary, strict=True)
            ):
                raise ParseError(
                    f"{label}: cost lines sum to more than summary: says", source=state.source
                )
            declared = False
        parts.append(
            Part(
                number=p.number,
                thread=p.thread,
                totals=dict(zip(events, summed, strict=True)),
                declared=declared,
            )
        )
    return parts
