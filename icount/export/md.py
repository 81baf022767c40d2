"""Markdown of every document: GitHub's tables, names whole (and escaped)."""

from __future__ import annotations

from icount.export import documents as d
from icount.tables import Table, render_markdown


def _join(tables: list[Table]) -> str:
    return "\n".join(render_markdown(t) for t in tables)


def render(doc: d.Document, width: int) -> str:
    del width  # Markdown keeps every line whole
    if isinstance(doc, d.ResultsDoc):
        from icount import report

        return render_markdown(report.build_table(doc.results, doc.extra, doc.sort))
    if isinstance(doc, d.ComparisonDoc):
        from icount.compare import render as compare

        return compare.render_md(doc.comparison)
    if isinstance(doc, d.SizeDoc):
        from icount.size import render as size

        return render_markdown(size.table(doc.items, doc.view, doc.limit))
    if isinstance(doc, d.SizeDiffDoc):
        from icount.size import render as size

        return _join([size.diff_table(o, n, doc.view, doc.limit) for o, n in doc.pairs])
    if isinstance(doc, d.InlineDoc):
        from icount.inline import render as inline

        return _join(inline.tables(doc.report))
    raise TypeError(f"no Markdown of {type(doc).__name__}")
