"""Changes on a diverging scale: one row per cell, a bar from 0 to the change, the
threshold as a band around 0, and the figures and the verdict as text beside it.

Used for comparisons (the change of the median in percent, coloured by verdict) and
for size diffs (the change in bytes). A comparison whose largest change is SYMLOG_FROM
times its threshold or more is drawn on a symmetric log scale, linear within the
threshold and compressed beyond (the chart says so): on a linear +-50% axis a 1% band
is a sliver of two pixels.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from icount import numfmt
from icount.charts import axis, svg
from icount.charts.figure import Figure, under
from icount.compare.drawn import CompareRow, CompareTotal, DrawnComparison, TotalSide
from icount.compare.render import shown_as
from icount.size.report import UNIT as UNIT_BYTES

# Figures and verdict first, bars last: a phone shows the words before it scrolls.
WIDTH = 780.0
LABEL_X = 8.0
BAR_X1 = 750.0


@dataclass(frozen=True)
class Columns:
    """Where the text columns end and the bars begin."""

    label_w: float
    col_right: tuple[float, float]  # right edges of the two figure columns (base, new)
    change_right: float
    verdict_x: float
    verdict_w: float
    bar_x0: float


COUNTS = Columns(160.0, (236.0, 300.0), 364.0, 374.0, 122.0, 504.0)
BYTES = Columns(150.0, (244.0, 330.0), 414.0, 424.0, 72.0, 504.0)  # "1023.99 KiB" is wide
# with a collected runtime's totals: room for "decides: regressed"
TOTALS = Columns(160.0, (236.0, 300.0), 364.0, 374.0, 146.0, 528.0)
ROW = 20.0
BAR_H = 12.0
TOP = 60.0
NOTE = 14.0  # a line under the legend saying how the axis is drawn, where it is not linear
SYMLOG_FROM = 10.0
MAX_SHIFT = 90.0  # how far the columns move right for long labels: the bars keep 156 px


def _room(rows: Sequence[DivRow], cols: Columns) -> Columns:
    """`cols` moved right as far as the labels need to be drawn whole (at most
    MAX_SHIFT), the label column as wide as the first column of figures leaves."""
    labels = [(LABEL_X, r.label, False) for r in rows if not r.indent]
    figures = [r.cols[0] for r in rows]
    shift = svg.label_room(labels, figures, cols.col_right[0], MAX_SHIFT)
    widest = max(map(svg.text_px, figures), default=0.0)
    return Columns(
        label_w=max(cols.label_w, cols.col_right[0] + shift - widest - svg.GAP - LABEL_X),
        col_right=(cols.col_right[0] + shift, cols.col_right[1] + shift),
        change_right=cols.change_right + shift,
        verdict_x=cols.verdict_x + shift,
        verdict_w=cols.verdict_w,
        bar_x0=cols.bar_x0 + shift,
    )


@dataclass(frozen=True)
class DivRow:
    label: str
    cols: tuple[str, str]  # the two figures before the bars
    value: float | None  # the change, in axis units; None draws no bar
    band: float | None  # +- this is drawn as the threshold
    cls: str  # reg, imp, same or bad
    pattern: str | None  # 'hatch' over the bar, or None
    tip: str  # the bar's title: the exact figures
    change: str
    verdict: str
    verdict_tip: str
    # a collected runtime's total, drawn under its cell: the label indented, and the 95%
    # interval of the change as a whisker around the bar's end (in axis units)
    indent: float = 0.0
    whisker: tuple[float, float] | None = None
    whisker_tip: str = ""


# Verdict -> (class, pattern). Regressions are also hatched: told apart from
# improvements without colour, as the verdict text beside them does too.
_STYLE = {
    "regressed": ("reg", "hatch"),
    "improved": ("imp", None),
    "unchanged": ("same", None),
}


def diverging_figure(
    rows: Sequence[DivRow],
    heading: str,
    col_titles: tuple[str, str],
    ticks: Callable[[axis.Scale], Callable[[float], str]],
    prefix: str,
    legend: bool,
    base: Callable[[float], float] = lambda extent: 1.0,
    cols: Columns = COUNTS,
    symmetric: bool = True,
    last_title: str = "verdict",
) -> Figure:
    """`ticks` makes the tick labeller of the scale; `base(extent)` the unit its ticks
    are round in (1024**k for bytes); `last_title` heads the last column (a size
    diff's holds the relative change, not a verdict). Long labels move the columns right
    (at most MAX_SHIFT), then are shortened in the middle, where names that share a
    start (`server/sections/.dynsym`, `.dynstr`) still differ."""
    cols = _room(rows, cols)
    scale, note = _scale(rows, base, cols, symmetric)
    top = TOP + (NOTE if note else 0.0)
    grid_bottom = top + ROW * len(rows)
    below = grid_bottom > axis.REPEAT_BELOW
    head, dy = svg.heading(LABEL_X, 15, heading, WIDTH - 2 * LABEL_X)
    height = grid_bottom + (axis.BELOW if below else 0.0) + 8 + dy
    tick = ticks(scale)
    out = []
    if legend:
        out.append(svg.legend(_legend(prefix, 33, any(r.whisker for r in rows))))
    if note:
        out.append(svg.text(LABEL_X, 33 + NOTE, svg.clip(note, WIDTH - 16), "m", tip=note))
    hy = top - 10  # column heads on the line of the tick labels (which are over the bars)
    out.append(svg.text(cols.col_right[0], hy, col_titles[0], "m b", "end"))
    out.append(svg.text(cols.col_right[1], hy, col_titles[1], "m b", "end"))
    out.append(svg.text(cols.change_right, hy, "change", "m b", "end"))
    out.append(svg.text(cols.verdict_x, hy, last_title, "m b"))
    out += axis.vertical_grid(scale, top - 6, grid_bottom, tick, WIDTH, below)
    x0 = scale(0.0)
    y = top
    cells = [r for r in rows if not r.indent]
    shown_cells = iter(svg.distinct_clips([r.label for r in cells], cols.label_w))
    for r in rows:
        mid = y + ROW / 2
        if r.indent:  # a total's row: its label is the cell's with " total"
            out.append(svg.text(LABEL_X + r.indent, mid + 4, TOTAL_LABEL, "m", tip=r.label))
        else:
            short = next(shown_cells)
            tip = r.label if short != r.label else None
            out.append(svg.text(LABEL_X, mid + 4, short, tip=tip))
        out.append(svg.text(cols.col_right[0], mid + 4, r.cols[0], anchor="end"))
        out.append(svg.text(cols.col_right[1], mid + 4, r.cols[1], anchor="end"))
        if r.band is not None:
            lo, hi = scale(-r.band), scale(r.band)
            band_tip = f"{r.label}: threshold {r.band * 100:.6g}% either way"
            out.append(svg.rect(lo, y + 1, hi - lo, ROW - 2, "band", band_tip))
            out.append(svg.line(lo, y + 1, lo, y + ROW - 1, "thr"))
            out.append(svg.line(hi, y + 1, hi, y + ROW - 1, "thr"))
        if r.value is not None:
            xv = scale(r.value)
            left, w = min(x0, xv), max(abs(xv - x0), 1.0)
            out.append(svg.rect(left, mid - BAR_H / 2, w, BAR_H, r.cls, r.tip))
            if r.pattern:
                out.append(svg.fill_overlay(prefix, r.pattern, left, mid - BAR_H / 2, w, BAR_H))
        if r.whisker is not None:
            lo, hi = r.whisker
            out.append(svg.whisker(scale(lo), scale(hi), mid, 4, r.whisker_tip))
        out.append(svg.text(cols.change_right, mid + 4, r.change, anchor="end"))
        cls = "b" if r.cls in ("reg", "imp") else "m"
        verdict = svg.clip(r.verdict, cols.verdict_w, bold=cls == "b")
        out.append(svg.text(cols.verdict_x, mid + 4, verdict, cls, tip=r.verdict_tip))
        y += ROW
    out.append(svg.line(x0, top - 2, x0, grid_bottom, "axis"))
    label = heading + (f"; {note}" if note else "")
    return Figure(under(head, dy, "".join(out)), WIDTH, height, label, prefix)


def _scale(
    rows: Sequence[DivRow], base: Callable[[float], float], cols: Columns, symmetric: bool
) -> tuple[axis.Scale, str | None]:
    """The axis, and the note saying how it is drawn where it is not linear."""
    values = [r.value for r in rows if r.value is not None]
    values += [end for r in rows if r.whisker is not None for end in r.whisker]
    bands = [r.band for r in rows if r.band is not None and r.band > 0]
    extent = max([abs(v) for v in values] + bands + [0.0])
    if symmetric and bands and extent >= SYMLOG_FROM * max(bands):
        knee = max(bands)
        scale = axis.symlog(extent, knee, cols.bar_x0, BAR_X1)
        return scale, (
            f"linear within the threshold (±{knee * 100:.6g}%), logarithmic beyond: on a "
            "linear axis the band would not show"
        )
    if symmetric:  # 0 in the middle: growth and shrinkage look alike
        limit = extent * 1.1
        return axis.symmetric(limit, cols.bar_x0, BAR_X1, 2, base(limit)), None
    # 0 where the data put it: all-growth diffs use the whole width
    lo, hi = min(0.0, *values), max(0.0, *values)
    return axis.linear(lo, hi, cols.bar_x0, BAR_X1, 3, base(extent)), None


def _legend(prefix: str, y: float, interval: bool = False) -> list[str]:
    """`interval`: a collected runtime's total is drawn, with its interval's whisker."""
    out: list[str] = []
    x = LABEL_X
    for cls, pattern, text in (
        ("reg", "hatch", "regressed"),
        ("imp", None, "improved"),
        ("same", None, "unchanged"),
        ("band", None, "within the threshold"),
    ):
        out.append(svg.rect(x, y - 9, 14, 10, cls, None))
        if pattern:
            out.append(svg.fill_overlay(prefix, pattern, x, y - 9, 14, 10))
        out.append(svg.text(x + 19, y, text, "m"))
        x += 26 + svg.text_px(text)
    if interval:
        out.append(svg.whisker(x, x + 16, y - 4, 4, TOTALS_NOTE))
        out.append(svg.text(x + 22, y, "total: its change's 95% interval", "m"))
    return out


def _median(side: object, unit: str) -> str:
    """The figure as its own command prints it: sizes in KiB as `icount size` does."""
    median = getattr(side, "median", None)
    if isinstance(median, bool) or not isinstance(median, int | float):
        return "-"
    if unit == UNIT_BYTES and float(median).is_integer() and median >= 0:
        return numfmt.human_bytes(int(median))
    return numfmt.si(median)


def _compare_row(r: CompareRow) -> DivRow:
    cls, pattern = _STYLE.get(r.verdict, ("bad", "hatch"))
    parts = [r.label]
    if r.base is not None:
        parts.append(f"base median {svg.exact(r.base.median)}")
    if r.new is not None:
        parts.append(f"new median {svg.exact(r.new.median)}")
    if r.delta is not None:
        parts.append(f"delta {'+' if r.delta > 0 else ''}{svg.exact(r.delta)} {r.unit}".rstrip())
    if r.delta_pct is not None:
        parts.append(f"change {r.delta_pct * 100:+.4f}%")
    parts.append(f"threshold {r.threshold * 100:.6g}%")
    if r.delta_pct is not None:
        change = numfmt.signed_percent(r.delta_pct)
    elif r.delta:
        change = "new from 0"
    else:
        change = ""
    shown = shown_as(r.verdict, r.why, r.delta)  # "within threshold", as compare's formats
    verdict_tip = f"{r.label}: {shown}" + (f": {r.why}" if r.why else "")
    return DivRow(
        label=r.label,
        cols=(_median(r.base, r.unit), _median(r.new, r.unit)),
        value=r.delta_pct,
        band=r.threshold,
        cls=cls,
        pattern=pattern,
        tip=", ".join(parts),
        change=change,
        verdict=shown,
        verdict_tip=verdict_tip,
    )


TOTAL_LABEL = "total"
TOTAL_INDENT = 14.0
TOTALS_NOTE = (
    "a collected runtime's cell: the bar above is its mutator's change; the total's "
    "(mutator + the runtime's own work per request) under it, with the 95% interval of "
    "the difference as a whisker"
)


def _total_text(side: TotalSide | None) -> str:
    if side is None or side.total is None:
        return "-"
    return ("" if side.valid else "~") + numfmt.si(side.total)


def _side_tip(name: str, side: TotalSide | None, unit: str) -> str | None:
    if side is None or side.total is None:
        return None
    if side.whole:
        return f"{name} {svg.exact(side.total)} {unit} (its whole count: no runtime's figures)"
    interval = f" ±{svg.exact(side.interval)}" if side.interval is not None else ""
    return f"{name} total {svg.exact(side.total)}{interval} {unit}" + (
        "" if side.valid else " (not valid)"
    )


def total_verdict(t: CompareTotal) -> str:
    """What the total's row says: its verdict, and whether it decided the cell."""
    if t.verdict is None:
        return "does not gate"
    return f"decides: {t.verdict}" if t.decides else t.verdict


def _total_row(r: CompareRow, t: CompareTotal) -> DivRow:
    cls, pattern = _STYLE.get(t.verdict or "", ("bad", "hatch"))
    label = f"{r.label} {TOTAL_LABEL}"
    tips = [label]
    tips += [tip for name, side in (("base", t.base), ("new", t.new))
             if (tip := _side_tip(name, side, r.unit))]  # fmt: skip
    if t.delta_pct is not None:
        tips.append(f"change {t.delta_pct * 100:+.4f}%")
    whisker, whisker_tip = None, ""
    pct = t.interval_pct
    if t.delta_pct is not None and pct is not None and t.interval is not None:
        whisker = (t.delta_pct - pct, t.delta_pct + pct)
        whisker_tip = (
            f"{label}: 95% interval of the difference ±{svg.exact(t.interval)} {r.unit} "
            f"(±{pct * 100:.4f}% of the base total)"
        )
        tips.append(f"95% interval ±{svg.exact(t.interval)}")
    return DivRow(
        label=label,
        cols=(_total_text(t.base), _total_text(t.new)),
        value=t.delta_pct,
        band=r.threshold,
        cls=cls,
        pattern=pattern,
        tip=", ".join(tips),
        change=numfmt.signed_percent(t.delta_pct) if t.delta_pct is not None else "",
        verdict=total_verdict(t),
        verdict_tip=f"{label}: {total_verdict(t)}: {t.rule}",
        indent=TOTAL_INDENT,
        whisker=whisker,
        whisker_tip=whisker_tip,
    )


def comparison_figure(doc: DrawnComparison, prefix: str) -> Figure:
    units = sorted({r.unit for r in doc.rows if r.unit}) or ["instructions"]
    backends = sorted({r.backend for r in doc.rows if r.backend})
    heading = f"{', '.join(units)} ({', '.join(backends)}): change of the median, base to new"
    rows: list[DivRow] = []
    for r in doc.rows:
        rows.append(_compare_row(r))
        if r.total is None:
            continue
        t = r.total
        if any(side is not None and side.whole for side in (t.base, t.new)):
            # one side's figure is its whole count, the other's a mutator: no bar for a
            # change that is not like for like (the total's row under it is; the
            # verdict's title says why)
            rows[-1] = dataclasses.replace(rows[-1], value=None)
        rows.append(_total_row(r, t))  # a collected runtime's: its total's change under it
    totals = any(r.total is not None for r in doc.rows)
    cols = BYTES if units == [UNIT_BYTES] else TOTALS if totals else COUNTS
    return diverging_figure(
        rows, heading, ("base", "new"), axis.percent_labels, prefix, legend=True, cols=cols
    )
