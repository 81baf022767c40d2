"""Summing a callgrind file's cost lines, in bulk, into a Profile.

tokens.py decodes the cost lines' numbers; each value is then charged to the function
whose `fn=` line precedes it (self cost) or, on the line after a `calls=`, to that
call edge (inclusive cost), with `np.add.at` into one table of (functions + edges) x
events cells. Every part's sum is checked against its `totals:` line here.

The cost lines are read a chunk of bytes at a time: a chunk's token arrays stay in
the CPU caches through the two dozen passes that split and decode them, which makes
each pass several times faster than over whole-file arrays. Work is per token, never
per event and line, so a file declaring thousands of events costs what its numbers
cost.
"""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt

from icount.callgrind import tokens
from icount.callgrind.model import CostLines, Function, Part, Profile
from icount.callgrind.state import Collected
from icount.callgrind.sums import INT64_MAX, Sums, exact_column_sums, fits_with
from icount.errors import ParseError

# Bytes of cost lines per chunk (measured on a 9.8 MB cc1plus profile: 128 KiB-1 MiB
# chunks run 1.4x faster than whole-file arrays; smaller ones pay Python overhead).
CHUNK_BYTES = 1 << 18
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
    # The function of each line: the last fn= (or part start) at or before it.
    last_fn = np.full(len(is_cost), -1, dtype=np.int64)
    last_fn[fn_lines] = np.arange(len(fn_lines))
    np.maximum.accumulate(last_fn, out=last_fn)
    line_fn = fn_ids[last_fn[cost_idx]]
    if len(line_fn) and line_fn.min() < 0:
        bad = int(cost_idx[np.argmax(line_fn < 0)])
        raise state.fail(bad, "cost line outside a function (no fn= before it)")
    edge_of_line = np.full(len(is_cost), -1, dtype=np.int64)
    edge_of_line[call_lines] = call_edges
    line_edge = edge_of_line[cost_idx]
    # Row of each cost line in the table: its function (self cost) or n_fn + its edge.
    row = np.where(line_edge < 0, line_fn, n_fn + line_edge)
    table = Sums((n_fn + n_edge) * n_ev)
    n_parts = len(state.parts)
    part_row = None  # one part (the usual file): its sums are the self rows' sums
    part_sums = None
    if n_parts > 1:
        part_starts = np.array([p.first_line for p in state.parts], dtype=np.int64)
        part_row = np.searchsorted(part_starts, cost_idx, side="right") - 1
        part_row[line_edge >= 0] = n_parts  # inclusive costs: a row nobody reads
        part_sums = Sums((n_parts + 1) * n_ev)
    lines = _LineStore(len(cost_idx), n_ev, n_pos) if keep_lines else None

    line_ends = ends[cost_idx]
    cuts = np.searchsorted(line_ends, np.arange(CHUNK_BYTES, int(ends[-1]) + 1, CHUNK_BYTES))
    bounds = [0, *sorted(set(cuts.tolist()) - {0, len(cost_idx)}), len(cost_idx)]
    for c0, c1 in itertools.pairwise(bounds):
        if c1 <= c0:
            continue
        first_line, last_line = int(cost_idx[c0]), int(cost_idx[c1 - 1])
        b0 = int(ends[first_line - 1]) + 1 if first_line else 0
        sub = arr[b0 : int(ends[last_line]) + 1]
        tok = tokens.split_cost_lines(
            sub, ends[first_line : last_line + 1] - b0, is_cost[first_line : last_line + 1], n_pos
        )
        ts, te, counts, first = tok.start, tok.end, tok.counts, tok.first
        # Offsets into the whole file: words read at a chunk's end take the next bytes
        # (masked by the token's length) instead of a slower path.
        ts += b0
        te += b0
        length = te - ts
        # The first line of the chunk with too few or too many tokens, or a bad one.
        miscount = (counts < n_pos) | (counts > n_pos + n_ev)
        wrong = int(np.argmax(miscount)) if miscount.any() else len(counts)
        flaw = _first_bad_token(arr, ts, length, first, tok.odd + b0, n_pos)
        if flaw is not None and int(np.searchsorted(first, flaw[0], side="right")) - 1 < wrong:
            token, is_position = flaw
            line = cost_idx[c0 + int(np.searchsorted(first, token, side="right")) - 1]
            text = state.data[int(ts[token]) : int(te[token])]
            what = "position" if is_position else "cost"
            raise state.fail(int(line), f"bad {what} {text[:30]!r}")
        if wrong < len(counts):
            raise state.fail(
                int(cost_idx[c0 + wrong]),
                f"cost line needs {n_pos} position(s) and at most {n_ev} cost(s)",
            )
        if lines is not None:
            lines.store_positions(
                c0,
                c1,
                [tokens.positions(arr, ts[at], te[at]) for at in (first + c for c in range(n_pos))],
            )
        rows = row[c0:c1] * n_ev
        if tok.width:
            # Lines alike (`+3 * 937` of --dump-instr): columns are strided slices.
            per_line = np.full(len(counts), tok.width - n_pos, dtype=np.int64)
            table_vals = np.empty((len(counts), tok.width - n_pos), dtype=np.int64)
            table_cells = np.empty_like(table_vals)
            for k in range(tok.width - n_pos):
                column = tok.column(n_pos + k)
                table_vals[:, k] = tokens.digit_values(arr, ts[column], length[column])
                np.add(rows, k, out=table_cells[:, k])
            vals: tokens.I64 = table_vals.reshape(-1)
            cells: tokens.I64 = table_cells.reshape(-1)
            zeroed = None
        elif 3 * n_pos * len(counts) > len(ts):
            # Positions are a third of the tokens or more (--dump-instr): pick the costs.
            keep = np.ones(len(ts), dtype=bool)
            for c in range(n_pos):
                keep[first + c] = False
            at = np.flatnonzero(keep)
            per_line = counts - n_pos
            vals = tokens.digit_values(arr, ts[at], length[at])
            # Cell of the k-th cost of line l: row[l] * n_ev + k.
            cells = np.repeat(rows - (np.cumsum(per_line) - per_line), per_line)
            cells += np.arange(len(at), dtype=np.int64)
            zeroed = None
        else:
            # Every token read as a number (fewer gathers); positions then count 0 in cell 0.
            per_line = counts
            vals = tokens.digit_values(arr, ts, length)
            # Cell of token t on line l: row[l] * n_ev + (t - first[l] - n_pos).
            cells = np.repeat(rows - first - n_pos, counts)
            cells += np.arange(len(ts), dtype=np.int64)
            zeroed = [first + c for c in range(n_pos)]
        if lines is not None:
            lines.store_costs(c0, c1, per_line, cells - np.repeat(rows, per_line), vals)
        part_cells = None
        if part_row is not None:
            part_cells = np.repeat((part_row[c0:c1] - row[c0:c1]) * n_ev, per_line)
            part_cells += cells
        for at in zeroed or []:
            vals[at] = 0
            cells[at] = 0
            if part_cells is not None:
                part_cells[at] = 0
        table.add(cells, vals)
        if part_sums is not None and part_cells is not None:
            part_sums.add(part_cells, vals)

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
        lines=None if lines is None else lines.finish(cost_idx, line_fn, line_edge),
    )


