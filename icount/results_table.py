"""Results → tables: the terminal/Markdown table, CSV rows and the JSON document.

Pure functions of Results. Rows are cell names, in the order they were asked for
(or by name), columns are paths (and backends when several are present); an invalid
cell shows `-` with a numbered reason under the table.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from icount import allocations, build_label, cache_sim, memory, numfmt, sorting, startup_floor
from icount.results import UNIT_INSTRUCTIONS, UNIT_PER_REQUEST, Cell, Results
from icount.results.details import COLD_START, TIME_SHARE_SHOWN, ServeDetail
from icount.results.model import sort_key
from icount.results.runtime import csv_columns as runtime_csv_columns
from icount.results.runtime import csv_values as runtime_csv
from icount.results.runtime import note as runtime_note
from icount.spread_note import cell_notes, describe
from icount.tables import Column, Table

SORT_ORDER = sorting.Sort.ORDER  # rows in the order commands and targets were given
SORT_NAME = sorting.Sort.NAME  # by name, in natural order (fib-2 before fib-10)
SORTS = sorting.SORTS

CSV_HEADER = (
    "name",
    "path",
    "backend",
    "unit",
    "median",
    "min",
    "max",
    "spread_pct",
    "runs",
    "runs_wanted",
    "valid",
    "reason",
)


@dataclass(frozen=True)
class ExtraColumn:
    """A per-row column beside the counts (e.g. binary size): title and name -> text."""

    title: str
    value: Callable[[str], str]


def _column_key(cell: Cell, multi_backend: bool) -> str:
    label = cell.path or "instructions"
    return f"{label} [{cell.backend}]" if multi_backend else label


def _unit_title(cells: Sequence[Cell]) -> str:
    if not cells:  # a shard the plan gave no cell, or a session interrupted before any
        return "no cells"
    cold = {c.unit for c in cells if c.path == COLD_START}
    units = sorted({c.unit for c in cells if c.path != COLD_START})
    backends = sorted({c.backend for c in cells})
    what = "instructions per request" if units == [UNIT_PER_REQUEST] else ", ".join(units)
    if cold:  # cold-start cells of icount serve --cold-start: a count, not per request
        what = (
            f"{what}; cold-start: instructions from exec to the first answer"
            if units
            else ("cold-start: instructions from exec to the first answer")
        )
    return f"{what} ({', '.join(backends)})"


def binary_size_text(results: Results, name: str) -> str:
    """'17.66 KiB (text 3.12 KiB)': the size icount serve recorded for a target's binary."""
    for c in sorted(results.cells, key=lambda c: c.key):
        if c.name == name and "binary_bytes" in c.extra:
            text = numfmt.human_bytes(int(c.extra["binary_bytes"]))
            if "binary_text_bytes" in c.extra:
                text += f" (text {numfmt.human_bytes(int(c.extra['binary_text_bytes']))})"
            return text
    return ""


def _recorded_columns(results: Results) -> list[ExtraColumn]:
    """Columns the cells carry themselves, so that re-rendering gives the same table."""
    columns = []
    if any("binary_bytes" in c.extra for c in results.cells):
        columns.append(ExtraColumn("binary size", lambda name: binary_size_text(results, name)))
    if startup_floor.has_floor(results.cells):
        floor = functools.partial(_first, results, key=startup_floor.KEY, text=startup_floor.text)
        columns.append(ExtraColumn("floor", floor))
    if cache_sim.has_cache_sim(results.cells):
        cycles = functools.partial(_first, results, key=cache_sim.KEY, text=cache_sim.text)
        columns.append(ExtraColumn(cache_sim.TITLE, cycles))
    if memory.has_memory(results.cells):
        peak = functools.partial(_first, results, key=memory.KEY, text=memory.text)
        columns.append(ExtraColumn(memory.TITLE, peak))
    if allocations.measured(results.cells):  # calls into the allocator, from the profiles
        title = allocations.title(results.cells)
        columns.append(ExtraColumn(title, lambda name: allocations.text(results, name)))
    return columns


def _first(results: Results, name: str, key: str, text: Callable[[Cell], str]) -> str:
    """A figure the cells carry in `extra[key]` (memory.py's peak RSS, startup_floor.py's
    floor), of the row's first cell that has one."""
    for c in sorted(results.cells, key=lambda c: c.key):
        if c.name == name and key in c.extra:
            return text(c)
    return ""


def row_names(cells: Sequence[Cell], sort: str = SORT_ORDER) -> list[str]:
    """The rows' names: in the order the cells were asked for (the order commands and
    targets were given: `Cell.order`), ties by name; or by name alone."""
    if sort == SORT_NAME:
        return sorting.names(c.name for c in cells)
    first: dict[str, int] = {}
    for c in cells:
        first[c.name] = min(first.get(c.name, c.order), c.order)
    return sorted(first, key=lambda name: (first[name], name))


