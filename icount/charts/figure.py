"""A chart before it becomes an <svg>: its marks, its size and what it shows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from icount.charts import svg


@dataclass(frozen=True)
class Figure:
    body: str  # SVG elements, drawn from (0, 0)
    width: float
    height: float
    label: str  # one line saying what the chart shows: the <svg>'s title
    prefix: str  # the id prefix its pattern references use


def under(head: str, dy: float, body: str) -> str:
    """A chart's `body` drawn `dy` lower, under a title of more lines than one
    (svg.heading); a chart whose title takes one line keeps its bytes."""
    return head + (f'<g transform="translate(0,{svg.n(dy)})">{body}</g>' if dy else body)


def inline(fig: Figure) -> str:
    """The <svg> element for the report page (the page holds the style sheet)."""
    return svg.document(fig.body, fig.width, fig.height, fig.label, fig.prefix)


def standalone(figs: Sequence[Figure], prefix: str) -> str:
    """One .svg file of `figs` drawn one under the other (all made with `prefix`)."""
    gap = 16.0
    defs = "".join(svg.patterns(p) for p in sorted({f.prefix for f in figs} - {prefix}))
    parts: list[str] = [f"<defs>{defs}</defs>"] if defs else []
    y = 0.0
    for f in figs:
        parts.append(f'<g transform="translate(0,{svg.n(y)})">{f.body}</g>')
        y += f.height + gap
    width = max((f.width for f in figs), default=0.0)
    height = max(0.0, y - gap)
    label = "; ".join(f.label for f in figs)
    return svg.standalone(svg.document("".join(parts), width, height, label, prefix))
