"""Recursion in the flame graph (icount/charts/flame.py): each box holds callgrind's
inclusive figure where a function recurses through itself or through another, or is a
root whose deeper levels do the work (a static binary's `(below main)` -> `(below
main)'2` -> `main`); a level is its own box, as callgrind records it."""

from __future__ import annotations

import html
import re
from dataclasses import replace

from icount.charts.figure import inline
from icount.charts.flame import _graph, _layers, flame_figure, flame_sections
from icount.results import UNIT_INSTRUCTIONS, Cell, Run
from icount.results.cell_profile import PER_RUN, CellProfile, cell_profile
from icount.window_profile import UNNAMED, FunctionCost, WindowProfile


def _profile(
    costs: dict[str, tuple[float, float]], edges: dict[tuple[str, str], float]
) -> CellProfile:
    window = WindowProfile({n: FunctionCost(s, i, 1) for n, (s, i) in costs.items()}, top=10,
                           edges=edges)  # fmt: skip
    p = cell_profile([(window, 1)], PER_RUN)
    assert p is not None
    return p


def _widths(p: CellProfile) -> dict[tuple[str, ...], float]:
    return {m.path: m.value for m in _layers(_graph(p.flame()))[0]}


# what callgrind records of a static glibc binary: _start, __libc_start_main and
# __libc_start_call_main are all `(below main)` in one object and file, two of them levels
STATIC = _profile(
    {"(below main)": (10, 1010), "(below main)'2": (5, 1000), "main": (900, 995), "work": (95, 95)},
    {("(below main)", "(below main)'2"): 1000.0, ("(below main)'2", "main"): 995.0,
     ("main", "work"): 95.0},
)  # fmt: skip


def test_a_root_whose_recursion_level_calls_main_draws_main_whole() -> None:
    widths = _widths(STATIC)
    below = ("(below main)", "(below main)'2")
    assert widths == {below[:1]: 1010.0, below: 1000.0, (*below, "main"): 995.0,
                      (*below, "main", "work"): 95.0}  # fmt: skip


# main -> ping -> pong -> ping'2 -> pong'2: callgrind's inclusive figures are ping 100,
# pong 50, ping'2 40, pong'2 15; the rows pool ping with ping'2 (self 50 + 25) and pong
# with pong'2 (self 10 + 15)
MUTUAL = _profile(
    {"main": (100, 200), "ping": (50, 100), "ping'2": (25, 40), "pong": (10, 50),
     "pong'2": (15, 15)},
    {("main", "ping"): 100.0, ("ping", "pong"): 50.0, ("pong", "ping'2"): 40.0,
     ("ping'2", "pong'2"): 15.0},
)  # fmt: skip


def test_mutual_recursion_draws_each_level_at_callgrinds_figures() -> None:
    path = ("main", "ping", "pong", "ping'2", "pong'2")
    assert _widths(MUTUAL) == {path[: k + 1]: w for k, w in enumerate((200, 100, 50, 40, 15))}
    body = html.unescape(inline(flame_figure(MUTUAL, "cell", "f")))  # type: ignore[arg-type]
    whole = dict(re.findall(r"<title>([^:<]+): [^<]*; ([\d,.]+) in all its calls", body))
    # the totals callgrind has, never the pooled levels' (ping 100 + 25 of ping'2)
    assert whole == {"ping": "100", "pong": "50", "ping'2": "40", "pong'2": "15"}
    assert "ping'2: 40 instructions per run on this path" in body
    assert "40 in all its calls of this recursion level of ping" in body


def test_direct_recursion_keeps_each_level_under_the_one_above() -> None:
    p = _profile(
        {"main": (10, 110), "fib": (30, 100), "fib'2": (50, 70), "leaf": (20, 20)},
        {("main", "fib"): 100.0, ("fib", "fib'2"): 70.0, ("fib'2", "leaf"): 20.0},
    )
    widths = _widths(p)
    assert widths[("main", "fib")] == 100.0
    assert widths[("main", "fib", "fib'2")] == 70.0
    assert widths[("main", "fib", "fib'2", "leaf")] == 20.0


def test_a_profile_all_without_a_symbol_says_why_it_has_no_flame_graph() -> None:
    # what a static stripped binary's profile keeps: one pool, no calls between functions
    pool = _profile({UNNAMED: (274_889, 274_889)}, {})
    cell = Cell("prog", "", "callgrind", UNIT_INSTRUCTIONS, (Run(274_889.0, True),), {}, 1,
                0.01, profile=pool)  # fmt: skip
    parts = flame_sections([cell], "s")
    assert parts == [
        '<p class="muted">No flame graph: prog/callgrind: all its code is without a symbol '
        "(stripped), one pool with no calls between functions to draw.</p>"
    ]
    assert flame_sections([replace(cell, profile=None)], "s") == []
