"""Results as horizontal bars: each cell's median, a min-max whisker and every run as
a dot; invalid cells hatched grey with their reason; binary sizes as bars of their own.

Rows follow the tables' order (the order cells were asked for); one chart per unit, so
a bar's length is only ever compared with bars of the same unit. The axis spans the
valid cells only: an invalid cell's figures do not hold, and one 171.5M cell of a
failed run left every valid bar a few pixels wide. Where the targets' medians differ by
SPLIT_FROM times, targets of like size share an axis and each group has its
own, every one linear from 0 (and the chart says so): on one log axis 882 drew as a
third of 515k, where a bar's length is read as its size. A collected runtime's cells
have a chart of their own after these (charts/runtime.py): mutator, collector and
compiler stacked, with the total's interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from icount import numfmt
from icount.charts import axis, svg
from icount.charts.figure import Figure, under
from icount.charts.runtime import runtime_figure
from icount.results import UNIT_PER_REQUEST, Cell, Results
from icount.results.model import sort_key
from icount.results_table import SORT_NAME, SORT_ORDER, row_names

WIDTH = 760.0
LABEL_X = 8.0
MEDIAN_RIGHT = 258.0  # figures first, so that a phone shows them before it scrolls
SPREAD_RIGHT = 318.0
BAR_X0 = 334.0
BAR_X1 = 744.0
ROW = 20.0
REASON = 14.0  # the second line of an invalid cell: its reason
BAR_H = 12.0
TOP = 62.0  # title, legend and tick labels above the first row
NOTE = 14.0  # a line under the legend saying how the axis is drawn, where it is not plain
# medians this many times apart get axes of their own: below it the smallest bar is still
# 8 px of the axis's 410
SPLIT_FROM = 50.0
# how far the figures and bars move right for long labels: the bars keep 290 px
MAX_SHIFT = 120.0
GAP = svg.GAP


@dataclass(frozen=True)
class Columns:
    """Where the figures' columns end and the bars begin, moved right by `shift` where
    the labels need the room."""

    shift: float = 0.0

    @property
    def median_right(self) -> float:
        return MEDIAN_RIGHT + self.shift

    @property
    def spread_right(self) -> float:
        return SPREAD_RIGHT + self.shift

    @property
    def bar_x0(self) -> float:
        return BAR_X0 + self.shift


@dataclass(frozen=True)
class _Row:
    label: str
    indent: bool
    cell: Cell | None  # None: a name heading over its paths

    @property
    def height(self) -> float:
        return ROW + (REASON if self.cell is not None and not self.cell.valid else 0.0)


def in_order(cells: Sequence[Cell], sort: str = SORT_ORDER) -> list[Cell]:
    """The order of the tables (`--sort`): names as results_table.row_names gives them, and
    a name's cells as asked for (SORT_ORDER) or by path and backend (SORT_NAME).
    (Charts read cells only through the fields results files promise to keep: name,
    path, backend, unit, order, valid, reason, summary, values, runs, params, extra.)"""
    rank = {name: k for k, name in enumerate(row_names(cells, sort))}
    within = (lambda c: c.key) if sort == SORT_NAME else sort_key
    return sorted(cells, key=lambda c: (rank[c.name], within(c)))


def cell_label(c: Cell) -> str:
    """'nginx/json/callgrind': how titles name a cell."""
    return "/".join(p for p in c.key if p)


def unit_title(unit: str, backends: Sequence[str]) -> str:
    what = "instructions per request" if unit == UNIT_PER_REQUEST else unit
    return f"{what} ({', '.join(sorted(set(backends)))})"


def _rows(cells: Sequence[Cell], names: Sequence[str]) -> list[_Row]:
    """Rows of `names`' cells (`cells` come in_order): the labels are those of the whole
    chart's rows, whichever axis a name is drawn on."""
    multi_backend = len({c.backend for c in cells}) > 1
    flat = all(not c.path for c in cells) and len({c.name for c in cells}) == len(cells)
    rows: list[_Row] = []
    for name in names:
        own = [c for c in cells if c.name == name]
        if flat:
            c = own[0]
            rows.append(_Row(f"{name} [{c.backend}]" if multi_backend else name, False, c))
            continue
        rows.append(_Row(name, False, None))
        for c in own:
            label = c.path or "(command)"
            rows.append(_Row(f"{label} [{c.backend}]" if multi_backend else label, True, c))
    return rows


