"""Summing a callgrind file's cost lines into a Profile.

decode.py reads the cost lines' numbers, a chunk at a time; each value is charged
here to the function whose `fn=` line precedes it (self cost) or, on the line after
a `calls=`, to that call edge (inclusive cost), with `np.add.at` into one table of
(functions + edges) x events cells. Work is per value, never per event and line, so
a file declaring thousands of events costs what its numbers cost. Every part's sum
is checked against its `totals:` line here.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from icount.callgrind import decode, tokens
from icount.callgrind.model import CostLines, Function, Part, Profile
from icount.callgrind.state import Collected
from icount.callgrind.sums import INT64_MAX, Sums, exact_column_sums, fits_with
from icount.errors import ParseError

# The cost table is dense: (functions + edges) x events cells of 8 bytes. A file
# names functions and events in a few bytes each, so a crafted one can declare far
# more cells than it fills (10,000 events x 30,000 functions: 2.4 GB from 257 KB).
# Real profiles need well under one cell per byte of file.
MIN_CELLS = 1 << 22
CELLS_PER_BYTE = 2


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
    functions, edge_pairs, edge_counts = state.graph()
    n_fn, n_edge = len(functions), len(edge_pairs)
    _check_table_size(state, n_fn, n_edge, n_ev, len(arr))
    cost_idx = np.flatnonzero(is_cost)
    fn_lines, fn_ids, call_lines, call_edges = state.index_arrays()
    # Row of each cost line in the table: its function's (the last fn= or part start
    # at or before it), or n_fn + its edge for the line after a calls=. (Few arrays
    # of one entry per line: on large files each costs page faults.)
    last_fn = np.full(len(is_cost), -1, dtype=np.int64)
    last_fn[fn_lines] = np.arange(len(fn_lines))
    np.maximum.accumulate(last_fn, out=last_fn)
    line_row = fn_ids[last_fn]
    if keep_lines:
        line_fn = line_row[cost_idx]
    line_row[call_lines] = n_fn + call_edges
    row = line_row[cost_idx]
    del last_fn, line_row
    if len(row) and row.min() < 0:
        bad = int(cost_idx[np.argmax(row < 0)])
        raise state.fail(bad, "cost line outside a function (no fn= before it)")
    table = Sums((n_fn + n_edge) * n_ev)
    n_parts = len(state.parts)
    part_row = None  # one part (the usual file): its sums are the self rows' sums
    part_sums = None
    if n_parts > 1:
        part_starts = np.array([p.first_line for p in state.parts], dtype=np.int64)
        part_row = np.searchsorted(part_starts, cost_idx, side="right") - 1
        part_row[row >= n_fn] = n_parts  # inclusive costs: a row nobody reads
        part_sums = Sums((n_parts + 1) * n_ev)
    lines = _LineStore(len(cost_idx), n_ev, n_pos) if keep_lines else None
    chunks = decode.decode(
        state.data, arr, ends, is_cost, n_pos, cost_idx, keep_positions=keep_lines
    )
    for chunk in chunks:
        c0, c1, counts = chunk.c0, chunk.c1, chunk.counts
        # The chunk's first line with too few or too many tokens, or a bad token.
        miscount = (counts < n_pos) | (counts > n_pos + n_ev)
        wrong = c0 + int(np.argmax(miscount)) if miscount.any() else c1
        if chunk.flaw is not None and chunk.flaw[0] < wrong:
            raise state.fail(int(cost_idx[chunk.flaw[0]]), chunk.flaw[1])
        if wrong < c1:
            raise state.fail(
                int(cost_idx[wrong]),
                f"cost line needs {n_pos} position(s) and at most {n_ev} cost(s)",
            )
        rows = row[c0:c1] * n_ev
        per_line = chunk.per_line
        if chunk.layout == decode.TABLE:
            # Cell of column k of line l: row[l] * n_ev + k.
            width = len(chunk.values) // max(len(counts), 1)
            cells = (rows[:, None] + np.arange(width, dtype=np.int64)).reshape(-1)
        elif chunk.layout == decode.COSTS:
            # Cell of the k-th cost of line l: row[l] * n_ev + k.
            cells = np.repeat(rows - (np.cumsum(per_line) - per_line), per_line)
            cells += np.arange(len(chunk.values), dtype=np.int64)
        else:
            # Cell of token t on line l: row[l] * n_ev + (t - first[l] - n_pos); the
            # positions' values are 0, charged to cell 0.
            cells = np.repeat(rows - chunk.first - n_pos, counts)
            cells += np.arange(len(chunk.values), dtype=np.int64)
        if lines is not None and chunk.positions is not None:
            lines.store_positions(c0, c1, chunk.positions)
            lines.store_costs(c0, c1, per_line, cells - np.repeat(rows, per_line), chunk.values)
        part_cells = None
        if part_row is not None:
            part_cells = np.repeat((part_row[c0:c1] - row[c0:c1]) * n_ev, per_line)
            part_cells += cells
        if chunk.layout == decode.ALL:
            for c in range(n_pos):
                cells[chunk.first + c] = 0
                if part_cells is not None:
                    part_cells[chunk.first + c] = 0
        table.add(cells, chunk.values)
        if part_sums is not None and part_cells is not None:
            part_sums.add(part_cells, chunk.values)

    cost = table.result()
    if cost is None:
        raise _beyond_int64(state, table.first_overflow(), n_ev, events, functions, n_fn)
    cost = cost.reshape(n_fn + n_edge, n_ev)
    self_cost, call_cost = cost[:n_fn], cost[n_fn:]
    call_caller = edge_pairs[:, 0].copy()
    call_callee = edge_pairs[:, 1].copy()
    _check_inclusive(state, self_cost, call_caller, call_callee, call_cost, events, functions)
    if part_sums is None:
        sums = [exact_column_sums(self_cost)]
    else:
        by_part = part_sums.result()
        if by_part is None:
            raise ParseError(
                "a part's costs add up beyond 2**63-1 (icount counts in 64 bits)",
                source=state.source,
            )
        sums = by_part.reshape(n_parts + 1, n_ev)[:n_parts].tolist()
    parts = _check_parts(state, sums, events)
    totals = {e: sum(p.totals[e] for p in parts) for e in events}
    summaries = [p.summary for p in state.parts if p.events is not None]
    summary = None
    if summaries and all(s is not None for s in summaries):
        summary = {e: sum(s[k] for s in summaries if s is not None) for k, e in enumerate(events)}
    for what, figures in (("totals", totals), ("summary:", summary or {})):
        if any(v > INT64_MAX for v in figures.values()):
            raise ParseError(
                f"the parts' {what} add up beyond 2**63-1 (icount counts in 64 bits)",
                source=state.source,
            )
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
        functions=functions,
        self_cost=self_cost,
        call_caller=call_caller,
        call_callee=call_callee,
        call_count=edge_counts,
        call_cost=call_cost,
        lines=None if lines is None else lines.finish(cost_idx, line_fn, row - n_fn),
    )


class _LineStore:
    """Every cost line's costs and positions, for `keep_lines`."""

    def __init__(self, n_lines: int, n_ev: int, n_pos: int) -> None:
        self.costs = np.zeros((n_lines, n_ev), dtype=np.int64)
        self.pos_val = np.zeros((n_lines, n_pos), dtype=np.int64)
        self.pos_abs = np.zeros((n_lines, n_pos), dtype=bool)
        self.n_pos = n_pos

    def store_positions(self, c0: int, c1: int, pos: list[tuple[tokens.I64, tokens.Mask]]) -> None:
        for c, (val, absolute) in enumerate(pos):
            self.pos_val[c0:c1, c] = val
            self.pos_abs[c0:c1, c] = absolute

    def store_costs(
        self, c0: int, c1: int, per_line: tokens.I64, col: tokens.I64, vals: tokens.I64
    ) -> None:
        """`vals` of lines c0..c1-1 (`per_line` each) in columns `col` (< 0: a position)."""
        line = np.repeat(np.arange(c0, c1, dtype=np.int64), per_line)
        at = np.flatnonzero(col >= 0)
        self.costs[line[at], col[at]] = vals[at]

    def finish(self, cost_idx: tokens.I64, line_fn: tokens.I64, edge: tokens.I64) -> CostLines:
        """`edge`: each line's call edge, negative for self cost."""
        resolved = np.zeros_like(self.pos_val)
        for c in range(self.n_pos):
            resolved[:, c] = tokens.resolve(self.pos_val[:, c], self.pos_abs[:, c])
        return CostLines(
            line=cost_idx.astype(np.int64) + 1,
            function=line_fn,
            edge=np.maximum(edge, -1),
            positions=resolved,
            costs=self.costs,
        )


