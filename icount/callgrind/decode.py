"""The numbers of a callgrind file's cost lines, read a chunk of bytes at a time.

A chunk's token arrays stay in the CPU caches through the two dozen passes that
split, check and decode them, which makes each pass several times faster than over
whole-file arrays. Nothing here depends on the specification lines (which function
or call a line belongs to): costs.py charges the values.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from icount.callgrind import tokens

# Bytes of cost lines per chunk (measured on a 9.8 MB cc1plus profile: 256 KiB
# chunks ran 1.4x faster than whole-file arrays; smaller ones pay Python overhead).
CHUNK_BYTES = 1 << 18

# How a chunk's values are laid out: one per token (positions read as 0); costs only
# (positions are a third of the tokens or more, --dump-instr); costs only, with the
# same number on every line (`+3 * 937`: a table of `width - n_pos` columns).
ALL, COSTS, TABLE = range(3)


@dataclass(frozen=True)
class Chunk:
    """Cost lines c0..c1-1 (in cost-line numbering) and their values."""

    c0: int
    c1: int
    counts: tokens.I64  # tokens per line
    first: tokens.I64  # each line's first token
    values: tokens.I64
    layout: int
    per_line: tokens.I64  # values per line
    # (line, message) of the chunk's first bad token: line in cost-line numbering.
    flaw: tuple[int, str] | None
    positions: list[tuple[tokens.I64, tokens.Mask]] | None  # (value, absolute), if kept


def decode(
    data: bytes,
    arr: tokens.U8,
    ends: tokens.I64,
    is_cost: npt.NDArray[np.bool_],
    n_pos: int,
    cost_idx: tokens.I64,
    *,
    keep_positions: bool = False,
) -> list[Chunk]:
    """Split and decode every cost line (`n_pos` positions, then costs), up to the
    first chunk with a bad line; `cost_idx` are the cost lines' indices among all lines."""
    # Chunks of about CHUNK_BYTES: the cost lines that end before each cut.
    cut_lines = np.searchsorted(ends, np.arange(CHUNK_BYTES, int(ends[-1]) + 1, CHUNK_BYTES))
    cuts = np.searchsorted(cost_idx, cut_lines)
    bounds = [0, *sorted(set(cuts.tolist()) - {0, len(cost_idx)}), len(cost_idx)]
    chunks: list[Chunk] = []
    for c0, c1 in itertools.pairwise(bounds):
        if c1 <= c0:
            continue
        chunk = _chunk(data, arr, ends, is_cost, cost_idx, c0, c1, n_pos, keep_positions)
        chunks.append(chunk)
        if chunk.flaw is not None or int(chunk.counts.min()) < n_pos:
            break  # the error is reported at this chunk, or at an earlier one
    return chunks


def _chunk(
    data: bytes,
    arr: tokens.U8,
    ends: tokens.I64,
    is_cost: npt.NDArray[np.bool_],
    cost_idx: tokens.I64,
    c0: int,
    c1: int,
    n_pos: int,
    keep_positions: bool,
) -> Chunk:
    first_line, last_line = int(cost_idx[c0]), int(cost_idx[c1 - 1])
    b0 = int(ends[first_line - 1]) + 1 if first_line else 0
    sub = arr[b0 : int(ends[last_line]) + 1]
    tok = tokens.split_cost_lines(
        sub, ends[first_line : last_line + 1] - b0, is_cost[first_line : last_line + 1], n_pos
    )
    ts, te, counts, first = tok.start, tok.end, tok.counts, tok.first
    # Words are read from the chunk to the file's end: those at a chunk's end take the
    # next bytes (masked by the token's length) instead of a slower path.
    arr = arr[b0:]
    length = te - ts
    flaw = None
    bad = _first_bad_token(arr, ts, length, first, tok.odd, n_pos)
    if bad is not None:
        token, is_position = bad
        line = c0 + int(np.searchsorted(first, token, side="right")) - 1
        text = data[b0 + int(ts[token]) : b0 + int(te[token])]
        flaw = (line, f"bad {'position' if is_position else 'cost'} {text[:30]!r}")
    if int(counts.min()) < n_pos:
        return Chunk(c0, c1, counts, first, counts[:0], ALL, counts, flaw, None)
    positions = None
    if keep_positions:
        positions = [tokens.positions(arr, ts[at], te[at])[:2] for at in _columns(first, n_pos)]
    if tok.width:
        width = tok.width - n_pos
        table = np.empty((len(counts), width), dtype=np.int64)
        for k in range(width):
            column = tok.column(n_pos + k)
            table[:, k] = tokens.digit_values(arr, ts[column], length[column])
        per_line = np.full(len(counts), width, dtype=np.int64)
        values: tokens.I64 = table.reshape(-1)
        return Chunk(c0, c1, counts, first, values, TABLE, per_line, flaw, positions)
    if 3 * n_pos * len(counts) > len(ts):
        keep = np.ones(len(ts), dtype=bool)
        for at in _columns(first, n_pos):
            keep[at] = False
        at = np.flatnonzero(keep)
        values = tokens.digit_values(arr, ts[at], length[at])
        return Chunk(c0, c1, counts, first, values, COSTS, counts - n_pos, flaw, positions)
    # Every token read as a number: fewer gathers than picking the costs out.
    values = tokens.digit_values(arr, ts, length)
    for at in _columns(first, n_pos):
        values[at] = 0
    return Chunk(c0, c1, counts, first, values, ALL, counts, flaw, positions)


def _columns(first: tokens.I64, n_pos: int) -> list[tokens.I64]:
    return [first + c for c in range(n_pos)]


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
