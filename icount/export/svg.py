"""SVG charts of results, comparisons and sizes (icount.charts draws them)."""

from __future__ import annotations

from icount.export import documents as d


def render(doc: d.Document, width: int) -> str:
    del width
    import json

    from icount import charts

    if isinstance(doc, d.ResultsDoc):
        return charts.results_svg(doc.results)
    if isinstance(doc, d.ComparisonDoc):
        from icount.compare import render as compare

        return charts.comparison_svg(
            charts.comparison_from_json(compare.to_json(doc.comparison), "comparison")
        )
    if isinstance(doc, d.SizeDoc | d.SizeDiffDoc):
        from icount.export import json as size_json

        text = size_json.render(doc, 0)
        return charts.sizes_svg(charts.sizes_from_json(json.loads(text), "icount size"))
    raise TypeError(f"no SVG of {type(doc).__name__}")
