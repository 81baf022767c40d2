"""A collected runtime's stacked bars in `icount report`: mutator + collector + compiler
per request, the total's 95% interval as a whisker, `~` on a total not valid; a golden
SVG, the marks and their tooltips, and the page in headless Chromium.

The cells are the measured node-http /json file of the compare tests and cells derived
from it (tests/compare/runtime_cells.py).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from icount import charts
from icount.results import Results
from tests.compare.runtime_cells import derived, node_cell, of, without_runtime

from .conftest import golden
from .test_browser import count, open_page, shots_dir, titles, write_page
from .test_charts import marks, parse, tip


def sample() -> Results:
    c = node_cell()
    name = dataclasses.replace
    return of(
        [
            c,
            name(derived(c, compiler=2_000_000.0), path="json-jit"),  # 2k per request compiling
            name(derived(c, windows=[0.0, 5.0, 0.0]), path="json-noisy"),  # its total is ~
            name(without_runtime(c), name="c-epoll"),  # no runtime: no stacked bar
        ]
    )


def test_golden_and_byte_stable() -> None:
    text = charts.results_svg(sample())
    assert charts.results_svg(sample()) == text
    golden("runtime.svg", text)


def test_a_stacked_bar_per_runtime_cell_with_exact_tooltips() -> None:
    root = parse(charts.results_svg(sample()))
    segs = [tip(e) for e in marks(root, "seg")]
    # mutator and collector on each of 3 cells, compiler on one
    assert len(segs) == 7
    assert segs[0] == (
        "node-http/json/callgrind: mutator 51,329.175 instructions/request (the cell's median)"
    )
    assert segs[1].startswith("node-http/json/callgrind: collector 4,312.531 ")
    assert "(mean of 6 windows)" in segs[1]
    assert any(s.startswith("node-http/json-jit/callgrind: compiler 2,000 ") for s in segs)
    whiskers = [tip(e) for e in marks(root, "wh") if "total" in tip(e)]
    assert len(whiskers) == 3
    assert whiskers[0] == (
        "node-http/json/callgrind: total 55,641.707 instructions/request ±109.433 (95%, 6 windows)"
    )
    assert "; not valid: the total's 95% interval is" in whiskers[2]
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "55.64k" in texts and "57.64k" in texts and "~58.52k" in texts
    assert "±109.4" in texts
    assert not any("c-epoll" in s for s in segs)


def test_a_page_without_runtime_cells_has_no_stacked_chart() -> None:
    res = of([without_runtime(node_cell())])
    assert "mutator + the runtime's own work" not in charts.results_svg(res)


def test_in_the_browser(browser: Any, tmp_path: Path) -> None:
    page = write_page(
        tmp_path / "runtime.html", [charts.ResultsInput("runtime.json", sample(), None)]
    )
    open_page(browser, page, shots_dir(tmp_path), "runtime")
    segs = titles(browser, ".seg")
    assert len(segs) == 7
    assert count(browser, "path.wh") == 4 + 3  # the cells' min-max and the totals' intervals
    shot = shots_dir(tmp_path) / "runtime-chart.png"
    browser.screenshot(shot, selector='svg[aria-labelledby="s1-r-title"]')
    assert shot.stat().st_size > 1000
