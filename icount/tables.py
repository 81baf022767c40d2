"""A tiny table model and its renderers: terminal, Markdown and CSV.

Pure: every renderer returns a string. The terminal renderer (icount.terminal) lays
the table out for a given width, never cutting a number, so the same table renders
byte-identically everywhere. Names in tables come from input files: the terminal and
Markdown renderers escape their control characters (icount.text.printable).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from icount.escapes import csv_document
from icount.terminal import Grid, Group
from icount.text import printable

Align = Literal["left", "right"]


@dataclass(frozen=True)
class Column:
    title: str
    align: Align = "right"
    wrap: bool = False  # prose (a check's detail): wrapped to fit, where figures never are


@dataclass
class Table:
    columns: list[Column]
    rows: list[list[str]] = field(default_factory=list)
    title: str | None = None
    notes: list[str] = field(default_factory=list)  # printed under the table, in order
    # columns after the first kept together when a table too wide is split into blocks
    # (one file's file and VM columns); none given: each column alone
    groups: list[Group] = field(default_factory=list)
    heading: list[str] = field(default_factory=list)  # one line per file, before the table

    def add_row(self, cells: Sequence[str]) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"row has {len(cells)} cells, table has {len(self.columns)}")
        self.rows.append(list(cells))


def grid(t: Table) -> Grid:
    """What the terminal renderer draws for `t`, every text escaped."""
    groups = t.groups or [Group("", 1) for _ in t.columns[1:]]
    return Grid(
        titles=[printable(c.title) for c in t.columns],
        left=[c.align == "left" for c in t.columns],
        rows=[[printable(c) for c in row] for row in t.rows],
        groups=[g._replace(name=printable(g.name)) for g in groups],
        title=None if t.heading or t.title is None else printable(t.title),
        notes=[printable(n) for n in t.notes],
        heading=[printable(h) for h in t.heading],
        wrap=[c.wrap for c in t.columns],
    )


def render_terminal(table: Table, width: int = 120) -> str:
    from icount import terminal

    return terminal.render(grid(table), width)


def _md_escape(text: str) -> str:
    return printable(text).replace("|", "\\|")


def render_markdown(table: Table) -> str:
    """Markdown; a table of several files names each on a line of its own."""
    lines: list[str] = []
    if table.heading:
        lines += ["  \n".join(f"**{_md_escape(h)}**" for h in table.heading), ""]
    elif table.title:
        lines += [f"**{_md_escape(table.title)}**", ""]
    lines.append("| " + " | ".join(_md_escape(c.title) for c in table.columns) + " |")
    lines.append(
        "|" + "|".join("---:" if c.align == "right" else ":---" for c in table.columns) + "|"
    )
    for row in table.rows:
        lines.append("| " + " | ".join(_md_escape(c) for c in row) + " |")
    if table.notes:
        lines.append("")
        notes = [printable(n) for n in table.notes]
        lines += [f"{note}  " if i < len(notes) - 1 else note for i, note in enumerate(notes)]
    return "\n".join(lines) + "\n"


def render_csv(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """CSV for scripts: raw values, '\\n' line ends, minimal quoting; names escaped by
    escapes.csv_fields (a control character or newline written out, a quote before one
    that a spreadsheet would run as a formula)."""
    return csv_document([header, *(["" if v is None else v for v in row] for row in rows)])