def _shown(rows: Sequence[_Row], right: float) -> dict[int, str]:
    """Each cell row's label (by the row's id) shortened to end before `right`, told
    apart from the others at its indent where they would read alike (a path's end and
    its backend are kept: svg.distinct_clips)."""
    out: dict[int, str] = {}
    for indent in (False, True):
        own = [r for r in rows if r.cell is not None and r.indent == indent]
        room = right - LABEL_X - (12 if indent else 0)
        for r, short in zip(own, svg.distinct_clips([r.label for r in own], room), strict=True):
            out[id(r)] = short
    return out


def _scale(cells: Sequence[Cell], cols: Columns) -> tuple[axis.Scale, str | None]:
    """The linear axis of the valid cells' runs, and the note saying how it is drawn
    (None for a plain axis of valid cells)."""
    values = [v for c in cells if c.valid for v in c.values]
    note = None
    if not values:  # nothing valid: the invalid cells' own figures give the axis
        values = [v for c in cells for v in c.values]
        note = "no cell is valid: the axis spans the invalid cells' runs"
    lo, hi = (min(0.0, *values), max(0.0, *values)) if values else (0.0, 1.0)
    scale = axis.linear(lo, hi, cols.bar_x0, BAR_X1)
    if note is None and any(scale.beyond(v) for c in cells if not c.valid for v in c.values):
        note = "the axis spans the valid cells; a hatched bar at its end is beyond it"
    return scale, note


def _axes(cells: Sequence[Cell]) -> list[list[str]]:
    """The names drawn on each axis: one axis unless the names' largest valid medians
    differ by SPLIT_FROM times or more (axis.magnitude_groups), rows in order within
    each. A name with no valid cell sets no axis: it is drawn on its row neighbour's."""
    names = list(dict.fromkeys(c.name for c in cells))
    medians = {
        n: [c.summary.median for c in cells if c.name == n and c.valid and c.summary is not None]
        for n in names
    }
    sized = [n for n in names if medians[n]]
    if not sized:
        return [names]
    sizes = [max(medians[n]) for n in sized]
    groups = [[sized[i] for i in g] for g in axis.magnitude_groups(sizes, SPLIT_FROM)]
    home = {n: k for k, g in enumerate(groups) for n in g}
    last = home[sized[0]]
    for n in names:
        last = home.setdefault(n, last)
    return [[n for n in names if home[n] == k] for k in range(len(groups))]


def _legend(prefix: str, y: float, invalid: bool) -> list[str]:
    def key(x: float, text: str) -> tuple[str, float]:
        return svg.text(x, y, text, "m"), x + svg.text_px(text) + 18

    x = LABEL_X
    out = [svg.rect(x, y - 9, 14, 10, "bar", None)]
    label, x = key(x + 19, "median")
    out += [
        label,
        svg.line(x, y - 4, x + 16, y - 4, "wh"),
        svg.line(x, y - 8, x, y, "wh"),
        svg.line(x + 16, y - 8, x + 16, y, "wh"),
    ]
    label, x = key(x + 22, "min to max")
    out += [label, f'<circle class="dot" cx="{svg.n(x + 4)}" cy="{svg.n(y - 4)}" r="3"/>']
    label, x = key(x + 12, "each run (a fresh process)")
    out.append(label)
    if invalid:
        out += [
            svg.rect(x, y - 9, 14, 10, "bad", None),
            svg.fill_overlay(prefix, "hatch", x, y - 9, 14, 10),
            svg.text(x + 19, y, "not valid (reason below)", "m"),
        ]
    return out


