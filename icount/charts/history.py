"""A history (icount.history) on the report page: a line per cell over the commits,
the commits on the x axis, oldest left; the noise fence `compare --history` takes as a
band around the last median. Pure, as every chart: the same folder gives the same bytes.

Its own module, so the page only dispatches to it (page.py): the section's figures and
its numbers table are built here.
"""

from __future__ import annotations

from dataclasses import dataclass

from icount import numfmt
from icount.charts import axis, svg
from icount.charts.figure import Figure, inline
from icount.history.render import History, Series, medians_table

WIDTH = 720.0
HEIGHT = 220.0
X0, X1 = 76.0, 704.0
Y0, Y1 = 40.0, 164.0  # plot top and bottom
MAX_LABELS = 12  # commit labels on the axis; between them, ticks only
SHORT = 7  # a commit's characters under the axis, as git's short hashes
MAX_CELLS = 60  # lines drawn; the table below holds every cell


@dataclass(frozen=True)
class HistoryInput:
    name: str  # the history folder, as given
    history: History


def _x(i: int, count: int) -> float:
    return (X0 + X1) / 2 if count < 2 else X0 + i * (X1 - X0) / (count - 1)


def cell_figure(h: History, s: Series, prefix: str) -> Figure:
    """One cell's medians over the commits. The y axis spans the data and the noise band
    (a change is read against the band, not from zero); the subtitle says so."""
    commits = [f"{e.number:04d} {e.commit}" for e in h.entries]
    points = [(i, m) for i, m in enumerate(s.medians) if m is not None]
    ys = [m for _, m in points]
    last = ys[-1] if ys else 0.0
    fence = s.noise.fence if s.noise.fence is not None and not s.noise.exact else None
    if fence is not None:
        ys += [last * (1 - fence), last * (1 + fence)]
    lo, hi = (min(ys), max(ys)) if ys else (0.0, 1.0)
    pad = max((hi - lo) * 0.08, abs(hi) * 0.0005, 0.5)
    yscale = axis.linear(lo - pad, hi + pad, Y1, Y0, 4)
    ylabel = axis.si_labels(yscale)
    out = [svg.text(8, 15, svg.clip(s.label, WIDTH - 16, 13), "t", tip=s.label)]
    if s.noise.exact:
        sub = "repeats to the instruction: compare --history gates it exactly"
    elif fence is not None:
        sub = f"band: the last median ± its noise, {numfmt.percent(fence, 3)} (Q3 + 3 x IQR)"
    else:
        sub = "too few commits for a noise estimate"
    out.append(svg.text(8, 31, f"{s.unit}; y axis spans the data; {sub}", "m r"))
    if fence is not None and ys:
        top, bottom = yscale(last * (1 + fence)), yscale(last * (1 - fence))
        tip = f"{s.label}: noise ±{numfmt.percent(fence, 3)} around {svg.exact(last)}"
        out.append(svg.rect(X0, top, X1 - X0, bottom - top, "band", tip))
    for t in yscale.ticks:
        y = yscale(t)
        out.append(svg.line(X0, y, X1, y, "grid"))
        out.append(svg.text(X0 - 5, y + 4, ylabel(t), "m", "end"))
    out.append(svg.line(X0, Y1, X1, Y1, "axis"))
    step = max(1, -(-len(commits) // MAX_LABELS))
    for i, c in enumerate(commits):
        x = _x(i, len(commits))
        out.append(svg.line(x, Y1, x, Y1 + 4, "axis"))
        if i % step == 0 or i == len(commits) - 1:
            short = h.entries[i].commit[:SHORT]
            out.append(svg.text(x, Y1 + 16, short, "m r", "middle", tip=c))
    out.append(svg.text((X0 + X1) / 2, HEIGHT - 8, "commits, oldest first", "m", "middle"))
    if len(points) > 1:
        pts = " ".join(f"{svg.n(_x(i, len(commits)))},{svg.n(yscale(m))}" for i, m in points)
        out.append(
            f'<polyline class="line" points="{pts}">'
            f"{svg.title(f'{s.label}: {len(points)} commits')}</polyline>"
        )
    for i, m in points:
        tip = f"{s.label} at {commits[i]}: median {svg.exact(m)} {s.unit}"
        out.append(svg.circle(_x(i, len(commits)), yscale(m), 3.0, "pt", tip))
    label = f"{s.label}: median over {numfmt.plural(len(points), 'commit')}"
    return Figure("".join(out), WIDTH, HEIGHT, label, prefix)


def _numbers(h: History) -> str:
    """Every commit's medians as a table, as `icount history show` prints them."""
    t = medians_table(h)
    head = "".join(f"<th>{svg.esc(c.title)}</th>" for c in t.columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{svg.esc(v)}</td>" for v in row) + "</tr>" for row in t.rows
    )
    return f'<div class="scroll"><table><tr>{head}</tr>{rows}</table></div>'


def history_section(item: HistoryInput, sid: str) -> str:
    h = item.history
    shown = h.series[:MAX_CELLS]
    out = [
        f'<h2 id="{sid}">History: {svg.esc(item.name)}</h2>',
        f"<p>{numfmt.plural(len(h.entries), 'commit')}, "
        f"{numfmt.plural(len(h.series), 'cell')}: each cell's median at each commit.</p>",
    ]
    if len(h.series) > len(shown):
        out.append(f"<p>The first {len(shown)} cells are drawn; the table holds all.</p>")
    for k, s in enumerate(shown):
        out.append(f'<div class="chart">{inline(cell_figure(h, s, f"{sid}-{k}-"))}</div>')
    out.append(f"<details><summary>Numbers</summary>{_numbers(h)}</details>")
    return "".join(out)
