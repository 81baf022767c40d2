"""A collected runtime's cells as stacked bars: the mutator (the cell's figure), then the
collector and the background compiler per request, with the total's 95% interval as a
whisker at the bar's end; a total not valid (its interval wider than the spread limit)
is marked `~` and its runtime work hatched.

Go's scheduler (its wait for the next request) is a part of the stack where it is part
of the total (idle arrival: every request finds the server parked, results/runtime.py);
measured with the closed loop it moves with the client's timing and the machine's load,
so a bar of it would read as cost the request has: the total's tooltip gives it, beside.

Only cells with a runtime's figures (results/runtime.py) are drawn, so a page of other
cells is what it always was. One axis, linear from 0: the three parts are shares of one
total, which a log axis would misstate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from icount import numfmt
from icount.charts import axis, svg
from icount.charts.figure import Figure, under
from icount.results import Cell
from icount.results.runtime import RuntimeFigures

WIDTH = 760.0
LABEL_X = 8.0
TOTAL_RIGHT = 258.0
HALF_RIGHT = 318.0
BAR_X0 = 334.0
BAR_X1 = 744.0
ROW = 20.0
BAR_H = 12.0
TOP = 62.0
PARTS = (("mutator", "bar"), ("collector", "c1"), ("compiler", "c2"), ("scheduler", "c3"))
MAX_SHIFT = 120.0  # how far the figures and bars move right for long labels


def _key(c: Cell) -> str:
    return "/".join(p for p in c.key if p)


def _reach(f: RuntimeFigures) -> float:
    """How far right the row's marks go: the total and its interval, where the
    interval is not wider than the total itself (that one is clamped at the edge)."""
    total = f.total or 0.0
    if math.isfinite(f.half_width) and f.half_width <= total:
        return total + f.half_width
    return total


def _legend(prefix: str, y: float, compiler: bool, tilde: bool, scheduler: bool) -> list[str]:
    out: list[str] = []
    x = LABEL_X
    for name, cls in PARTS:
        if (name == "compiler" and not compiler) or (name == "scheduler" and not scheduler):
            continue
        out += [svg.rect(x, y - 9, 14, 10, cls, None), svg.text(x + 19, y, name, "m")]
        x += 19 + svg.text_px(name) + 18
    out += [
        svg.line(x, y - 4, x + 16, y - 4, "wh"),
        svg.line(x, y - 8, x, y, "wh"),
        svg.line(x + 16, y - 8, x + 16, y, "wh"),
    ]
    text = "total's 95% interval"
    out.append(svg.text(x + 22, y, text, "m"))
    x += 22 + svg.text_px(text) + 18
    if tilde:
        out += [
            svg.rect(x, y - 9, 14, 10, "c1", None),
            svg.fill_overlay(prefix, "hatch", x, y - 9, 14, 10),
            svg.text(x + 19, y, "~ total not valid (interval too wide)", "m"),
        ]
    return out


def _shown(c: Cell, backend: bool) -> str:
    """A row's label: the backend only where cells of several are drawn (the title
    names a single one)."""
    return _key(c) if backend else "/".join(p for p in (c.name, c.path) if p)


def _row(
    c: Cell,
    f: RuntimeFigures,
    scale: axis.Scale,
    y: float,
    prefix: str,
    backend: bool,
    shift: float,
    room: float,
) -> list[str]:
    key = _key(c)
    mid = y + ROW / 2
    out = [svg.label(LABEL_X, mid + 4, _shown(c, backend), room, middle=True)]
    if f.total is None or f.mutator is None:  # the mutator is not valid: nothing adds up
        why = f"{key}: no total ({f.reason})"
        out.append(svg.text(TOTAL_RIGHT + shift, mid + 4, "-", "m", "end", tip=why))
        return out
    x = scale(0.0)
    windows = numfmt.plural(f.windows, "window")
    tips = {
        "mutator": f"{key}: mutator {svg.exact(f.mutator)} {c.unit} (the cell's median)",
        "collector": f"{key}: collector {svg.exact(f.collector)} {c.unit} (mean of {windows})",
        "compiler": f"{key}: compiler {svg.exact(f.compiler)} {c.unit} (mean of {windows})",
        "scheduler": f"{key}: scheduler {svg.exact(f.scheduler or 0.0)} {c.unit} (mean of "
        f"{windows}; each request found the server parked: idle arrival)",
    }
    inside = f.scheduler if f.scheduler_in_total and f.scheduler is not None else 0.0
    values = {"mutator": f.mutator, "collector": f.collector, "compiler": f.compiler,
              "scheduler": inside}  # fmt: skip
    for name, cls in PARTS:
        if values[name] <= 0:
            continue
        right = scale(_sum_to(values, name))
        width = max(right - x, 1.0)
        out.append(svg.rect(x, mid - BAR_H / 2, width, BAR_H, f"{cls} seg", tips[name]))
        if name != "mutator" and not f.total_valid:
            out.append(svg.fill_overlay(prefix, "hatch", x, mid - BAR_H / 2, width, BAR_H))
        x = right
    mark = "" if f.total_valid else "~"
    total_tip = f"{key}: total {svg.exact(f.total)} {c.unit}"
    finite = math.isfinite(f.half_width)
    if finite:
        total_tip += f" ±{svg.exact(f.half_width)} (95%, {windows})"
    else:
        total_tip += f" ({windows}: no interval)"
    if not f.total_valid:
        total_tip += f"; not valid: {f.reason}"
    if f.scheduler is not None and not f.scheduler_in_total:
        total_tip += (f"; beside it, in neither the bar nor the total, the scheduler "
                      f"{svg.exact(f.scheduler)} {c.unit} (the client's timing and the "
                      "machine's load move it)")  # fmt: skip
    if finite:
        lo, hi = scale(f.total - f.half_width), scale(f.total + f.half_width)
        out.append(svg.whisker(lo, hi, mid, 4, total_tip))
    half = f"±{numfmt.si(f.half_width)}" if finite else "no interval"
    out.append(
        svg.text(TOTAL_RIGHT + shift, mid + 4, f"{mark}{numfmt.si(f.total)}", "", "end", total_tip)
    )
    out.append(svg.text(HALF_RIGHT + shift, mid + 4, half, "m", "end"))
    return out


def _sum_to(values: dict[str, float], name: str) -> float:
    """The stack's height at the end of part `name`."""
    names = [n for n, _ in PARTS]
    return sum(values[n] for n in names[: names.index(name) + 1])