def _runs_text(cell: Cell) -> str:
    return f"{len(cell.values)} valid of {numfmt.plural(len(cell.runs), 'run')}"


def _cell_marks(cell: Cell, scale: axis.Scale, y: float, prefix: str, cols: Columns) -> list[str]:
    s = cell.summary
    key = cell_label(cell)
    mid = y + ROW / 2
    out: list[str] = []
    if not cell.valid:
        reason = f"not valid: {cell.reason}"
        out.append(
            svg.text(
                LABEL_X + 12,
                y + ROW + 9,
                svg.clip(reason, WIDTH - LABEL_X - 16, 11),
                "m r",
                tip=f"{key}: {reason}",
            )
        )
    if s is None:  # nothing measured: a hatched stub, and the reason under it
        out.append(
            svg.rect(
                cols.bar_x0, mid - BAR_H / 2, 10, BAR_H, "bad", f"{key}: not valid: {cell.reason}"
            )
        )
        out.append(svg.fill_overlay(prefix, "hatch", cols.bar_x0, mid - BAR_H / 2, 10, BAR_H))
        out.append(svg.text(cols.median_right, mid + 4, "-", "m", "end"))
        return out
    x0 = scale(0.0)
    xm = scale(s.median)
    spread = numfmt.percent(s.spread, 3)
    tip = (
        f"{key}: median {svg.exact(s.median)} {cell.unit} over {_runs_text(cell)} "
        f"(min {svg.exact(s.min)}, max {svg.exact(s.max)}, spread {spread})"
    )
    if not cell.valid:
        tip += f"; not valid: {cell.reason}"
        if any(scale.beyond(v) for v in cell.values):
            tip += " (beyond the axis, which spans the valid cells)"
    left, width = min(x0, xm), max(abs(xm - x0), 1.0)
    out.append(svg.rect(left, mid - BAR_H / 2, width, BAR_H, "bar" if cell.valid else "bad", tip))
    if not cell.valid:
        out.append(svg.fill_overlay(prefix, "hatch", left, mid - BAR_H / 2, width, BAR_H))
    lo, hi = scale(s.min), scale(s.max)
    whisker = f"{key}: min {svg.exact(s.min)}, max {svg.exact(s.max)} ({spread} of the median)"
    out.append(svg.whisker(lo, hi, mid, 4, whisker))
    # Runs are spread over the bar's height, so equal values still show as separate dots.
    runs = [(i, r.value) for i, r in enumerate(cell.runs, 1) if r.valid and r.value is not None]
    for k, (i, value) in enumerate(runs):
        dy = 0.0 if len(runs) == 1 else (k / (len(runs) - 1) - 0.5) * (BAR_H - 4)
        run_tip = f"{key} run {i}: {svg.exact(value)}"
        out.append(svg.circle(scale(value), mid + dy, 2.4, "dot", run_tip))
    if cell.valid:  # an invalid cell's figures are not printed as if they held
        out.append(svg.text(cols.median_right, mid + 4, numfmt.si(s.median), "", "end"))
        out.append(svg.text(cols.spread_right, mid + 4, numfmt.percent(s.spread), "m", "end"))
    else:
        out.append(svg.text(cols.median_right, mid + 4, "-", "m", "end"))
    return out


