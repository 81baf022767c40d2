"""SVG charts of results, comparisons and sizes (icount.charts draws them)."""

from __future__ import annotations

from icount.export import documents as d


def render(doc: d.Document, width: int) -> str:
    del width
    from icount import charts

    if isinstance(doc, d.ResultsDoc):
        return charts.results_svg(doc.results, doc.sort)
    if isinstance(doc, d.ComparisonDoc):
        return charts.comparison_svg(doc.comparison)
    if isinstance(doc, d.SizeDoc):  # what --format json prints: --top applied
        return charts.sizes_svg(charts.size_doc(doc.chosen, doc.view))
    if isinstance(doc, d.SizeDiffDoc):
        return charts.sizes_svg(charts.size_diff_doc(doc.pairs, doc.view))
    raise TypeError(f"no SVG of {type(doc).__name__}")
