"""Numbers of callgrind cost lines, decoded in bulk with numpy.

A cost line is `positions... costs...`, whitespace-separated. Rather than split
hundreds of thousands of lines in Python, the whole file is one uint8 array: token
boundaries come from a whitespace mask, and the digits of every token are folded
into its value column by column (Horner's rule, one numpy pass per digit). A file
of a few million lines costs a few dozen array passes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
U8 = npt.NDArray[np.uint8]

_WS = np.zeros(256, dtype=bool)
_WS[[9, 10, 11, 12, 13, 32]] = True  # what bytes.split() splits on

DIGIT = np.full(256, 99, dtype=np.int64)  # 99: not a digit in any base used here
DIGIT[ord("0") : ord("9") + 1] = np.arange(10)
DIGIT[ord("a") : ord("f") + 1] = np.arange(10, 16)
DIGIT[ord("A") : ord("F") + 1] = np.arange(10, 16)

# Longest accepted number: 18 decimal digits (< 2**63), or 16 hex digits: addresses
# at or above 2**63 wrap to negative int64s, the same 64 bits, and differences
# between them stay right modulo 2**64.
_MAX_DIGITS = {10: 18, 16: 16}


@dataclass(frozen=True)
class Tokens:
    """Tokens of the selected lines: [start, end) byte spans, line index, column."""

    start: I64
    end: I64
    line: I64
    col: I64
    per_line: I64  # tokens in each line of the file


def split_lines(arr: U8, line_ends: I64, selected: Mask) -> Tokens:
    """Tokens of the lines where `selected` is true; `line_ends` are their '\\n' offsets."""
    lengths = np.diff(line_ends, prepend=-1)
    in_sel = np.repeat(selected, lengths)
    ws = _WS[arr]
    body = ~ws & in_sel
    starts = body.copy()
    starts[1:] &= ws[:-1]
    ends = body  # reused: the data ends with '\n', so ws[i + 1] always exists for a body byte
    ends[:-1] &= ws[1:]
    ts = np.flatnonzero(starts).astype(np.int64)
    te = np.flatnonzero(ends).astype(np.int64) + 1
    line_starts = line_ends - lengths + 1
    per_line = np.add.reduceat(starts, line_starts, dtype=np.int64)
    line = np.repeat(np.arange(len(line_ends), dtype=np.int64), per_line)
    first = np.cumsum(per_line) - per_line
    col = np.arange(len(ts), dtype=np.int64) - first[line]
    return Tokens(ts, te, line, col, per_line)


def unsigned(
    arr: U8, start: I64, end: I64, base: int | npt.NDArray[np.int64] = 10
) -> tuple[I64, Mask]:
    """Values of the digit strings arr[start:end] and whether each one is valid.

    `base` is 10, 16 or one of them per token. Tokens are ordered longest first, so
    that digit k is one pass over the prefix of tokens that have one: the work is
    the number of digits, not tokens x longest.
    """
    n = len(start)
    bases = np.broadcast_to(np.asarray(base, dtype=np.int64), (n,))
    limit = np.where(bases == 16, _MAX_DIGITS[16], _MAX_DIGITS[10])
    length = end - start
    ok = (length > 0) & (length <= limit)
    if n == 0:
        return np.zeros(0, dtype=np.int64), ok
    clipped = np.minimum(np.maximum(length, 0), limit).astype(np.uint8)
    order = np.argsort(~clipped, kind="stable")  # radix sort of uint8: longest first
    s_sorted = start[order]
    b_sorted = bases[order]
    longest = int(clipped.max())
    active = np.cumsum(np.bincount(clipped, minlength=longest + 1)[::-1])[::-1]
    value = np.zeros(n, dtype=np.int64)
    good = np.ones(n, dtype=bool)
    for k in range(longest):
        m = int(active[k + 1])  # tokens with more than k digits
        b = b_sorted[:m]
        digit = DIGIT[arr[s_sorted[:m] + k]]
        fits = digit < b
        good[:m] &= fits
        value[:m] = value[:m] * b + np.where(fits, digit, 0)
    out = np.empty(n, dtype=np.int64)
    out[order] = value
    valid = np.empty(n, dtype=bool)
    valid[order] = good
    return out, ok & valid


def costs(arr: U8, start: I64, end: I64) -> tuple[I64, Mask]:
    """Cost tokens: plain decimal numbers."""
    return unsigned(arr, start, end, 10)


def positions(arr: U8, start: I64, end: I64) -> tuple[I64, Mask, Mask]:
    """Position tokens: (value or signed difference, is_absolute, valid).

    Absolute: decimal or `0x` hex. Relative: `+n`, `-n` (decimal) or `*` (same).
    """
    length = end - start
    last = len(arr) - 1
    first = arr[np.minimum(start, last)]
    second = arr[np.minimum(start + 1, last)]
    star = (first == ord("*")) & (length == 1)
    relative = (first == ord("+")) | (first == ord("-"))
    hexa = (first == ord("0")) & (length > 2) & ((second == ord("x")) | (second == ord("X")))
    skip = relative + 2 * hexa
    value, ok = unsigned(arr, start + skip, end, np.where(hexa, 16, 10))
    value = np.where(star, 0, np.where(first == ord("-"), -value, value))
    return value, ~(star | relative), ok | star


def resolve(value: I64, absolute: Mask) -> I64:
    """Absolute positions of one column: each relative entry adds to the one before."""
    delta = np.where(absolute, 0, value)
    running = np.cumsum(delta)
    idx = np.where(absolute, np.arange(len(value)), -1)
    last_abs = np.maximum.accumulate(idx) if len(idx) else idx
    has = last_abs >= 0
    base = np.where(has, value[np.maximum(last_abs, 0)], 0)
    since = running - np.where(has, running[np.maximum(last_abs, 0)], 0)
    out: I64 = base + since
    return out
