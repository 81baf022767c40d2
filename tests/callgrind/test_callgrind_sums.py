"""Exact int64 sums (icount/callgrind/sums.py) against Python's integers."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from icount.callgrind.sums import INT64_MAX, Sums, exact_column_sums, fits_with

values = st.one_of(st.integers(0, 1000), st.integers(10**17, 10**18 - 1), st.just(INT64_MAX))


# The edges for sure (INT64_MAX exactly, passed by one in one batch, passed across
# batches, in a later column than another column's); the random batches find the rest.
@settings(max_examples=120, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 4), values), max_size=12), max_size=5))
@example([[(0, INT64_MAX)], [(1, 5)]])
@example([[(2, INT64_MAX), (2, 1)]])
@example([[(3, INT64_MAX)], [(1, INT64_MAX)], [(3, 1)], [(1, 1)]])
@example([[(4, 10**18 - 1)] * 9, [(4, 10**18 - 1)] * 12])
def test_sums_are_exact_or_refused(batches: list[list[tuple[int, int]]]) -> None:
    sums = Sums(5)
    expected = [0] * 5
    for batch in batches:
        cells = np.array([c for c, _ in batch], dtype=np.int64)
        vals = np.array([v for _, v in batch], dtype=np.int64)
        sums.add(cells, vals)
        for c, v in batch:
            expected[c] += v
    got = sums.result()
    if max(expected) > INT64_MAX:
        assert got is None
        assert expected[sums.first_overflow()] > INT64_MAX
        assert all(e <= INT64_MAX for e in expected[: sums.first_overflow()])
    else:
        assert got is not None and got.tolist() == expected


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.lists(values, min_size=2, max_size=2), min_size=1, max_size=4),
    st.lists(st.tuples(st.integers(0, 3), values, values), max_size=8),
)
def test_fits_with_finds_the_first_row_that_passes_int64(
    base_rows: list[list[int]], extra: list[tuple[int, int, int]]
) -> None:
    n = len(base_rows)
    extra = [(r % n, a, b) for r, a, b in extra]
    base = np.array(base_rows, dtype=np.int64)
    rows = np.array([r for r, _, _ in extra], dtype=np.int64)
    more = np.array([[a, b] for _, a, b in extra], dtype=np.int64).reshape(-1, 2)
    exact = [list(row) for row in base_rows]
    for r, a, b in extra:
        exact[r][0] += a
        exact[r][1] += b
    over = [(r, k) for r in range(n) for k in range(2) if exact[r][k] > INT64_MAX]
    assert fits_with(base, rows, more) == (over[0] if over else None)


def test_exact_column_sums_pass_int64_without_wrapping() -> None:
    table = np.array([[INT64_MAX, 1], [INT64_MAX, 2], [5, 3]], dtype=np.int64)
    assert exact_column_sums(table) == [2 * INT64_MAX + 5, 6]
    assert exact_column_sums(np.zeros((0, 3), dtype=np.int64)) == [0, 0, 0]
