"""Sums of int64 costs that never wrap: exact up to 2**63-1, refused beyond.

numpy's int64 additions wrap silently (a crafted file once printed a total of
-8546744073709551616). Real profiles stay far below the limit, so the sums run at
full speed while a running bound (largest value x values added) proves they cannot
wrap; past that point the high and low bits of each value are summed apart and
checked at the end. Callgrind counts in 64 bits too, and 2**63 instructions would
take valgrind centuries, so a refusal costs no real file anything, where exact big
integers would cost every file numpy's speed.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
INT64_MAX = (1 << 63) - 1
_LOW_BITS = 31
_LOW = np.int64((1 << _LOW_BITS) - 1)


class Sums:
    """Per-cell sums of non-negative int64 values (each below 2**63)."""

    def __init__(self, cells: int) -> None:
        self.total = np.zeros(cells, dtype=np.int64)
        self.high: I64 | None = None  # once a wrap became possible: bits 31.. of values
        self.low: I64 | None = None  # ... and bits 0..30, summed apart
        self.bound = 0  # no cell's sum so far exceeds this (a Python int)

    def add(self, cells: I64, values: I64) -> None:
        if not len(values):
            return
        if self.high is None:
            self.bound += int(values.max()) * len(values)
            if self.bound <= INT64_MAX:
                np.add.at(self.total, cells, values)
                return
            # From here on, sums that could wrap: up to 2**32 values per cell stay exact.
            self.high = np.zeros_like(self.total)
            self.low = np.zeros_like(self.total)
        assert self.low is not None
        np.add.at(self.high, cells, values >> _LOW_BITS)
        np.add.at(self.low, cells, values & _LOW)

    def _over(self) -> npt.NDArray[np.bool_]:
        assert self.high is not None and self.low is not None
        # total + high * 2**31 + low <= INT64_MAX, without computing the left side.
        room = (INT64_MAX - self.total) - self.low
        over: npt.NDArray[np.bool_] = (room < 0) | (self.high > (room >> _LOW_BITS))
        return over

    def result(self) -> I64 | None:
        """The sums, or None when one of them passes 2**63-1."""
        if self.high is None:
            return self.total
        if self._over().any():
            return None
        assert self.low is not None
        out: I64 = self.total + (self.high << _LOW_BITS) + self.low
        return out

    def first_overflow(self) -> int:
        """The first cell whose sum passes 2**63-1 (after result() gave None)."""
        return int(np.argmax(self._over()))


def exact_column_sums(table: I64) -> list[int]:
    """Column sums of a table of non-negative int64s as exact Python ints."""
    if not len(table):
        return [0] * table.shape[1]
    high = (table >> _LOW_BITS).sum(axis=0)  # fewer than 2**31 rows: no wrap
    low = (table & _LOW).sum(axis=0)
    return [(int(h) << _LOW_BITS) + int(lo) for h, lo in zip(high, low, strict=True)]


def fits_with(base: I64, rows: I64, extra: I64) -> tuple[int, int] | None:
    """Whether every `base[r] + sum(extra[i] for rows[i] == r)` fits int64 (all
    values non-negative); None if so, else the (row, column) of the first that does not."""
    if not len(rows):
        return None
    biggest = int(base.max(initial=0)) + int(extra.max(initial=0)) * len(rows)
    if biggest <= INT64_MAX:
        return None
    high = base >> _LOW_BITS
    low = base & _LOW
    np.add.at(high, rows, extra >> _LOW_BITS)
    np.add.at(low, rows, extra & _LOW)
    room = INT64_MAX - low
    over = (room < 0) | (high > (room >> _LOW_BITS))
    if not over.any():
        return None
    row, col = np.unravel_index(int(np.argmax(over)), over.shape)
    return int(row), int(col)
