"""CSV for scripts: raw values (exact counts and bytes), one row per cell or label."""

from __future__ import annotations

from icount.export import documents as d
from icount.tables import render_csv


def render(doc: d.Document, width: int) -> str:
    """The document's CSV, each field with a control character, a newline or a bidi
    override in it escaped (icount.text.printable): one record a line, whatever the names;
    a name a spreadsheet would run as a formula starts with a quote (tables.render_csv)."""
    del width
    return _csv(doc)


def _csv(doc: d.Document) -> str:
    if isinstance(doc, d.ResultsDoc):
        from icount import results_table

        return render_csv(*results_table.csv_table(doc.results, doc.sort))
    if isinstance(doc, d.ComparisonDoc):
        from icount.compare import render as compare

        return render_csv(compare.csv_header(doc.comparison), compare.csv_rows(doc.comparison))
    if isinstance(doc, d.SizeDoc):
        from icount.size import render as size

        return size.to_csv(doc.chosen, doc.view)
    if isinstance(doc, d.SizeDiffDoc):
        from icount.size import render as size

        return size.diff_csv(doc.pairs, doc.view)
    raise TypeError(f"no CSV of {type(doc).__name__}")