def counts_figure(cells: Sequence[Cell], prefix: str) -> Figure:
    """One unit's cells as bars: on one linear axis, or on one per group of names of
    like size (each from 0). Labels too long for their column move the figures and
    the bars right (at most MAX_SHIFT) before they are shortened."""
    unit = cells[0].unit
    heading = unit_title(unit, [c.backend for c in cells])
    groups = _axes(cells)
    row_lists = [_rows(cells, names) for names in groups]
    every = [r for rows in row_lists for r in rows]
    medians = [numfmt.si(c.summary.median) for c in cells if c.valid and c.summary is not None]
    labels = [(LABEL_X + (12 if r.indent else 0), r.label, False) for r in every if r.cell]
    cols = Columns(svg.label_room(labels, medians, MEDIAN_RIGHT, MAX_SHIFT))
    drawn = [
        (rows, *_scale([c for c in cells if c.name in names], cols))
        for names, rows in zip(groups, row_lists, strict=True)
    ]
    notes = [n for _, _, n in drawn if n is not None]
    split = f"{len(groups)} axes, each from 0: targets within {SPLIT_FROM:.0f}x share one"
    note = "; ".join([split] * (len(groups) > 1) + list(dict.fromkeys(notes)))
    top = TOP + (NOTE if note else 0.0)
    head, dy = svg.heading(LABEL_X, 15, heading, WIDTH - 2 * LABEL_X)
    out = [svg.legend(_legend(prefix, 34, any(not c.valid for c in cells)))]
    if note:
        out.append(svg.text(LABEL_X, 34 + NOTE, svg.clip(note, WIDTH - 16), "m", tip=note))
    out.append(svg.text(cols.median_right, top - 10, "median", "m b", "end"))
    out.append(svg.text(cols.spread_right, top - 10, "spread", "m b", "end"))
    widest = max((svg.text_px(m) for m in medians), default=0.0)
    shown = _shown(every, cols.median_right - widest - GAP)
    y = top
    for k, (rows, scale, _) in enumerate(drawn):
        y += axis.GROUP_GAP if k else 0.0
        bottom = y + sum(r.height for r in rows)
        below = top + sum(r.height for r in rows) > axis.REPEAT_BELOW
        out += axis.vertical_grid(scale, y - 6, bottom, axis.si_labels(scale), WIDTH, below)
        for r in rows:
            mid = y + ROW / 2
            x = LABEL_X + (12 if r.indent else 0)
            if r.cell is None:  # a name over its paths has no figures beside it
                out.append(svg.label(x, mid + 4, r.label, cols.bar_x0 - 4 - GAP - x, "b"))
            else:
                short = shown[id(r)]
                tip = r.label if short != r.label else None
                out.append(svg.text(x, mid + 4, short, tip=tip))
            if r.cell is not None:
                out += _cell_marks(r.cell, scale, y, prefix, cols)
            y += r.height
        if below:  # and room between them and the next group's own labels
            y += axis.BELOW + (axis.BELOW_GAP if k + 1 < len(drawn) else 0.0)
    height = y + 8 + dy
    valid = sum(1 for c in cells if c.valid)
    cells_text = numfmt.plural(len(cells), "cell")
    label = f"{heading}: {cells_text}, {valid} valid; median, min to max and each run"
    if note:
        label += f"; {note}"
    return Figure(under(head, dy, "".join(out)), WIDTH, height, label, prefix)


def results_figures(results: Results, prefix: str, sort: str = SORT_ORDER) -> list[Figure]:
    """A bar chart per unit, then the binary sizes when the cells recorded them; rows
    in the order of the tables for `sort`."""
    cells = in_order(results.cells, sort)
    figs = [
        counts_figure([c for c in cells if c.unit == unit], f"{prefix}u{i}")
        for i, unit in enumerate(sorted({c.unit for c in cells}))
    ]
    stacked = runtime_figure(cells, f"{prefix}r")  # only where a cell has a runtime's figures
    if stacked is not None:
        figs.append(stacked)
    sizes = recorded_binary_sizes(cells)
    if sizes:
        figs.append(binary_size_figure(sizes, f"{prefix}b"))
    return figs


@dataclass(frozen=True)
class BinarySize:
    name: str
    binary: str
    file_bytes: int
    text_bytes: int | None


def recorded_binary_sizes(cells: Sequence[Cell]) -> list[BinarySize]:
    """The binary size `icount serve` recorded per target (its first cell's, of
    `cells` in_order)."""
    out: dict[str, BinarySize] = {}
    for c in cells:
        if c.name in out or not isinstance(c.extra.get("binary_bytes"), int):
            continue
        text = c.extra.get("binary_text_bytes")
        out[c.name] = BinarySize(
            c.name,
            str(c.extra.get("binary", "")),
            int(c.extra["binary_bytes"]),
            text if isinstance(text, int) else None,
        )
    return list(out.values())  # in the order of the rows above