def _check_table_size(state: Collected, n_fn: int, n_edge: int, n_ev: int, size: int) -> None:
    cells = (n_fn + n_edge) * n_ev
    limit = max(MIN_CELLS, CELLS_PER_BYTE * size)
    if cells > limit:
        raise ParseError(
            f"{n_fn} functions and {n_edge} call edges x {n_ev} events make {cells:,} cost "
            f"cells, more than a {size:,}-byte file can fill (icount takes up to {limit:,})",
            source=state.source,
        )


def _beyond_int64(
    state: Collected,
    cell: int,
    n_ev: int,
    events: list[str],
    functions: list[Function],
    n_fn: int,
) -> ParseError:
    row, k = divmod(cell, n_ev)
    what = f"of {functions[row].name[:80]}" if row < n_fn else "of one call edge"
    return ParseError(
        f"the {events[k][:40]} costs {what} add up beyond 2**63-1 (icount counts in 64 bits)",
        source=state.source,
    )


def _check_inclusive(
    state: Collected,
    self_cost: tokens.I64,
    caller: tokens.I64,
    callee: tokens.I64,
    call_cost: tokens.I64,
    events: list[str],
    functions: list[Function],
) -> None:
    """Profile.inclusive_cost() adds a function's calls to its self cost: it must fit too."""
    keep = caller != callee
    bad = fits_with(self_cost, caller[keep], call_cost[keep])
    if bad is not None:
        row, k = bad
        raise ParseError(
            f"the inclusive {events[k][:40]} cost of {functions[row].name[:80]} adds up beyond "
            "2**63-1 (icount counts in 64 bits)",
            source=state.source,
        )


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


def _check_parts(state: Collected, sums: list[list[int]], events: list[str]) -> list[Part]:
    parts: list[Part] = []
    by_callgrind = (state.creator or "").startswith("callgrind")
    for k, p in enumerate(state.parts):
        if p.events is None:
            continue  # a header-only prologue, no costs
        summed = sums[k]
        label = f"part {p.number if p.number is not None else k + 1}"
        if p.totals is not None:
            for e, got, want in zip(events, summed, p.totals, strict=True):
                if got != want:
                    raise ParseError(
                        f"{label}: cost lines sum to {got} {e[:40]} but totals: says {want} "
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
                summary=None if p.summary is None else dict(zip(events, p.summary, strict=True)),
            )
        )
    return parts
