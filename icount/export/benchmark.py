"""github-action-benchmark's `customSmallerIsBetter` JSON, of a comparison's new side."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from icount.errors import UsageError
from icount.escapes import json_text
from icount.export import documents as d
from icount.export.keys import cell_words, refuse_collisions
from icount.jsonout import dumps
from icount.text import printable

if TYPE_CHECKING:
    from icount.compare.model import Comparison


def render(doc: d.Document, width: int) -> str:
    del width
    if isinstance(doc, d.ComparisonDoc):
        from icount.compare import render as compare

        entries = compare.benchmark_entries(doc.comparison)
        _distinct(doc.comparison, entries)
        return json_text(dumps(entries))
    raise TypeError(f"no benchmark JSON of {type(doc).__name__}")


def _distinct(c: Comparison, entries: list[dict[str, Any]]) -> None:
    """The action keeps one series per name: two cells of one name would be one series
    (`a/b`, and `a` with path `b`), one figure lost. The cells a refusal names are those
    whose entries (a cell's figure, its total) bear that name."""
    seen: set[str] = set()
    for e in entries:
        name = e["name"]
        if name in seen:
            cells = [
                cell_words(*r.key)
                for r in c.rows
                if name in (f"{r.label} ({r.backend})", f"{r.label} total ({r.backend})")
            ]
            refuse_collisions(((name, who) for who in cells), "benchmark-json", "series")
            raise UsageError(
                f'--format benchmark-json: two entries would be one series, "{printable(name)}"'
            )
        seen.add(name)