def _first_bad_token(
    arr: tokens.U8,
    ts: tokens.I64,
    length: tokens.I64,
    first: tokens.I64,
    odd: tokens.I64,
    n_pos: int,
) -> tuple[int, bool] | None:
    """(token, whether it is a position) of a chunk's first token that is not a valid
    cost or position, or None.

    Costs are 1-18 digits; positions also `+n`, `-n` (up to 18 digits), `*` and `0x`
    with 1-16 hex digits (tokens.positions' grammar). split_cost_lines left only the
    bytes of hex addresses and bad bytes `odd`: each must be the `x` or a hex letter of
    a position's `0x` token.
    """
    bad: list[tuple[int, bool]] = []

    def is_position(tok: tokens.I64) -> tokens.Mask:
        column: tokens.Mask = tok - first[np.searchsorted(first, tok, side="right") - 1] < n_pos
        return column

    if len(odd):
        tok = np.searchsorted(ts, odd, side="right") - 1
        start = ts[tok]
        offset = odd - start
        lower = arr[odd] | np.uint8(0x20)
        hex_token = (arr[start] == ord("0")) & ((arr[start + 1] | np.uint8(0x20)) == ord("x"))
        hex_token &= (length[tok] >= 3) & (length[tok] <= 18)
        hex_token &= is_position(tok)
        hex_byte = ((offset == 1) & (lower == ord("x"))) | (
            (offset >= 2) & (lower >= ord("a")) & (lower <= ord("f"))
        )
        wrong = np.flatnonzero(~(hex_token & hex_byte))
        if len(wrong):
            t = tok[wrong[:1]]
            bad.append((int(t[0]), bool(is_position(t)[0])))
    if len(length) and int(length.max()) > tokens.MAX_DECIMAL_DIGITS:
        # Too long, unless a position's sign and 18 digits.
        long = np.flatnonzero(length > tokens.MAX_DECIMAL_DIGITS)
        position = is_position(long)
        lead = arr[ts[long]]
        fine = position & (length[long] == tokens.MAX_DECIMAL_DIGITS + 1)
        fine &= (lead == ord("+")) | (lead == ord("-"))
        wrong = np.flatnonzero(~fine)
        if len(wrong):
            bad.append((int(long[wrong[0]]), bool(position[wrong[0]])))
    return min(bad) if bad else None


