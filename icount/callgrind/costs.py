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

    tok = tokens.split_lines(arr, ends, is_cost)
    counts = tok.per_line[cost_idx]
    if len(counts) and (counts.min() < n_pos or counts.max() > n_pos + n_ev):
        bad = cost_idx[np.argmax((counts < n_pos) | (counts > n_pos + n_ev))]
        raise state.fail(
            int(bad), f"cost line needs {n_pos} position(s) and at most {n_ev} cost(s)"
        )
    is_val = tok.col >= n_pos
    vals, ok = tokens.costs(arr, tok.start[is_val], tok.end[is_val])
    if not ok.all():
        _bad_token(state, tok, np.flatnonzero(is_val)[np.argmin(ok)], "cost")
    pos_sel = np.flatnonzero(~is_val)
    pos_val, pos_abs, pos_ok = tokens.positions(arr, tok.start[pos_sel], tok.end[pos_sel])
    if not pos_ok.all():
        _bad_token(state, tok, pos_sel[np.argmin(pos_ok)], "position")

    line_of_val = tok.line[is_val]
    ev_of_val = tok.col[is_val] - n_pos
    fn_lines, fn_ids, call_lines, call_edges = state.index_arrays()
    line_fn = fn_ids[np.searchsorted(fn_lines, cost_idx, side="right") - 1]
    if len(line_fn) and line_fn.min() < 0:
        bad = int(cost_idx[np.argmax(line_fn < 0)])
        raise state.fail(bad, "cost line outside a function (no fn= before it)")
    edge_of_line = np.full(len(is_cost), -1, dtype=np.int64)
    edge_of_line[call_lines] = call_edges
    ordinal = np.cumsum(is_cost) - 1  # file line -> index among cost lines
    val_line = ordinal[line_of_val]
    val_edge = edge_of_line[line_of_val]
    is_self = val_edge < 0

    self_cost = np.zeros((n_fn, n_ev), dtype=np.int64)
    call_cost = np.zeros((n_edge, n_ev), dtype=np.int64)
    part_sums = np.zeros((len(state.parts), n_ev), dtype=np.int64)
    sl, se, sv = val_line[is_self], ev_of_val[is_self], vals[is_self]
    np.add.at(self_cost, (line_fn[sl], se), sv)
    np.add.at(call_cost, (val_edge[~is_self], ev_of_val[~is_self]), vals[~is_self])
    part_starts = np.array([p.first_line for p in state.parts], dtype=np.int64)
    part_of_line = np.searchsorted(part_starts, cost_idx, side="right") - 1
    np.add.at(part_sums, (part_of_line[sl], se), sv)

    lines = None
    if keep_lines:
        line_costs = np.zeros((len(cost_idx), n_ev), dtype=np.int64)
        line_costs[val_line, ev_of_val] = vals
        pos = np.zeros((len(cost_idx), n_pos), dtype=np.int64)
        pos_col = tok.col[pos_sel]
        for c in range(n_pos):
            sel = pos_col == c
            pos[:, c] = tokens.resolve(pos_val[sel], pos_abs[sel])
        lines = CostLines(
            line=cost_idx.astype(np.int64) + 1,
            function=line_fn,
            edge=edge_of_line[cost_idx],
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
        functions=[Function(*k) for k in function_keys],
        self_cost=self_cost,
        call_caller=edge_pairs[:, 0].copy(),
        call_callee=edge_pairs[:, 1].copy(),
        call_count=edge_counts,
        call_cost=call_cost,
        lines=lines,
    )


def _bad_token(state: Collected, tok: tokens.Tokens, k: np.intp | int, what: str) -> None:
    text = state.data[int(tok.start[k]) : int(tok.end[k])]
    raise state.fail(int(tok.line[k]), f"bad {what} {text[:30]!r}")


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
