"""A history as tables (each commit's medians; each cell's noise) and as JSON (pure).

JSON format history (bump VERSION and add a line on every change to the layout):
  1 - first version: {format, version, commits[{number, commit}], cells[{name, path,
      backend, unit, medians[] (one per commit, null where the commit has no valid
      cell), noise{commits, changes, fence, exact}}]}.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from icount import numfmt
from icount.history.noise import MIN_CHANGES, CellKey, Noise, of_history
from icount.history.store import Entry
from icount.results import Cell, Results
from icount.tables import Column, Table

FORMAT = "icount-history"
VERSION = 1
SHORT = 10  # characters of a commit in a table column, as `git log --oneline` shows


@dataclass(frozen=True)
class Series:
    """One cell over the history: its cell in each commit (None where it has none)."""

    key: CellKey
    unit: str
    cells: tuple[Cell | None, ...]
    noise: Noise

    @property
    def label(self) -> str:
        name, path, _ = self.key
        return f"{name}/{path}" if path else name

    @property
    def medians(self) -> list[float | None]:
        return [c.summary.median if c and c.valid and c.summary else None for c in self.cells]


@dataclass(frozen=True)
class History:
    entries: tuple[Entry, ...]
    series: tuple[Series, ...]
    other_environment: int  # entries left out of the noise: another environment's


def build(loaded: Sequence[tuple[Entry, Results]]) -> History:
    """Every cell of every entry, cells in the order the newest entry holding them
    gives (then by key), with each cell's noise over the entries measured where the
    newest entry was."""
    entries = tuple(e for e, _ in loaded)
    past = [r for _, r in loaded]
    keys: dict[CellKey, tuple[int, int, CellKey]] = {}
    for age, r in enumerate(reversed(past)):
        for c in r.cells:
            keys.setdefault(c.key, (age, c.order, c.key))
    noise, other = of_history(past, past[-1].fingerprint) if past else ({}, 0)
    series = []
    for key in sorted(keys, key=lambda k: keys[k]):
        cells = tuple(next((c for c in r.cells if c.key == key), None) for r in past)
        unit = next(c.unit for c in reversed(cells) if c is not None)
        series.append(Series(key, unit, cells, noise.get(key, Noise(0, 0, None, False))))
    return History(entries, tuple(series), other)


def _commit(e: Entry) -> str:
    return f"{e.number:04d} {e.commit[:SHORT]}"


def _fence(n: Noise) -> str:
    if n.fence is None:
        return f"too short ({n.changes} of {MIN_CHANGES} changes)"
    if n.exact:
        return "exact"
    return numfmt.percent(n.fence, 3)


def medians_table(h: History) -> Table:
    """A row per commit, oldest first, a column per cell: its median there."""
    table = Table(
        columns=[Column("commit", "left"), *(Column(s.label) for s in h.series)],
        title=f"history: {numfmt.plural(len(h.entries), 'commit')}, medians per cell",
    )
    for i, e in enumerate(h.entries):
        cells = [s.medians[i] for s in h.series]
        table.add_row([_commit(e), *("-" if m is None else numfmt.plain(m) for m in cells)])
    table.notes.append("- where the commit holds no valid cell of that name")
    return table


def noise_table(h: History) -> Table:
    """A row per cell: its range over the history and the fence compare --history uses."""
    table = Table(
        columns=[
            Column("cell", "left"),
            Column("unit", "left"),
            Column("commits"),
            Column("lowest"),
            Column("highest"),
            Column("last"),
            Column("noise (Q3 + 3 x IQR)"),
        ],
        title="noise per cell: the threshold compare --history takes when it is larger",
    )
    for s in h.series:
        held = [m for m in s.medians if m is not None]
        last = s.medians[-1] if s.medians else None
        table.add_row(
            [
                s.label,
                s.unit,
                str(len(held)),
                numfmt.plain(min(held)) if held else "-",
                numfmt.plain(max(held)) if held else "-",
                "-" if last is None else numfmt.plain(last),
                _fence(s.noise),
            ]
        )
    table.notes.append(
        "noise: Q3 + 3 x IQR of |relative change| between consecutive commits "
        f"(rustc-perf's fence; {MIN_CHANGES} changes at least); exact: every run of every "
        "commit repeated to the instruction, so any change fails"
    )
    if h.other_environment:
        table.notes.append(
            f"{numfmt.plural(h.other_environment, 'commit')} measured in another environment "
            "than the newest left out of the noise"
        )
    return table


def tables(h: History) -> list[Table]:
    return [medians_table(h), noise_table(h)]


def to_json(h: History) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "commits": [{"number": e.number, "commit": e.commit} for e in h.entries],
        "cells": [
            {
                "name": s.key[0],
                "path": s.key[1],
                "backend": s.key[2],
                "unit": s.unit,
                "medians": s.medians,
                "noise": {
                    "commits": s.noise.commits,
                    "changes": s.noise.changes,
                    "fence": s.noise.fence,
                    "exact": s.noise.exact,
                },
            }
            for s in h.series
        ],
        "other_environment": h.other_environment,
    }