class _LineStore:
    """Every cost line's costs and positions, for `keep_lines`."""

    def __init__(self, n_lines: int, n_ev: int, n_pos: int) -> None:
        self.costs = np.zeros((n_lines, n_ev), dtype=np.int64)
        self.pos_val = np.zeros((n_lines, n_pos), dtype=np.int64)
        self.pos_abs = np.zeros((n_lines, n_pos), dtype=bool)
        self.n_pos = n_pos

    def store_positions(
        self, c0: int, c1: int, pos: list[tuple[tokens.I64, tokens.Mask, tokens.Mask]]
    ) -> None:
        for c, (val, absolute, _) in enumerate(pos):
            self.pos_val[c0:c1, c] = val
            self.pos_abs[c0:c1, c] = absolute

    def store_costs(
        self, c0: int, c1: int, per_line: tokens.I64, col: tokens.I64, vals: tokens.I64
    ) -> None:
        """`vals` of lines c0..c1-1 (`per_line` each) in columns `col` (< 0: a position)."""
        line = np.repeat(np.arange(c0, c1, dtype=np.int64), per_line)
        at = np.flatnonzero(col >= 0)
        self.costs[line[at], col[at]] = vals[at]

    def finish(self, cost_idx: tokens.I64, line_fn: tokens.I64, line_edge: tokens.I64) -> CostLines:
        resolved = np.zeros_like(self.pos_val)
        for c in range(self.n_pos):
            resolved[:, c] = tokens.resolve(self.pos_val[:, c], self.pos_abs[:, c])
        return CostLines(
            line=cost_idx.astype(np.int64) + 1,
            function=line_fn,
            edge=line_edge,
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
    what = f"of {functions[row].name}" if row < n_fn else "of one call edge"
    return ParseError(
        f"the {events[k]} costs {what} add up beyond 2**63-1 (icount counts in 64 bits)",
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
            f"the inclusive {events[k]} cost of {functions[row].name} adds up beyond "
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
                summary=None if p.summary is None else dict(zip(events, p.summary, strict=True)),
            )
        )
    return parts
