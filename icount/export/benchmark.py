"""github-action-benchmark's `customSmallerIsBetter` JSON, of a comparison's new side."""

from __future__ import annotations

from icount.export import documents as d
from icount.jsonout import dumps


def render(doc: d.Document, width: int) -> str:
    del width
    if isinstance(doc, d.ComparisonDoc):
        from icount.compare import render as compare

        return dumps(compare.benchmark_entries(doc.comparison))
    raise TypeError(f"no benchmark JSON of {type(doc).__name__}")
