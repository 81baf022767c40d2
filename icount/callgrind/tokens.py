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


def unsigned(arr: U8, start: I64, end: I64, base: int = 10) -> tuple[I64, Mask]:
    """Values of the digit strings arr[start:end] and whether each one is valid.

    Tokens are ordered longest first, so that digit k is one pass over the prefix of
    tokens that have one: the work is the number of digits, not tokens x longest.
    """
    n = len(start)
    length = end - start
    ok = (length > 0) & (length <= _MAX_DIGITS[base])
    if n == 0:
        return np.zeros(0, dtype=np.int64), ok
    clipped = np.minimum(np.maximum(length, 0), _MAX_DIGITS[base]).astype(np.uint8)
    order = np.argsort(~clipped, kind="stable")  # radix sort of uint8: longest first
    s_sorted = start[order]
    active = np.cumsum(np.bincount(clipped, minlength=_MAX_DIGITS[base] + 1)[::-1])[::-1]
    value = np.zeros(n, dtype=np.int64)
    good = np.ones(n, dtype=bool)
    for k in range(int(clipped.max())):
        m = int(active[k + 1])  # tokens with more than k digits
        digit = DIGIT[arr[s_sorted[:m] + k]]
        good[:m] &= digit < base
        value[:m] = value[:m] * base + np.where(digit < base, digit, 0)
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
    n = len(start)
    length = end - start
    last = len(arr) - 1
    first = arr[np.minimum(start, last)]
    second = arr[np.minimum(start + 1, last)]
    star = (first == ord("*")) & (length == 1)
    sign = np.where(first == ord("-"), -1, 1)
    relative = (first == ord("+")) | (first == ord("-"))
    hexa = (first == ord("0")) & (length > 2) & ((second == ord("x")) | (second == ord("X")))
    skip = np.where(relative, 1, np.where(hexa, 2, 0))
    value = np.zeros(n, dtype=np.int64)
    ok = star.copy()
    for is_hex in (False, True):
        sel = ~star & (hexa == is_hex)
        v, good = unsigned(arr, start[sel] + skip[sel], end[sel], 16 if is_hex else 10)
        value[sel] = v
        ok[sel] = good
    value *= sign
    return value, ~(star | relative), ok


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
