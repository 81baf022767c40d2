"""Issue 30's shape, 400 callers of one function, from profile text to page
(tests/report/fan_in.py writes it; scripts/bench_report.py --fan-in times it at full size):
the figures drawn are the profile's own."""

from __future__ import annotations

import re

from icount import charts
from icount.callgrind.functions import window_profile
from icount.callgrind.parser import parse_bytes
from icount.charts.flame import _graph, _layers
from icount.results import UNIT_INSTRUCTIONS, Cell, Results, Run
from icount.results.cell_profile import PER_RUN, cell_profile
from tests.report.fan_in import fan_in_text, inclusive

CALLERS, CALLS = 400, 40_000


def test_a_profile_of_400_callers_of_one_function_draws_its_own_figures() -> None:
    prof = parse_bytes(fan_in_text(CALLERS, CALLS).encode(), "fan-in")
    want = inclusive(CALLERS, CALLS)
    assert prof.totals["Ir"] == want["main"]
    profile = cell_profile([(window_profile(prof, top=CALLERS + 2), 1)], PER_RUN)
    assert profile is not None
    marks, total = _layers(_graph(profile.flame()))
    assert total == want["main"]
    by_depth: dict[int, list[float]] = {}
    for m in marks:
        by_depth.setdefault(m.depth, []).append(m.value)
    assert by_depth[0] == [want["main"]]
    # every caller, each as wide as its inclusive figure; leaf's share under each (0.15%
    # of the cell) is under what a mark is drawn for
    assert by_depth[1] == [want["caller0"]] * CALLERS
    assert len(by_depth) == 2
    cell = Cell("fan-in", "", "callgrind", UNIT_INSTRUCTIONS, (Run(float(total), True),), {}, 1,
                0.01, profile=profile)  # fmt: skip
    page = charts.report_html([charts.ResultsInput("f.json", Results({}, (cell,)), None)])
    assert page.count('<g class="flame">') == len(marks) == 1 + CALLERS
    caller = re.search(r"<title>caller399: [^<]*</title>", page)
    assert caller is not None
    assert f"caller399: {want['caller399']:,} instructions per run on this path" in caller.group()
