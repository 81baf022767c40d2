"""scripts/bench_serve.py's `--against rev` report: the seconds per target from icount
serve's stamped progress lines, and the table of both sides (no valgrind, no session)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_serve.py"


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_serve", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_serve"] = mod  # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


# as `icount serve` writes them on a pipe (icount/cli/progress.py, serve/session.py)
LINES = [
    (0.4, "icount: backend callgrind: perf cannot count instructions:u here"),
    (0.5, "icount: building c-epoll"),
    (1.0, "icount: building go-http"),
    (20.0, "icount: [0/6] c-epoll/plaintext/callgrind run 1/3: warm-up: 100 requests"),
    (25.0, "icount: [1/6] c-epoll/json/callgrind run 1/3: rep 1/3: 1000 requests (cell eta 7 s)"),
    (30.0, "icount: node-http runs a JIT runtime (node): it warms up with --warmup auto"),
    (32.0, "icount: [3/6] go-http/plaintext/callgrind memory: native run"),
    (70.0, "icount: results in /tmp/x.json (server outputs in /tmp/x.artifacts/)"),
]


def test_each_line_until_the_next_goes_to_the_target_it_names() -> None:
    m = bench()
    assert m.target_of(LINES[1][1]) == "c-epoll"
    assert m.target_of(LINES[3][1]) == "c-epoll"
    assert m.target_of(LINES[5][1]) is None
    assert m.target_of(LINES[7][1]) is None
    per = m.split_by_target(LINES, 71.5)
    # c-epoll: its build (0.5 s) and its cells (20-32); go-http: its build and the rest
    assert per == {m.STARTUP: 0.5, "c-epoll": 0.5 + 12.0, "go-http": 19.0 + 39.5}
    assert sum(per.values()) == 71.5
    assert m.split_by_target([], 3.0) == {m.STARTUP: 3.0}


def test_the_report_shows_every_cell_both_ways_and_the_ratio_per_target() -> None:
    m = bench()
    s = m.Session
    new_cells = {"c-epoll/json/callgrind": "900.000 valid",
                 "c-epoll/plaintext/callgrind": "883.027 valid"}  # fmt: skip
    sessions = [
        s("new", 0, "c-epoll", 0, 20.0, {m.STARTUP: 2.0, "c-epoll": 18.0}, new_cells),
        s("old", 0, "c-epoll", 5, 40.0, {"c-epoll": 40.0},
          {"c-epoll/plaintext/callgrind": "883.027 INVALID (spread)"}),
        s("new", 0, "node-http", 0, 30.0, {m.STARTUP: 1.0, "node-http": 29.0}, {}),
        s("old", 0, "node-http", 2, 60.0, {m.STARTUP: 1.0, "node-http": 59.0},
          "does not load with this checkout: ResultsError: no"),
    ]  # fmt: skip
    assert m.report_rev(sessions, ["c-epoll", "node-http"], 1) == [
        "round 1 c-epoll: new exit 0 in 20.0 s, old exit 5 in 40.0 s",
        "    c-epoll/json/callgrind",
        "        new 900.000 valid",
        "        old (no such cell)",
        "    c-epoll/plaintext/callgrind",
        "        new 883.027 valid",
        "        old 883.027 INVALID (spread)",
        "round 1 node-http: new exit 0 in 30.0 s, old exit 2 in 60.0 s",
        "    old: does not load with this checkout: ResultsError: no",
        "",
        "wall seconds (per target from the progress lines on stderr):",
        "target                     new s     old s  new/old",
        "(start-up)                   3.0       1.0    3.000",
        "c-epoll                     18.0      40.0    0.450",
        "node-http                   29.0      59.0    0.492",
        "whole sessions:",
        "c-epoll                     20.0      40.0    0.500",
        "node-http                   30.0      60.0    0.500",
        "all                         50.0     100.0    0.500",
    ]


def test_rounds_take_the_median_and_a_target_on_one_side_has_no_ratio() -> None:
    m = bench()
    s = m.Session
    sessions = [
        s("new", r, "quickstart", 0, wall, {"c-epoll": wall - 1.0, "jvm-http": 1.0}, {})
        for r, wall in enumerate((10.0, 30.0, 11.0))
    ] + [s("old", r, "quickstart", 0, 20.0, {"c-epoll": 20.0}, {}) for r in range(3)]
    lines = m.report_rev(sessions, ["quickstart"], 3)
    assert lines[-6:] == [
        "wall seconds (median of the rounds, per target from the progress lines on stderr):",
        "target                     new s     old s  new/old",
        "c-epoll                     10.0      20.0    0.500",
        "jvm-http                     1.0         -        -",
        "whole sessions:",
        "quickstart                  11.0      20.0    0.550",
    ]


def test_a_results_file_that_does_not_load_is_reported_not_raised(tmp_path: Path) -> None:
    m = bench()
    bad = tmp_path / "old.json"
    bad.write_text('{"format": "icount-results", "version": 999}')
    assert m.read_cells(bad).startswith("does not load with this checkout: ")
    assert m.read_cells(tmp_path / "none.json") == "no results file written"