def _cell_order(sort: str) -> Callable[[Cell], tuple[object, ...]]:
    return (lambda c: (sorting.natural_key(c.name), c.key)) if sort == SORT_NAME else sort_key


def build_table(
    results: Results, extra: Sequence[ExtraColumn] = (), sort: str = SORT_ORDER
) -> Table:
    extra = [*_recorded_columns(results), *extra]
    cells = sorted(results.cells, key=lambda c: c.key)
    multi_backend = len({c.backend for c in cells}) > 1
    names = row_names(cells, sort)
    col_keys = sorted({_column_key(c, multi_backend) for c in cells})
    by_pos = {(c.name, _column_key(c, multi_backend)): c for c in cells}
    single = len(col_keys) == 1

    columns = [Column("name", "left")]
    columns += [Column(k) for k in col_keys]
    if single:
        columns += [Column("spread"), Column("runs")]
    columns += [Column(e.title) for e in extra]
    table = Table(columns=columns, title=_unit_title(cells))

    reasons: list[str] = []
    for name in names:
        row = [name]
        for k in col_keys:
            cell = by_pos.get((name, k))
            row.append(_cell_text(cell, reasons))
        if single:
            cell = by_pos.get((name, col_keys[0]))
            s = cell.summary if cell else None
            row.append(numfmt.percent(s.spread) if s and cell and cell.valid else "")
            row.append(f"{len(cell.values)}/{cell.runs_wanted}" if cell else "")
        row += [e.value(name) for e in extra]
        table.add_row(row)

    if {c.unit for c in cells} == {numfmt.UNIT_BYTES}:  # icount size -o
        table.notes.append(f"sizes read from the files; {numfmt.BYTES_LEGEND}")
    else:
        table.notes.append(f"median (min-max) of fresh processes; {numfmt.LEGEND}")
    table.notes += counting_notes(cells)
    table.notes += explaining_notes(cells)
    if startup_floor.has_floor(cells):
        table.notes += startup_floor.notes(sorted(cells, key=sort_key))
    if cache_sim.has_cache_sim(cells):
        table.notes += cache_sim.notes(sorted(cells, key=sort_key))
    if memory.has_memory(cells):
        table.notes += memory.notes(sorted(cells, key=sort_key))
    modes = build_label.differing_modes(sorted(cells, key=sort_key))
    if modes:
        table.notes.append(modes)
    differ = _runs_that_differ(cells)
    if differ:
        table.notes.append(
            f"runs differ: {differ} (programs with runtime threads, a GC or timers do "
            "not repeat exactly)"
        )
    if reasons:
        table.notes.append("not valid:")
        table.notes += reasons
    return table


def counting_notes(cells: Sequence[Cell]) -> list[str]:
    """What each cell's figure sums, where it is not simply one process: the number of
    processes a server's windows summed, or the one process or thread asked for."""
    notes: list[str] = []
    for cell in cells:
        thread = cell.params.get("thread")
        if thread is not None:
            notes.append(f"{cell.key_text}: valgrind thread {thread} of the started process only")
            continue
        if cell.params.get("processes") == "root":
            notes.append(f"{cell.key_text}: the started process only (--processes root)")
            continue
        counts = {
            len(rep.processes)
            for run in cell.runs
            if run.valid and isinstance(run.detail, ServeDetail)
            for rep in run.detail.reps
        }
        if counts and max(counts) > 1:
            many = f"{min(counts)}-{max(counts)}" if min(counts) != max(counts) else max(counts)
            notes.append(
                f"{cell.key_text}: {many} processes summed per window (the started process "
                "and its children)"
            )
    return notes


def explaining_notes(cells: Sequence[Cell]) -> list[str]:
    """Why a cell's windows differ (the functions behind it), and how much of a window
    is work driven by the clock, where a run measured it."""
    notes: list[str] = []
    for cell in cells:
        explained = cell.extra.get("spread_explained")
        if isinstance(explained, dict):
            line = describe(explained, cell.max_spread, windows=cell.path != COLD_START)
            notes.append(f"{cell.key_text}: {line}")
        clock = _clock_note(cell)
        if clock:
            notes.append(f"{cell.key_text}: {clock}")
        notes += [f"{cell.key_text}: {line}" for line in cell_notes(cell.extra)]
        if cell.runtime is not None:  # a collected runtime's three figures
            notes.append(f"{cell.key_text}: {runtime_note(cell.runtime)}")
    return notes


