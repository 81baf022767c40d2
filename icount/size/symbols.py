"""Charge section bytes to symbols, in bulk, without double counting.

Rules (see the issue and shared/README.md):
- aliases at one address count once: the best-ranked (global before weak before
  local, then the lowest index) name keeps the bytes;
- a symbol overlapping the one before it only gets the bytes past that one's end;
- a symbol never reaches past its section's end;
- Mach-O symbols have no size: a symbol runs to the next symbol of its section, and
  the last one to the section's end.
Everything is numpy over whole arrays; Python loops only over sections, never over
symbols (a 200 MB library holds a million of them).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from icount.size.model import Region, SymbolTable

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Charged:
    """Symbols that got bytes: indices into the SymbolTable and their exclusive sizes."""

    index: I64
    region: I64
    size: I64  # bytes inside the section's range, after aliases and overlaps


def charge(table: SymbolTable, regions: list[Region]) -> Charged:
    n_regions = len(regions)
    has_range = np.array([r.sym_addr is not None for r in regions] + [False], dtype=bool)
    # Section bounds as Python ints first: hostile headers can hold values near 2**64.
    lo = np.array([_clip63(r.sym_addr or 0) for r in regions] + [0], dtype=np.int64)
    hi = np.array([_clip63((r.sym_addr or 0) + r.sym_size) for r in regions] + [0], dtype=np.int64)

    reg = table.region
    valid = (reg >= 0) & (reg < n_regions)
    reg_c = np.where(valid, reg, n_regions)
    valid &= has_range[reg_c]
    addr = _to_i64(table.addr)
    valid &= (addr >= lo[reg_c]) & (addr < hi[reg_c])
    if table.sized:
        valid &= table.size > 0
    idx = np.flatnonzero(valid).astype(np.int64)
    if idx.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Charged(empty, empty, empty)

    reg_v = reg[idx]
    addr_v = addr[idx]
    # Sort by section, address, rank, then index: aliases end up adjacent, best first.
    order = sort_order([reg_v, addr_v - lo[reg_v], table.rank[idx]])
    idx, reg_v, addr_v = idx[order], reg_v[order], addr_v[order]
    first = np.ones(idx.size, dtype=bool)
    first[1:] = (reg_v[1:] != reg_v[:-1]) | (addr_v[1:] != addr_v[:-1])
    idx, reg_v, addr_v = idx[first], reg_v[first], addr_v[first]

    sec_end = hi[reg_v]
    if table.sized:
        end = addr_v + np.minimum(_to_i64(table.size[idx]), sec_end - addr_v)
    else:
        # next symbol's address within the same section, else the section's end
        end = sec_end.copy()
        same = reg_v[1:] == reg_v[:-1]
        end[:-1] = np.where(same, addr_v[1:], sec_end[:-1])
    start = np.maximum(addr_v, _previous_end(reg_v, end))
    size = np.maximum(end - start, 0)
    keep = size > 0
    return Charged(idx[keep], reg_v[keep], size[keep])


def sort_order(keys: list[I64]) -> I64:
    """The stable sort by `keys` (the first most significant), as np.lexsort(keys[::-1])
    gives it.

    When the keys and the position fit in 63 bits together, they are packed into one
    int64 per entry and sorted by value, which is several times faster than lexsort's
    one stable pass per key (a million symbols); the position in the low bits makes
    every key distinct, so the order is the same. Otherwise (or with negative keys,
    which do not pack): lexsort.
    """
    n = keys[0].size
    widths = [int(k.max()).bit_length() if n else 0 for k in keys]
    pos_bits = max(n - 1, 0).bit_length()
    if sum(widths) + pos_bits > 63 or any(int(k.min()) < 0 for k in keys if n):
        return np.lexsort(keys[::-1]).astype(np.int64)
    packed = np.zeros(n, dtype=np.int64)
    for key, width in zip(keys, widths, strict=True):
        packed <<= width
        packed |= key
    packed <<= pos_bits
    packed |= np.arange(n, dtype=np.int64)
    # timsort: symbol tables come in long presorted runs (address or name order)
    packed.sort(kind="stable")
    return packed & ((1 << pos_bits) - 1)


def _previous_end(group: I64, end: I64) -> I64:
    """For each symbol, the largest end of the symbols before it in the same section."""
    out = np.empty_like(end)
    if end.size == 0:
        return out
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    bounds = [*starts.tolist(), end.size]
    # One numpy call per section: sections number in the tens, symbols in the millions.
    for a, b in itertools.pairwise(bounds):
        run = np.maximum.accumulate(end[a:b])
        out[a] = np.iinfo(np.int64).min
        out[a + 1 : b] = run[:-1]
    return out


def _to_i64(values: npt.NDArray[np.uint64]) -> I64:
    """Addresses above 2**63 (only in hostile files) are clipped, not wrapped negative."""
    return np.minimum(values, np.uint64(2**63 - 1)).astype(np.int64)


def _clip63(value: int) -> int:
    return min(max(value, 0), 2**63 - 1)


def per_region(charged: Charged, n_regions: int) -> I64:
    """Sum of charged bytes per region (exact integers, no float bincount)."""
    total = np.zeros(n_regions, dtype=np.int64)
    np.add.at(total, charged.region, charged.size)
    return total
