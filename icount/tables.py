"""A tiny table model and its renderers: terminal (rich), Markdown and CSV.

Pure: every renderer returns a string. Terminal output goes through a rich Console
with a fixed width, no colour and no terminal detection, so the same table renders
byte-identically everywhere.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

Align = Literal["left", "right"]
FORMATS = ("table", "md", "csv", "json")


@dataclass(frozen=True)
class Column:
    title: str
    align: Align = "right"


@dataclass
class Table:
    columns: list[Column]
    rows: list[list[str]] = field(default_factory=list)
    title: str | None = None
    notes: list[str] = field(default_factory=list)  # printed under the table, in order

    def add_row(self, cells: Sequence[str]) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"row has {len(cells)} cells, table has {len(self.columns)}")
        self.rows.append(list(cells))


def render_terminal(table: Table, width: int = 120) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table as RichTable

    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width,
        color_system=None,
        force_terminal=False,
        force_jupyter=False,
        force_interactive=False,
        legacy_windows=False,
        emoji=False,
        highlight=False,
        markup=False,
        soft_wrap=False,
    )
    rt = RichTable(title=table.title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for col in table.columns:
        rt.add_column(col.title, justify=col.align, no_wrap=True, overflow="fold")
    for row in table.rows:
        rt.add_row(*row)
    console.print(rt)
    for note in table.notes:
        console.print(note, overflow="fold")
    return _strip_trailing(buf.getvalue())


def _strip_trailing(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(table: Table) -> str:
    lines: list[str] = []
    if table.title:
        lines += [f"**{_md_escape(table.title)}**", ""]
    lines.append("| " + " | ".join(_md_escape(c.title) for c in table.columns) + " |")
    lines.append(
        "|" + "|".join("---:" if c.align == "right" else ":---" for c in table.columns) + "|"
    )
    for row in table.rows:
        lines.append("| " + " | ".join(_md_escape(c) for c in row) + " |")
    if table.notes:
        lines.append("")
        lines += [
            f"{note}  " if i < len(table.notes) - 1 else note for i, note in enumerate(table.notes)
        ]
    return "\n".join(lines) + "\n"


def render_csv(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """CSV for scripts: raw values, '\\n' line ends, minimal quoting."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if v is None else v for v in row])
    return buf.getvalue()


def render(table: Table, fmt: str, width: int = 120) -> str:
    """Terminal or Markdown; CSV and JSON are built from the data, not from a Table."""
    if fmt == "table":
        return render_terminal(table, width)
    if fmt == "md":
        return render_markdown(table)
    raise ValueError(f"render() handles table and md, not {fmt}")
