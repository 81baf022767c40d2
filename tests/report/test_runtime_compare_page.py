"""A collected runtime's total in the report's comparison section: under each such cell
a row of its total's change with the 95% interval of the difference as a whisker, and
which of the two decided; the same marks from the Comparison and from its JSON; a page
of other comparisons as it was (their goldens are unchanged); the page in headless
Chromium.

The comparison is test_compare_runtime's sample: the measured node-http /json file
against cells derived from it (tests/compare/runtime_cells.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from icount import charts, export
from icount.charts import diverging, svg
from icount.charts.page import RUNTIME_CAPTION, TOTAL_HEAD, TOTALS_CAPTION
from icount.errors import ParseError
from tests.compare.runtime_cells import node, node_cell, of, without_runtime
from tests.compare.test_compare_runtime import sample

from .conftest import golden, mixed_comparison_json
from .test_browser import count, open_page, shots_dir, titles, write_page
from .test_charts import NS, marks, parse, tip


def _from_json() -> charts.DrawnComparison:
    doc = json.loads(export.render_comparison(sample(), "json"))
    return charts.comparison_from_json(doc, "runtime.json")


def _texts(svg: str) -> list[str]:
    return [t.text or "" for t in parse(svg).iter(f"{NS}text")]


def test_golden_and_byte_stable() -> None:
    text = charts.comparison_svg(sample())
    assert charts.comparison_svg(sample()) == text
    golden("compare-runtime.svg", text)


def test_the_json_draws_what_the_comparison_does() -> None:
    assert charts.comparison_svg(_from_json()) == charts.comparison_svg(sample())
    direct = charts.comparison_doc(sample())
    pages = [
        charts.report_html([charts.ComparisonInput("runtime.json", d)])
        for d in (direct, _from_json())
    ]
    assert pages[0] == pages[1]


def test_a_total_row_under_each_runtime_cell() -> None:
    svg = charts.comparison_svg(sample())
    texts = _texts(svg)
    assert texts.count("total") == 8  # every cell of the sample has a runtime's total
    # which decided: the total's row says it, the mutator's row keeps the cell's verdict
    assert texts.count("decides: regressed") == 2 and texts.count("decides: improved") == 1
    assert texts.count("decides: unchanged") == 2  # the two old-file rows: whole vs total
    assert texts.count("does not gate") == 1  # noisy: its new total is ~
    assert "~58.52k" in texts and "+1.55%" in texts and "-3.88%" in texts
    whiskers = [tip(e) for e in marks(parse(svg), "wh")]
    assert len(whiskers) == 7  # every total with a change has its interval
    up = next(w for w in whiskers if w.startswith("gc-up/json total:"))
    # ±170.94 of a base total of 55,641.707: 0.3072%
    assert up == (
        "gc-up/json total: 95% interval of the difference ±170.94 instructions/request "
        "(±0.3072% of the base total)"
    )
    bars = [tip(e) for e in marks(parse(svg), "reg")]
    assert any(b.startswith("gc-up/json total, base total 55,641.707 ±109.433") for b in bars)


def test_the_whisker_is_drawn_on_the_bar_end() -> None:
    root = parse(charts.comparison_svg(sample()))
    paths = {tip(e): e.get("d") or "" for e in marks(root, "wh")}
    bars = {tip(e).split(",")[0]: e for e in marks(root, "reg")}
    d = next(v for k, v in paths.items() if k.startswith("gc-up/json total:"))
    lo, hi = (float(x) for x in re.findall(r"M([\d.]+) [\d.]+H([\d.]+)", d)[0])
    bar = bars["gc-up/json total"]
    end = float(bar.get("x") or 0) + float(bar.get("width") or 0)
    assert lo < end < hi
    assert abs((lo + hi) / 2 - end) < 0.6  # centred on the change (SVG rounds to 0.1 px)


def test_the_page_says_which_decided_with_the_interval() -> None:
    page = charts.report_html([charts.ComparisonInput("runtime.json", _from_json())])
    assert f'<p class="muted">{svg.esc(TOTALS_CAPTION)}</p>' in page
    # the notable list leads with the total where it decided, its interval beside it
    assert "total +1.55% ±0.31%, mutator 0.00% (threshold 1%)" in page
    assert "total -3.88% ±0.22%, mutator 0.00% (threshold 1%)" in page
    for head in TOTAL_HEAD:
        assert f"<th>{head}</th>" in page
    assert "<td>+1.5501%</td><td>±170.94</td>" in page


def test_a_comparison_without_runtime_cells_draws_no_total() -> None:
    doc = charts.comparison_from_json(mixed_comparison_json(), "mixed.json")
    assert all(r.total is None for r in doc.rows)
    svg = charts.comparison_svg(doc)
    assert "total" not in _texts(svg) and not marks(parse(svg), "wh")
    assert diverging.TOTALS_NOTE not in svg
    page = charts.report_html([charts.ComparisonInput("mixed.json", doc)])
    assert "A collected runtime" not in page and "total verdict" not in page


def test_in_the_browser(browser: Any, tmp_path: Path) -> None:
    page = write_page(
        tmp_path / "runtime-compare.html", [charts.ComparisonInput("runtime.json", _from_json())]
    )
    shots = shots_dir(tmp_path)
    open_page(browser, page, shots, "runtime-compare")
    assert count(browser, "path.wh") == 7
    wh = titles(browser, "path.wh")
    assert any(t.startswith("gc-up/json total: 95% interval") for t in wh)
    shot = shots / "runtime-compare-chart.png"
    browser.screenshot(shot, selector='svg[aria-labelledby="s1--title"]')
    assert shot.stat().st_size > 1000


def test_the_results_caption_names_the_stacked_bars_only_with_runtime_cells() -> None:
    caption = f" {svg.esc(RUNTIME_CAPTION)}</p>"
    page = charts.report_html([charts.ResultsInput("node-json.json", node(), None)])
    assert caption in page
    old = of([without_runtime(node_cell())])
    assert caption not in charts.report_html([charts.ResultsInput("old.json", old, None)])


def test_a_total_verdict_compare_never_writes_is_refused() -> None:
    """The page shows a total's verdict as the file says it: one that compare does not
    write (a hand-edited or corrupt file) is refused, not drawn."""
    doc = json.loads(export.render_comparison(sample(), "json"))
    cell = next(c for c in doc["cells"] if c.get("total"))
    assert charts.comparison_from_json(doc, "runtime.json")  # as written: accepted
    cell["total"]["verdict"] = "bogus"
    with pytest.raises(ParseError, match="'verdict' 'bogus' is not one compare writes"):
        charts.comparison_from_json(doc, "runtime.json")
    cell["total"]["verdict"] = "invalid in new"  # a cell's verdict, never a total's
    with pytest.raises(ParseError, match="'verdict' 'invalid in new' is not one"):
        charts.comparison_from_json(doc, "runtime.json")
    cell["total"]["verdict"] = "unchanged"
    cell["verdict"] = "bogus"  # and the cell's own
    with pytest.raises(ParseError, match="'verdict' 'bogus' is not one compare writes"):
        charts.comparison_from_json(doc, "runtime.json")
