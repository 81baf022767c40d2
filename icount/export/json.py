"""The versioned JSON document of each kind (its layout history is beside its
builder: results.files, compare.render, size.render, inline.report)."""

from __future__ import annotations

from icount.escapes import json_text
from icount.export import documents as d


def render(doc: d.Document, width: int) -> str:
    """The document's JSON, no control character or bidi override raw in it (names from
    input files hold them): each is a \\u escape, the same string to a reader."""
    del width
    return json_text(_json(doc))


def _json(doc: d.Document) -> str:
    if isinstance(doc, d.ResultsDoc):
        from icount.results import results_json

        return results_json(doc.results)  # the file's own order, whatever --sort says
    if isinstance(doc, d.ComparisonDoc):
        from icount.compare import render as compare
        from icount.jsonout import dumps

        return dumps(compare.to_json(doc.comparison))
    if isinstance(doc, d.SizeDoc):
        from icount.size import render as size

        return size.to_json(doc.chosen, doc.view)
    if isinstance(doc, d.SizeDiffDoc):
        from icount.size import render as size

        return size.diff_json(doc.pairs, doc.view)
    if isinstance(doc, d.InlineDoc):
        from icount.inline import render as inline

        return inline.render_json(doc.report)
    raise TypeError(f"no JSON of {type(doc).__name__}")
