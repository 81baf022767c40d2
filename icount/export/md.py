"""Markdown of every document: GitHub's tables, names whole (and escaped)."""

from __future__ import annotations

import dataclasses

from icount.export import documents as d
from icount.tables import Column, Table, render_markdown
from icount.text import md_text


def _join(tables: list[Table]) -> str:
    return "\n".join(render_markdown(_names_escaped(t)) for t in tables)


def _names_escaped(t: Table) -> Table:
    """A table with the names from the files (the first column: cells, symbols,
    sections, functions; the column titles, the title and heading) escaped for Markdown
    (`text.md_text`): a cell or symbol named `[x](https://...)` or `<img src=...>` was a
    link or HTML in a PR comment. The figures, footnote marks (`[1]`) and notes are
    icount's own and keep their bytes."""
    return dataclasses.replace(
        t,
        columns=[Column(md_text(c.title), c.align, c.wrap) for c in t.columns],
        rows=[[md_text(r[0]), *r[1:]] if r else r for r in t.rows],
        title=None if t.title is None else md_text(t.title),
        heading=[md_text(h) for h in t.heading],
    )


def render(doc: d.Document, width: int) -> str:
    del width  # Markdown keeps every line whole
    if isinstance(doc, d.ResultsDoc):
        from icount import results_table

        return render_markdown(
            _names_escaped(results_table.build_table(doc.results, doc.extra, doc.sort))
        )
    if isinstance(doc, d.ComparisonDoc):
        from icount.compare import render as compare

        return compare.render_md(doc.comparison)
    if isinstance(doc, d.SizeDoc):
        from icount.size import render as size

        return render_markdown(_names_escaped(size.table(doc.items, doc.view, doc.limit)))
    if isinstance(doc, d.SizeDiffDoc):
        from icount.size import render as size

        return _join([size.diff_table(o, n, doc.view, doc.limit) for o, n in doc.pairs])
    if isinstance(doc, d.InlineDoc):
        from icount.inline import render as inline

        return _join(inline.tables(doc.report))
    raise TypeError(f"no Markdown of {type(doc).__name__}")
