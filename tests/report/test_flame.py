"""The flame graph of a cell's profile (icount/charts/flame.py): widths from the kept
calls, exact figures in the titles, byte-identical on a rerun, and drawn in headless
Chromium with the rest of the report."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from icount import charts
from icount.charts.figure import inline
from icount.charts.flame import flame_figure, flame_sections
from icount.results import UNIT_PER_REQUEST, Cell, Results, Run
from icount.results.cell_profile import cell_profile
from icount.window_profile import FunctionCost, WindowProfile

# main -> handle (600 a request: parse 400 of it, its own 200) and main -> log (300);
# main's own 100: 1000 a request
COSTS = {"main": (100, 1000, 1), "handle": (200, 600, 1), "parse": (400, 400, 1),
         "log": (300, 300, 1)}  # fmt: skip
EDGES = {("main", "handle"): 600.0, ("handle", "parse"): 400.0, ("main", "log"): 300.0}


def _cell(name: str = "srv") -> Cell:
    w = WindowProfile({k: FunctionCost(*(x * 10 for x in v)) for k, v in COSTS.items()},
                      top=10, edges={k: v * 10 for k, v in EDGES.items()})  # fmt: skip
    return Cell(name, "json", "callgrind", UNIT_PER_REQUEST, (Run(1000.0, True),), {}, 1, 0.01,
                profile=cell_profile([(w, 10)]))  # fmt: skip


def _widths(svg_text: str) -> dict[str, float]:
    marks = re.findall(r'<title>([^:<]+): [^<]*</title><rect class="c\d" x="[\d.]+" y="[\d.]+" '
                       r'width="([\d.]+)"', svg_text)  # fmt: skip
    return {name: float(w) for name, w in marks}


def test_each_function_is_as_wide_as_its_inclusive_cost_under_its_caller() -> None:
    c = _cell()
    assert c.profile is not None
    fig = flame_figure(c.profile, "srv/json", "f")
    assert fig is not None
    body = inline(fig)
    widths = _widths(body)
    assert widths == {"main": 960.0, "handle": 576.0, "parse": 384.0, "log": 288.0}
    assert fig.height == 3 * 17  # main; handle and log; parse
    assert "handle: 600 instructions per request on this path (60% of the cell); 600 in all " \
        "its calls" in body  # fmt: skip
    assert inline(flame_figure(c.profile, "srv/json", "f")) == body  # type: ignore[arg-type]


def test_a_profile_without_calls_draws_nothing() -> None:
    c = _cell()
    assert c.profile is not None
    bare = Cell("a", "", "callgrind", "instructions", (Run(1.0, True),), {}, 1, 0.01)
    assert flame_sections([bare], "s") == []
    no_edges = cell_profile([(WindowProfile({"f": FunctionCost(1, 1, 1)}, top=3), 1)])
    assert no_edges is not None and flame_figure(no_edges, "x", "p") is None


def test_the_report_draws_a_flame_graph_per_profiled_cell(browser: Any, tmp_path: Path) -> None:
    res = Results({"backend": "callgrind"}, (_cell("srv"), _cell("other")))
    page = tmp_path / "flame.html"
    page.write_text(charts.report_html([charts.ResultsInput("r.json", res, None)]))
    again = charts.report_html([charts.ResultsInput("r.json", res, None)])
    assert page.read_text() == again  # byte-identical on a rerun
    load = browser.load(page)
    assert load.problems == [] and load.requests == []
    browser.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    shot = tmp_path / "flame.png"
    browser.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert browser.evaluate("document.querySelectorAll('g.flame').length") == 8
    drawn = browser.evaluate(
        "[...document.querySelectorAll('g.flame rect')].slice(0, 4)"
        ".map(r => r.getBoundingClientRect().width)"
    )
    # main, handle, parse, log (depth first) as the page draws them, scaled to its column
    assert drawn[0] > 600
    assert [round(w / drawn[0], 2) for w in drawn] == [1.0, 0.6, 0.4, 0.3]


def test_the_differential_flame_graph_colours_what_grew_and_what_shrank() -> None:
    from icount.charts.flame import diff_sections

    base = _cell()
    grown = {**EDGES, ("main", "handle"): 900.0, ("handle", "parse"): 700.0}
    w = WindowProfile({k: FunctionCost(*(x * 10 for x in v)) for k, v in COSTS.items()},
                      top=10, edges={k: v * 10 for k, v in grown.items()})  # fmt: skip
    new = cell_profile([(w, 10)])
    assert base.profile is not None and new is not None
    fig = flame_figure(new, "srv/json", "d", base.profile)
    assert fig is not None
    body = inline(fig)
    classes = dict(re.findall(r'<title>([^:<]+): [^<]*</title><rect class="(\w+)"', body))
    assert classes == {"main": "reg", "handle": "reg", "parse": "reg", "log": "same"}
    assert "parse: 700 instructions per request on this path" in body
    assert (
        "on this path (53.8% of the cell), base 400; in all its calls 400 -&gt; 700 (+300)" in body
    )
    html_parts = diff_sections([("srv/json", base.profile, new)], "s")
    assert "Flame graph of the change: srv/json" in "".join(html_parts)


def test_a_compilers_copy_is_coloured_against_its_source_in_the_base() -> None:
    def cell(edges: dict[tuple[str, str], float]) -> Any:
        costs = {"main": (100, 100 + sum(edges.values()), 1)} | {
            b: (v, v, 1) for (_, b), v in edges.items()
        }
        w = WindowProfile({k: FunctionCost(*v) for k, v in costs.items()}, top=10, edges=edges)
        return cell_profile([(w, 1)])

    base = cell({("main", "compress"): 600.0, ("main", "log"): 300.0})
    new = cell({("main", "compress.constprop.0"): 500.0, ("main", "log"): 300.0})
    body = inline(flame_figure(new, "x", "d", base))  # type: ignore[arg-type]
    classes = dict(re.findall(r'<title>([^:<]+): [^<]*</title><rect class="(\w+)"', body))
    assert classes["compress.constprop.0"] == "imp"  # 600 -> 500: it shrank, not appeared
    assert "in all its calls 600 -&gt; 500 (-100); in the base as compress" in body
