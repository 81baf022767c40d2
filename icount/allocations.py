"""Allocations per request (per run for a command): calls into the allocator, from the
cells' profiles (results/cell_profile.py), as a column beside the instructions in the table
and the CSV. Shown only where a cell measured them: other files render as before."""

from __future__ import annotations

from collections.abc import Sequence

from icount import numfmt
from icount.results import Cell, Results
from icount.results.cell_profile import PER_REQUEST, PER_RUN

CSV_COLUMNS = ("allocations", "frees")


def measured(cells: Sequence[Cell]) -> bool:
    return any(c.profile is not None for c in cells)


def title(cells: Sequence[Cell]) -> str:
    pers = {c.profile.per for c in cells if c.profile is not None}
    if pers == {PER_REQUEST}:
        return "allocs/request"
    if pers == {PER_RUN}:
        return "allocs/run"
    return "allocs"


def text(results: Results, name: str) -> str:
    """The allocations of the row's cells: one figure where the row has one cell with a
    profile, else each column's ('json 3, plaintext 2')."""
    cells = sorted((c for c in results.cells if c.name == name and c.profile is not None),
                   key=lambda c: c.key)  # fmt: skip
    figures = [(c.path or c.backend, numfmt.plain(c.profile.allocations))
               for c in cells if c.profile is not None]  # fmt: skip
    if len(figures) == 1:
        return figures[0][1]
    return ", ".join(f"{where} {n}" for where, n in figures)


def csv_values(cell: Cell) -> list[object]:
    p = cell.profile
    if p is None:
        return ["", ""]
    return [numfmt.plain(p.allocations), numfmt.plain(p.frees)]
