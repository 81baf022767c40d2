"""A cell's recorded spread explanation (`extra.spread_explained`, written by
icount serve: serve/spread.py) as one line of the table's notes. Here, beside the
results, so that the tables read it without importing the serve package."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from icount import numfmt
from icount.names import display_name


def describe(explained: Mapping[str, Any], max_spread: float, *, windows: bool = True) -> str:
    """One line for the table's notes (the results file keeps the full names).
    `windows`: the cell counts request windows (not cold starts), which can be longer."""
    low, high = explained["low"], explained["high"]
    parts = ", ".join(
        f"{display_name(name)} {delta:+.1f}" for name, delta in explained["functions"]
    )
    line = (
        f"windows differ by {explained['spread'] * 100:.2f}% ({high['window']} "
        f"{numfmt.si(high['per_request'])} vs {low['window']} {numfmt.si(low['per_request'])} "
        f"per request); per request, the highest minus the lowest: {parts}"
    )
    if windows and explained["spread"] >= max_spread:
        # Runs that repeat each other (a collector on the same schedule every run) pass
        # the spread rule however much their windows differ; the median then depends on
        # which windows the periodic work fell in.
        line += (
            "; the median depends on which windows that work fell in: longer windows "
            "(--requests, or the adapter's `requests`) average it"
        )
    return line
