"""Pictures of icount's outputs: SVG charts and the self-contained HTML report.

Pure functions: results, comparisons and size documents in, SVG or HTML text out;
no files, no clock, no environment, so the same inputs give the same bytes.

  report_html(items)        the `icount report` page
  results_svg(results)      `icount table --format svg`
  comparison_svg(c)         `icount compare --format svg` (a Comparison, or the
                            document of a compare JSON file)
  sizes_svg(doc)            `icount size --format svg`, of size_doc(breakdowns, view)
                            or size_diff_doc(pairs, view), or of a size JSON file

The typed models go to the charts directly (models.py); compare/drawn.py and
inputs.py read the same documents from the JSON files that `icount report` is given.
"""

from __future__ import annotations

from collections.abc import Sequence

from icount.charts import bars, diverging, sizes
from icount.charts.figure import standalone
from icount.charts.inputs import SIZE_FORMAT, DrawnSizes, sizes_from_json
from icount.charts.models import comparison_doc, size_diff_doc, size_doc
from icount.charts.page import ComparisonInput, Input, ResultsInput, SizesInput, render
from icount.compare.drawn import COMPARE_FORMAT, DrawnComparison, comparison_from_json
from icount.compare.model import Comparison
from icount.results import Results
from icount.results_table import SORT_ORDER

__all__ = [
    "COMPARE_FORMAT",
    "SIZE_FORMAT",
    "ComparisonInput",
    "DrawnComparison",
    "DrawnSizes",
    "Input",
    "ResultsInput",
    "SizesInput",
    "comparison_doc",
    "comparison_from_json",
    "comparison_svg",
    "report_html",
    "results_svg",
    "size_diff_doc",
    "size_doc",
    "sizes_from_json",
    "sizes_svg",
]


def report_html(items: Sequence[Input]) -> str:
    return render(items)


def results_svg(results: Results, sort: str = SORT_ORDER) -> str:
    return standalone(bars.results_figures(results, "ic", sort), "ic")


def comparison_svg(c: Comparison | DrawnComparison) -> str:
    doc = comparison_doc(c) if isinstance(c, Comparison) else c
    return standalone([diverging.comparison_figure(doc, "ic")], "ic")


def sizes_svg(doc: DrawnSizes) -> str:
    return standalone(sizes.size_figures(doc, "ic"), "ic")
