"""Why one cell's windows differ, as its results file records it (`extra.spread_explained`,
written by icount serve: serve/spread.py), in one line of the table's notes. Here, beside
the results, so that the tables read it without importing the serve package. Why a
compared cell moved between two files is compare/explain.py's."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from icount import numfmt
from icount.names import display_name
from icount.text import printable

# A collected runtime's explanation (serve/spread.py writes these, the notes read them):
# `figure` is the mutator, and `functions_of` says whose functions it names: the
# mutator's (the runtime's taken out by name) or the whole windows' (the runtime's among)
MUTATOR = "mutator"
OF_WINDOW = "window"
# what icount serve found of a cell that its figure does not say (serve/connections.py:
# how the server used its connections): lines of text, each for the table's notes
NOTES = "notes"


def describe(explained: Mapping[str, Any], max_spread: float, *, windows: bool = True) -> str:
    """One line for the table's notes (the results file keeps the full names).
    `windows`: the cell counts request windows (not cold starts), which can be longer."""
    low, high = explained["low"], explained["high"]
    parts = ", ".join(
        f"{display_name(name)} {delta:+.1f}" for name, delta in explained["functions"]
    )
    between = (
        f"{explained['spread'] * 100:.2f}% ({high['window']} "
        f"{numfmt.si(high['per_request'])} vs {low['window']} {numfmt.si(low['per_request'])} "
        "per request"
    )
    if explained.get("figure") == MUTATOR:
        line = _mutator_line(explained, between, parts)
    else:
        line = f"windows differ by {between}); per request, the highest minus the lowest: {parts}"
    if windows and explained["spread"] >= max_spread:
        # Runs that repeat each other (a collector on the same schedule every run) pass
        # the spread rule however much their windows differ; the median then depends on
        # which windows the periodic work fell in. For a collected runtime `spread` is
        # its mutator's: whole windows that differ by the work counted apart alone say
        # nothing of the median.
        line += (
            "; the median depends on which windows that work fell in: longer windows "
            "(--requests, or the adapter's `requests`) average it"
        )
    return line


def _mutator_line(explained: Mapping[str, Any], between: str, parts: str) -> str:
    """A collected runtime's: the spread is the mutator windows' (the cell's figure);
    the functions are the mutator's, or, where a window's functions could not tell the
    runtime's from the request's (work counted inclusively below entry points), the
    whole windows' with the runtime's among them, said so."""
    whole = explained.get("whole_spread")
    # written by serve/spread.py with the rest; a file that lacks it or holds something
    # else still reads (the loader checks only the fields every file has)
    if isinstance(whole, (int, float)) and not isinstance(whole, bool) and math.isfinite(whole):
        between += f"; whole windows {whole * 100:.2f}% apart, the runtime's own work counted apart"
    head = f"the mutator's windows differ by {between})"
    if explained.get("functions_of") == MUTATOR:
        return (
            f"{head}; per request, the highest minus the lowest, the runtime's functions "
            f"left out: {parts}"
        )
    return (
        f"{head}; per request, the highest minus the lowest of the whole windows, the "
        f"runtime's own work counted apart among them (a window's functions do not tell "
        f"it apart): {parts}"
    )


def cell_notes(extra: Mapping[str, Any]) -> list[str]:
    """The lines a cell's `extra.notes` holds, escaped; what is not text is left out (a
    file icount did not write still reads)."""
    lines = extra.get(NOTES)
    if not isinstance(lines, list):
        return []
    return [printable(line) for line in lines if isinstance(line, str)]