def runtime_figure(cells: Sequence[Cell], prefix: str) -> Figure | None:
    """The cells with a runtime's figures, in the order given; None where none has."""
    rows = [(c, c.runtime) for c in cells if c.runtime is not None]
    if not rows:
        return None
    figs = [f for _, f in rows]
    reach = [_reach(f) for f in figs]
    backend = len({c.backend for c, _ in rows}) > 1
    totals = [("" if f.total_valid else "~") + numfmt.si(f.total) for f in figs if f.total]
    labels = [(LABEL_X, _shown(c, backend), False) for c, _ in rows]
    shift = svg.label_room(labels, totals, TOTAL_RIGHT, MAX_SHIFT)
    room = TOTAL_RIGHT + shift - max(map(svg.text_px, totals), default=0.0) - svg.GAP - LABEL_X
    scale = axis.linear(0.0, max(reach), BAR_X0 + shift, BAR_X1)
    runtimes = sorted({f.runtime for f in figs})
    units = sorted({c.unit for c, _ in rows})
    what = "instructions per request" if units == ["instructions/request"] else ", ".join(units)
    backends = sorted({c.backend for c, _ in rows})
    heading = (
        f"{what} ({', '.join(backends)}): mutator + the runtime's own work ({', '.join(runtimes)})"
    )
    compiler = any(f.compiler > 0 for f in figs)
    tilde = any(f.total is not None and not f.total_valid for f in figs)
    scheduler = any(f.scheduler_in_total and f.scheduler for f in figs)
    grid_bottom = TOP + ROW * len(rows)
    below = grid_bottom > axis.REPEAT_BELOW
    head, dy = svg.heading(LABEL_X, 15, heading, WIDTH - 2 * LABEL_X)
    out = [svg.legend(_legend(prefix, 34, compiler, tilde, scheduler))]
    out.append(svg.text(TOTAL_RIGHT + shift, TOP - 10, "total", "m b", "end"))
    out.append(svg.text(HALF_RIGHT + shift, TOP - 10, "95%", "m b", "end"))
    out += axis.vertical_grid(scale, TOP - 6, grid_bottom, axis.si_labels(scale), WIDTH, below)
    for i, (c, f) in enumerate(rows):
        out += _row(c, f, scale, TOP + i * ROW, prefix, backend, shift, room)
    height = grid_bottom + (axis.BELOW if below else 0.0) + 8 + dy
    valid = sum(1 for f in figs if f.total_valid)
    label = (
        f"{heading}: {numfmt.plural(len(rows), 'cell')}, {valid} with a valid total; "
        "mutator, collector and compiler stacked, the total's 95% interval"
    )
    return Figure(under(head, dy, "".join(out)), WIDTH, height, label, prefix)
