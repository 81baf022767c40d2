"""The terminal table of every document: fits `width`, names shortened and columns
stacked before a number is ever cut (icount.terminal)."""

from __future__ import annotations

from icount.export import documents as d
from icount.tables import Table, render_terminal


def _join(tables: list[Table], width: int) -> str:
    return "\n".join(render_terminal(t, width) for t in tables)


def render(doc: d.Document, width: int) -> str:
    if isinstance(doc, d.ResultsDoc):
        from icount import results_table

        return render_terminal(results_table.build_table(doc.results, doc.extra, doc.sort), width)
    if isinstance(doc, d.ComparisonDoc):
        from icount.compare import render as compare

        return _join(compare.tables(doc.comparison), width)
    if isinstance(doc, d.SizeDoc):
        from icount.size import render as size

        return render_terminal(size.table(doc.items, doc.view, doc.limit), width)
    if isinstance(doc, d.SizeDiffDoc):
        from icount.size import render as size

        return _join([size.diff_table(o, n, doc.view, doc.limit) for o, n in doc.pairs], width)
    if isinstance(doc, d.InlineDoc):
        from icount.inline import render as inline

        return _join(inline.tables(doc.report), width)
    raise TypeError(f"no table of {type(doc).__name__}")
