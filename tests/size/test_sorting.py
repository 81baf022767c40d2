"""The fast orderings of the symbols view equal the plain numpy sorts they replace."""

from __future__ import annotations

import numpy as np
import pytest

from icount.size.symbols import sort_order
from icount.size.views import _largest


@pytest.mark.parametrize("seed", range(20))
def test_sort_order_is_lexsort(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 3000))
    # few distinct values, so that ties (aliases) are common
    keys = [rng.integers(0, hi, n).astype(np.int64) for hi in (4, 50, 3)]
    assert sort_order(keys).tolist() == np.lexsort(keys[::-1]).tolist()


def test_sort_order_falls_back_when_keys_do_not_pack() -> None:
    rng = np.random.default_rng(1)
    wide = [rng.integers(0, 2**40, 500), rng.integers(0, 2**30, 500)]  # 70 bits + position
    assert sort_order(wide).tolist() == np.lexsort(wide[::-1]).tolist()
    negative = [rng.integers(-5, 5, 500)]
    assert sort_order(negative).tolist() == np.lexsort(negative[::-1]).tolist()
    assert sort_order([np.zeros(0, dtype=np.int64)]).tolist() == []


@pytest.mark.parametrize("seed", range(20))
def test_largest_selects_what_lexsort_selects(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 2000))
    values = rng.integers(0, int(rng.integers(1, 100)), n)  # many equal values
    tie = rng.permutation(n * 3)[:n]  # distinct
    for k in (1, 5, 120, n, n + 3):
        expected = set(np.lexsort((tie, -values))[:k].tolist())
        assert set(_largest(values, tie, k).tolist()) == expected
