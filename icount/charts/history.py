"""A history (icount.history) on the report page: a line per cell over the commits,
the commits on the x axis, oldest left; the noise fence `compare --history` takes as a
band around the last median. Pure, as every chart: the same folder gives the same bytes.

Its own module, so the page only dispatches to it (page.py): the section's figures and
its numbers table are built here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from icount import numfmt
from icount.charts import axis, svg
from icount.charts.figure import Figure, inline
from icount.history.render import History, Series, medians_table
from icount.results import Results

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
    # the results files on the same page (a pull request's), each drawn after the
    # commits where it has a valid cell of the line's key: where it falls on the band
    candidates: tuple[tuple[str, Results], ...] = ()


def _x(i: int, count: int) -> float:
    return (X0 + X1) / 2 if count < 2 else X0 + i * (X1 - X0) / (count - 1)


def _candidates(s: Series, given: Sequence[tuple[str, Results]]) -> list[tuple[str, float]]:
    """(file name, median) of each given results file with a valid cell of `s`'s key."""
    out = []
    for name, res in given:
        cell = next((c for c in res.cells if c.key == s.key), None)
        if cell is not None and cell.valid and cell.summary is not None:
            out.append((name, cell.summary.median))
    return out


def _placed(m: float, last: float | None, s: Series, fence: float | None) -> tuple[str, str]:
    """Where a candidate's median falls against the last commit's: (mark class, words)."""
    if last is None or last == 0:
        return "same", "no earlier median to compare with"
    change = (m - last) / last
    moved = f"{numfmt.signed_percent(change, 3)} from the last median"
    if s.noise.exact:  # a change of a few instructions is the whole story: say it exactly
        if m == last:
            return "same", "equal to the last median, to the instruction"
        return ("reg" if m > last else "imp"), (
            f"{m - last:+,.10g} from the last median; this cell repeats to the instruction"
        )
    if fence is None:
        return "same", f"{moved} (no noise band yet)"
    if abs(change) <= fence:
        return "same", f"{moved}, inside the noise band"
    return ("reg" if change > 0 else "imp"), f"{moved}, outside the noise band"


def cell_figure(
    h: History, s: Series, prefix: str, given: Sequence[tuple[str, Results]] = ()
) -> Figure:
    """One cell's medians over the commits, then each given results file's (a pull
    request's) as a diamond after them, coloured by where it falls against the band.
    The y axis spans the data and the noise band (a change is read against the band,
    not from zero); the subtitle says so."""
    extra = _candidates(s, given)
    shift = 14.0 if extra else 0.0  # a line under the subtitle: where each file falls
    y0, y1, height = Y0 + shift, Y1 + shift, HEIGHT + shift
    commits = [f"{e.number:04d} {e.commit}" for e in h.entries]
    slots = len(commits) + len(extra)
    points = [(i, m) for i, m in enumerate(s.medians) if m is not None]
    ys = [m for _, m in points] + [m for _, m in extra]
    last = points[-1][1] if points else None
    fence = s.noise.fence if s.noise.fence is not None and not s.noise.exact else None
    if fence is not None and last is not None:
        ys += [last * (1 - fence), last * (1 + fence)]
    lo, hi = (min(ys), max(ys)) if ys else (0.0, 1.0)
    pad = max((hi - lo) * 0.08, abs(hi) * 0.0005, 0.5)
    yscale = axis.linear(lo - pad, hi + pad, y1, y0, 4)
    ylabel = axis.si_labels(yscale)
    out = [svg.text(8, 15, svg.clip(s.label, WIDTH - 16, 13, bold=True), "t", tip=s.label)]
    if s.noise.exact:
        sub = "repeats to the instruction: compare --history gates it exactly"
    elif fence is not None:
        sub = f"band: the last median ± its noise, {numfmt.percent(fence, 3)} (Q3 + 3 x IQR)"
    else:
        sub = "too few commits for a noise estimate"
    out.append(svg.text(8, 31, f"{s.unit}; y axis spans the data; {sub}", "m r"))
    if fence is not None and last is not None:
        top, bottom = yscale(last * (1 + fence)), yscale(last * (1 - fence))
        tip = f"{s.label}: noise ±{numfmt.percent(fence, 3)} around {svg.exact(last)}"
        out.append(svg.rect(X0, top, X1 - X0, bottom - top, "band", tip))
    for t in yscale.ticks:
        y = yscale(t)
        out.append(svg.line(X0, y, X1, y, "grid"))
        out.append(svg.text(X0 - 5, y + 4, ylabel(t), "m", "end"))
    out.append(svg.line(X0, y1, X1, y1, "axis"))
    step = max(1, -(-len(commits) // MAX_LABELS))
    for i, c in enumerate(commits):
        x = _x(i, slots)
        out.append(svg.line(x, y1, x, y1 + 4, "axis"))
        if i % step == 0 or i == len(commits) - 1:
            short = h.entries[i].commit[:SHORT]
            edge = x + svg.text_px(short, 11) / 2 > WIDTH - 4  # the last one ends at its tick
            out.append(svg.text(x, y1 + 16, short, "m r", "end" if edge else "middle", tip=c))
    axis_words = "commits, oldest first" + (", then the files given" if extra else "")
    out.append(svg.text((X0 + X1) / 2, height - 8, axis_words, "m", "middle"))
    if len(points) > 1:
        pts = " ".join(f"{svg.n(_x(i, slots))},{svg.n(yscale(m))}" for i, m in points)
        out.append(
            f'<polyline class="line" points="{pts}">'
            f"{svg.title(f'{s.label}: {len(points)} commits')}</polyline>"
        )
    for i, m in points:
        tip = f"{s.label} at {commits[i]}: median {svg.exact(m)} {s.unit}"
        out.append(svg.circle(_x(i, slots), yscale(m), 3.0, "pt", tip))
    words = []
    for k, (name, m) in enumerate(extra):
        x, y = _x(len(commits) + k, slots), yscale(m)
        cls, where = _placed(m, last, s, fence)
        tip = f"{s.label} in {name}: median {svg.exact(m)} {s.unit}; {where}"
        d = f"M{svg.n(x)} {svg.n(y - 6)}L{svg.n(x + 6)} {svg.n(y)}L{svg.n(x)} {svg.n(y + 6)}"
        d += f"L{svg.n(x - 6)} {svg.n(y)}Z"
        out.append(f'<path class="{cls}" d="{d}">{svg.title(tip)}</path>')
        out.append(svg.line(x, y1, x, y1 + 4, "axis"))
        # a row under the commits' labels, right-aligned: the last slot is the plot's edge
        short = svg.clip(name, 160, middle=True)
        out.append(svg.text(x + 6, y1 + 30, short, "m r", "end", tip=name))
        words.append(f"{name} {numfmt.si(m)}: {where}")
    label = f"{s.label}: median over {numfmt.plural(len(points), 'commit')}"
    if words:
        label += "; " + "; ".join(words)
        line = "◆ " + "; ".join(words)
        out.append(svg.text(8, 45, svg.clip(line, WIDTH - 16), "m r", tip=line))
    return Figure("".join(out), WIDTH, height, label, prefix)


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
        figure = cell_figure(h, s, f"{sid}-{k}-", item.candidates)
        out.append(f'<div class="chart">{inline(figure)}</div>')
    out.append(f"<details><summary>Numbers</summary>{_numbers(h)}</details>")
    return "".join(out)