FILE_RIGHT, TEXT_RIGHT = 238.0, 318.0  # "765.09 KiB" needs more room than a count


def binary_size_figure(sizes: Sequence[BinarySize], prefix: str) -> Figure:
    """Each target's binary, whole file and text inside it; binaries of very different
    sizes in groups of like size, each on its own axis (axis.magnitude_groups)."""
    groups = axis.magnitude_groups([float(s.file_bytes) for s in sizes])
    note = axis.groups_note(groups, "binaries")
    top = TOP + (NOTE if note else 0.0)
    out = [svg.text(LABEL_X, 15, "binary size: each target's binary, in bytes of the file", "t")]
    key = [
        svg.rect(LABEL_X, 25, 14, 10, "bar2", None),
        svg.text(LABEL_X + 19, 34, "whole file", "m"),
        svg.rect(LABEL_X + 96, 27, 14, 6, "bar", None),
        svg.text(LABEL_X + 115, 34, "of which text (code)", "m"),
    ]
    out.append(svg.legend(key))
    if note:
        out.append(svg.text(LABEL_X, 34 + NOTE, svg.clip(note, WIDTH - 16), "m", tip=note))
    out.append(svg.text(FILE_RIGHT, top - 10, "file", "m b", "end"))
    # the names reach the widest figure of the file column
    room = FILE_RIGHT - max(svg.text_px(numfmt.human_bytes(s.file_bytes)) for s in sizes)
    room -= GAP + LABEL_X
    out.append(svg.text(TEXT_RIGHT, top - 10, "text", "m b", "end"))
    y = top
    for k, group in enumerate(groups):
        y += axis.GROUP_GAP if k else 0.0
        scale = axis.bytes_scale(max(sizes[i].file_bytes for i in group), BAR_X0, BAR_X1)
        bottom = y + ROW * len(group)
        below = top + ROW * len(group) > axis.REPEAT_BELOW
        tick = axis.bytes_labels(scale)
        out += axis.vertical_grid(scale, y - 6, bottom, tick, WIDTH, below)
        for i in group:
            out += _binary_size_row(sizes[i], scale, y + ROW / 2, room)
            y += ROW
        if below:  # and room between them and the next group's own labels
            y += axis.BELOW + (axis.BELOW_GAP if k + 1 < len(groups) else 0.0)
    height = y + 8
    label = f"binary size of {numfmt.plural(len(sizes), 'target')}, whole file and text"
    return Figure("".join(out), WIDTH, height, label + (f"; {note}" if note else ""), prefix)


def _binary_size_row(s: BinarySize, scale: axis.Scale, mid: float, room: float) -> list[str]:
    out = [svg.label(LABEL_X, mid + 4, s.name, room, middle=True)]
    of = f" ({s.binary})" if s.binary else ""
    tip = f"{s.name}{of}: {svg.exact(s.file_bytes)} bytes"
    w = max(scale(s.file_bytes) - BAR_X0, 1.0)
    out.append(svg.rect(BAR_X0, mid - BAR_H / 2, w, BAR_H, "bar2", tip))
    out.append(svg.text(FILE_RIGHT, mid + 4, numfmt.human_bytes(s.file_bytes), "", "end"))
    if s.text_bytes is not None:
        text_tip = f"{s.name}: text {svg.exact(s.text_bytes)} bytes"
        w = max(scale(s.text_bytes) - BAR_X0, 1.0)
        out.append(svg.rect(BAR_X0, mid - 3, w, 6, "bar", text_tip))
        text = numfmt.human_bytes(s.text_bytes)
        out.append(svg.text(TEXT_RIGHT, mid + 4, text, "m", "end"))
    return out