def _clock_note(cell: Cell) -> str | None:
    """What the runs' idle windows say about work the clock drives: a share of every
    window when most runs measured one, or, when only some idle windows caught work
    (a collector or a timer that does not run every second), that they disagree."""
    idle = [
        (d.time_share or 0.0, d.idle.instructions / d.idle.seconds)
        for r in cell.runs
        if isinstance(d := r.detail, ServeDetail) and d.idle is not None and d.idle.seconds
    ]
    if not idle:
        return None
    # the lower middles: one run of two that caught a timer is not "each window"
    share = statistics.median_low(share for share, _ in idle)
    if share >= TIME_SHARE_SHOWN:
        rate = statistics.median_low(rate for _, rate in idle)
        taken = any(isinstance(r.detail, ServeDetail) and r.detail.clock_subtracted
                    for r in cell.runs)  # fmt: skip
        return (
            f"~{share * 100:.2g}% of each window is work driven by the clock "
            f"({numfmt.si(rate)} instructions/s while idle)"
            + ("; rate x each window's time is taken out of the figure" if taken else "")
        )
    caught = [(s, rate) for s, rate in idle if s >= TIME_SHARE_SHOWN]
    if not caught:
        return None
    rest = [r for s, r in idle if s < TIME_SHARE_SHOWN]  # not empty: the middle is here
    low, high = numfmt.si(min(rest)), numfmt.si(max(rest))
    others = low if low == high else f"{low}-{high}"
    up_to = "up to " if len(caught) > 1 else ""
    return (
        f"{len(caught)} of {len(idle)} idle windows counted {up_to}"
        f"{numfmt.si(max(r for _, r in caught))} instructions/s (~"
        f"{max(s for s, _ in caught) * 100:.2g}% of a window), the others {others} "
        "instructions/s: work that runs now and then, not every second (a collector, a timer)"
    )


def _runs_that_differ(cells: Sequence[Cell]) -> str:
    """'go 10218914-10232596, loop 407921-407923': the valid whole-command cells whose
    runs did not all give one count, with the exact range (a spread of 0.00% can hide
    a difference). Per-request cells are left out: their windows are expected to vary
    a little, and the spread column says by how much."""
    return ", ".join(
        f"{c.name} {numfmt.plain(c.summary.min)}-{numfmt.plain(c.summary.max)}"
        for c in cells
        if c.unit == UNIT_INSTRUCTIONS and c.valid and c.summary and c.summary.min != c.summary.max
    )


def _cell_text(cell: Cell | None, reasons: list[str]) -> str:
    if cell is None:
        return ""
    s = cell.summary
    if cell.valid and s is not None and cell.unit == numfmt.UNIT_BYTES and s.min == s.max:
        return numfmt.figure(s.median, cell.unit)  # a size read from a file: one exact figure
    if cell.valid and s is not None:
        return numfmt.median_range(s.median, s.min, s.max)
    reasons.append(f"[{len(reasons) + 1}] {cell.key_text}: {cell.reason}")
    return f"- [{len(reasons)}]"


def csv_table(
    results: Results, sort: str = SORT_ORDER
) -> tuple[tuple[str, ...], list[list[object]]]:
    """The CSV's header and rows: a collected runtime's, the allocator's and the opt-in
    figures' (--floor, --cache-sim, --memory) columns only where a cell has them, so
    that every other file's CSV stays as it was."""
    rows = csv_rows(results, sort)
    cells = sorted(results.cells, key=_cell_order(sort))
    header: tuple[str, ...] = CSV_HEADER
    if any(c.runtime for c in results.cells):
        columns = runtime_csv_columns([c.runtime for c in cells])
        sched = len(columns) > len(runtime_csv(None))  # the scheduler's columns too
        header, rows = (
            (*header, *columns),
            [row + runtime_csv(c.runtime, sched) for row, c in zip(rows, cells, strict=True)],
        )
    if allocations.measured(cells):  # the allocator's calls, where a profile counted them
        header = (*header, *allocations.CSV_COLUMNS)
        rows = [row + allocations.csv_values(c) for row, c in zip(rows, cells, strict=True)]
    for figure in (startup_floor, cache_sim, memory):
        if any(figure.KEY in c.extra for c in cells):
            header = (*header, figure.CSV_COLUMN)
            rows = [[*row, figure.csv_value(c)] for row, c in zip(rows, cells, strict=True)]
    return header, rows


def csv_rows(results: Results, sort: str = SORT_ORDER) -> list[list[object]]:
    rows: list[list[object]] = []
    for cell in sorted(results.cells, key=_cell_order(sort)):
        s = cell.summary
        rows.append(
            [
                cell.name,
                cell.path,
                cell.backend,
                cell.unit,
                numfmt.plain(s.median) if s else "",
                numfmt.plain(s.min) if s else "",
                numfmt.plain(s.max) if s else "",
                f"{s.spread * 100:.4f}" if s and math.isfinite(s.spread) else "",
                len(cell.values),
                cell.runs_wanted,
                "true" if cell.valid else "false",
                cell.reason or "",
            ]
        )
    return rows
