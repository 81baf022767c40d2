"""A saved comparison carries what the differential flame graph draws of each changed
cell (explained.flame: both sides' self costs and kept calls), so `icount report CMP.json`
draws the graph `report --compare BASE NEW` draws, to the byte; a comparison without the
key renders as before, and one whose key is broken is refused in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from icount.results import UNIT_PER_REQUEST, Cell, Results, Run
from icount.results.cell_profile import cell_profile
from icount.window_profile import FunctionCost, WindowProfile
from tests.support.cli import run_icount

from .conftest import FP, run_cli, write_results

# main -> handle -> parse, main -> log, as tests/report/test_flame.py; new's parse grew
COSTS = {"main": (100, 1000, 1), "handle": (200, 600, 1), "parse": (400, 400, 1),
         "log": (300, 300, 1)}  # fmt: skip
EDGES = {("main", "handle"): 600.0, ("handle", "parse"): 400.0, ("main", "log"): 300.0}
GROWN = {**EDGES, ("main", "handle"): 900.0, ("handle", "parse"): 700.0}
DIFF = re.compile(r"<details><summary>Flame graph of the change: .*?</details>")


def _cell(value: float, edges: dict[tuple[str, str], float], parse: int) -> Cell:
    costs = {**COSTS, "parse": (parse, parse, 1)}
    w = WindowProfile({k: FunctionCost(*(x * 10 for x in v)) for k, v in costs.items()},
                      top=10, edges={k: v * 10 for k, v in edges.items()})  # fmt: skip
    runs = tuple(Run(value + i, True) for i in range(3))
    return Cell("srv", "json", "callgrind", UNIT_PER_REQUEST, runs, {}, 3, 0.01,
                profile=cell_profile([(w, 10)]))  # fmt: skip


def _files(tmp: Path, cli: Any = run_cli) -> tuple[Path, Path, Path]:
    base = write_results(tmp / "base.json", Results(FP, (_cell(1000, EDGES, 400),)))
    new = write_results(tmp / "new.json", Results(FP, (_cell(1300, GROWN, 700),)))
    cmp_json = tmp / "cmp.json"
    done = cli("compare", str(base), str(new), "-f", "json", "-o", str(cmp_json))
    assert done.returncode == 3, done.stderr  # regressed: the case a report is for
    return base, new, cmp_json


def _report(tmp: Path, name: str, *args: str) -> str:
    out = tmp / name
    done = run_cli("report", *args, "-o", str(out), "-q")
    assert done.returncode == 0, done.stderr
    return out.read_text()


def test_the_saved_comparison_draws_the_differential_flame_graph_of_report_compare(
    tmp_path: Path,
) -> None:
    base, new, cmp_json = _files(tmp_path)
    doc = json.loads(cmp_json.read_text())
    assert doc["version"] == 2
    flame = doc["cells"][0]["explained"]["flame"]
    assert flame["names"] == ["handle", "log", "main", "parse"]  # each name once
    assert flame["new"]["edges"][0] == [2, 0, 900.0]  # main -> handle, 900 a request
    assert flame["base"]["others"] == 0.0 and flame["per"] == "request"
    saved = _report(tmp_path, "saved.html", str(cmp_json))
    assert _report(tmp_path, "again.html", str(cmp_json)) == saved  # byte-identical on a rerun
    (drawn,) = DIFF.findall(saved)
    page = _report(tmp_path, "direct.html", "--compare", str(base), str(new))
    (direct,) = DIFF.findall(page)
    assert drawn == direct  # the graph of the results files themselves, to the byte
    moved = '<ul class="moved"><li><code>parse</code> 400 -&gt; 700 (+300, +75.0%; 100.0% of ' \
        "the cell&#x27;s change)</li></ul>"  # fmt: skip
    assert moved in saved and moved in page  # and the functions that moved, both ways
    assert "parse: 700 instructions per request on this path" in drawn
    assert "base 400; in all its calls 400 -&gt; 700 (+300)" in drawn
    classes = dict(re.findall(r"<title>([^:<]+): [^<]*</title><rect class=\"(\w+)\"", drawn))
    assert classes == {"main": "reg", "handle": "reg", "parse": "reg", "log": "same"}
    # without the key (comparisons written before it) the page is the rest, unchanged
    del doc["cells"][0]["explained"]["flame"]
    bare = tmp_path / "bare" / "cmp.json"  # the same name: the page shows it
    bare.parent.mkdir()
    bare.write_text(json.dumps(doc))
    plain = _report(tmp_path, "bare.html", str(bare))
    assert "Flame graph of the change" not in plain
    muted = '<p class="muted">Drawn as the new build runs; red: a function that costs more ' \
        "in all its calls than in the base, green: less, grey: the same.</p>"  # fmt: skip
    assert plain == saved.replace(drawn, "").replace(muted, "")


def test_version_1_still_loads_and_a_broken_flame_is_one_line(tmp_path: Path) -> None:
    _, _, cmp_json = _files(tmp_path)
    doc = json.loads(cmp_json.read_text())
    old = {k: v for k, v in doc.items() if k != "geometric_mean"} | {"version": 1}
    (tmp_path / "v1.json").write_text(json.dumps(old))
    assert "Flame graph of the change" in _report(tmp_path, "v1.html", str(tmp_path / "v1.json"))
    doc["cells"][0]["explained"]["flame"]["new"]["edges"][0][1] = 99
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(doc))
    done = run_cli("report", str(broken), "-o", str(tmp_path / "x.html"))
    assert done.returncode == 6
    assert done.stderr.strip() == (
        f"icount: error: {broken}: cell 1: explained.flame.new.edges[] callee 99 is past "
        "the 4 names"
    )
    assert not (tmp_path / "x.html").exists()


def test_the_saved_comparisons_flame_graph_in_the_browser(browser: Any, tmp_path: Path) -> None:
    def cli(*args: str) -> Any:  # in processes of their own: the browser's is a child of this one
        return run_icount(args)

    _, _, cmp_json = _files(tmp_path, cli)
    page = tmp_path / "saved.html"
    assert cli("report", str(cmp_json), "-o", str(page), "-q").returncode == 0
    load = browser.load(page)
    assert load.problems == [] and load.requests == []
    browser.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    shot = tmp_path / "flame-diff.png"
    browser.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    marks = browser.evaluate(
        "[...document.querySelectorAll('g.flame rect')]"
        ".map(r => [r.getAttribute('class'), r.getBoundingClientRect().width])"
    )
    assert [c for c, _ in marks] == ["reg", "reg", "reg", "same"]  # main, handle, parse, log
    # drawn as the new build runs: main 1300 a request, handle 900, parse 700, log 300
    assert marks[0][1] > 600
    assert [round(w / marks[0][1], 3) for _, w in marks] == [1.0, 0.692, 0.538, 0.231]
