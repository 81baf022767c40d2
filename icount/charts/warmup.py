"""Warm-up curves: a server's per-request count against the requests it has served,
one line per fresh process, where the results file recorded them."""

from __future__ import annotations

from collections.abc import Sequence

from icount import numfmt
from icount.charts import axis, svg
from icount.charts.bars import cell_label
from icount.charts.figure import Figure, under
from icount.results import Cell
from icount.results.details import ServeDetail

Curve = list[tuple[float, float]]  # (requests served, instructions per request)

WIDTH = 360.0
HEIGHT = 214.0
X0, X1 = 58.0, 344.0
Y0, Y1 = 48.0, 174.0  # plot top and bottom
LEGEND_RUNS = 5  # runs named in the legend; more would not fit its line


def warmup_curves(cell: Cell) -> list[tuple[int, Curve]]:
    """(run number, curve) for each run that recorded one: the only reader of run
    details in the charts. The results loader gives files of every version the same
    typed `ServeDetail.warmup_curve` (requests served, per-request figure)."""
    out: list[tuple[int, Curve]] = []
    for i, run in enumerate(cell.runs, 1):
        detail = run.detail
        if isinstance(detail, ServeDetail) and detail.warmup_curve:
            out.append((i, [(float(n), float(v)) for n, v in detail.warmup_curve]))
    return out


def curve_figure(cell: Cell, curves: Sequence[tuple[int, Curve]], prefix: str) -> Figure:
    """One cell's curves on one plot. The y axis spans the data (a line is read by its
    slope, not by its length), so the subtitle says where it starts."""
    key = cell_label(cell)
    xs = [x for _, c in curves for x, _ in c]
    ys = [y for _, c in curves for _, y in c]
    # The cell's measured median, drawn across: did the warm-up reach it?
    median = cell.summary.median if cell.valid and cell.summary is not None else None
    if median is not None:
        ys.append(median)
    xscale = axis.linear(0, max(xs), X0, X1, 4)
    lo, hi = min(ys), max(ys)
    pad = max((hi - lo) * 0.08, abs(hi) * 0.002, 1e-9)
    yscale = axis.linear(lo - pad, hi + pad, Y1, Y0, 4)
    ylabel = axis.si_labels(yscale)
    head, dy = svg.heading(8, 15, key, WIDTH - 16, most=2)
    out: list[str] = []
    for t in yscale.ticks:
        y = yscale(t)
        out.append(svg.line(X0, y, X1, y, "grid"))
        out.append(svg.text(X0 - 5, y + 4, ylabel(t), "m", "end"))
    xlabel = axis.si_labels(xscale)
    for t in xscale.ticks:
        x = xscale(t)
        out.append(svg.line(x, Y1, x, Y1 + 4, "axis"))
        out.append(svg.text(x, Y1 + 16, xlabel(t), "m", "middle"))
    out.append(svg.line(X0, Y1, X1, Y1, "axis"))
    out.append(svg.text((X0 + X1) / 2, HEIGHT - 6, "requests served", "m", "middle"))
    # Runs differ by dash pattern, named in the legend, not by colour.
    dashes = ("", "6 3", "2 2", "8 2 2 2")
    lx = 8.0
    legend: list[str] = []
    for k, (run, _) in enumerate(curves):
        name = f"run {run}"
        if k == LEGEND_RUNS and len(curves) > LEGEND_RUNS + 1:
            legend.append(svg.text(lx, 32, f"and {len(curves) - k} more", "m r"))
            break
        dash = dashes[k % len(dashes)]
        style = f' stroke-dasharray="{dash}"' if dash else ""
        legend.append(
            f'<line class="line" x1="{svg.n(lx)}" y1="28" x2="{svg.n(lx + 20)}" y2="28"{style}/>'
        )
        legend.append(svg.text(lx + 24, 32, name, "m r"))
        lx += svg.text_px(name, 11) + 30
    named = ""  # drawn last, over the curves
    if median is not None:
        # Named on the line, at its left end: warm-up curves start high there.
        ym = yscale(median)
        tip = f"{key}: measured median {svg.exact(median)} per request"
        out.append(svg.line(X0, ym, X1, ym, "thr", tip))
        named = svg.text(X0 + 4, ym - 4, f"measured median {numfmt.si(median)}", "m r halo")
    out.append(svg.legend(legend))
    for k, (run, curve) in enumerate(curves):
        pts = " ".join(f"{svg.n(xscale(x))},{svg.n(yscale(y))}" for x, y in curve)
        dash = dashes[k % len(dashes)]
        style = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            f'<polyline class="line" points="{pts}"{style}>'
            f"{svg.title(f'{key} run {run}: {len(curve)} points')}</polyline>"
        )
        for x, y in curve:
            tip = f"{key} run {run}: {svg.exact(y)} per request after {svg.exact(x)} requests"
            out.append(svg.circle(xscale(x), yscale(y), 2.6, "pt", tip))
    out.append(named)
    runs = f"{len(curves)} run" + ("s" if len(curves) != 1 else "")
    label = f"{key}: warm-up curves of {runs}"
    return Figure(under(head, dy, "".join(out)), WIDTH, HEIGHT + dy, label, prefix)
