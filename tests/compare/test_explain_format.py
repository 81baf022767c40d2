"""Explanations that read (compare/explain.py, compare/inlined.py `netted`): plain
figures with thousands separators, a move against its base as a percentage up to
doubling and a ratio beyond, each share said to be of the cell's change, a caller netted
of what the compiler inlined into it, and a compiler's copies of a function
(`.constprop.0`, `.isra.0`, `.part.0`, `.cold`, `.lto_priv.0`) matched with it."""

from __future__ import annotations

import json

import pytest

from icount.compare import explain, render
from icount.compare.explain import Elsewhere, Move, Net, moves_from_json, relative
from icount.compare.inlined import netted
from icount.compare.model import compare
from icount.compare.thresholds import Thresholds
from icount.names import clone_base
from icount.results import UNIT_INSTRUCTIONS, Cell, Results, Run
from icount.results.cell_profile import PER_RUN, cell_profile
from icount.window_profile import FunctionCost, WindowProfile

T = Thresholds(0.01, (), 10)


def _cell(costs: dict[str, float]) -> Cell:
    w = WindowProfile({k: FunctionCost(v, v, 1) for k, v in costs.items()}, top=10)
    runs = (Run(sum(costs.values()), True),) * 3
    return Cell("lz4", "", "callgrind", UNIT_INSTRUCTIONS, runs, {}, 3, 0.01,
                profile=cell_profile([(w, 1)], PER_RUN))  # fmt: skip


# issue 31's lz4: the -O3 build inlined LZ4_compress_fast into main and made a
# .constprop.0 copy of LZ4_compress_generic
BASE = {"main": 994766.0, "LZ4_compress_fast": 1873000.0, "LZ4_compress_generic": 500000.0,
        "memcpy": 40000.0}  # fmt: skip
NEW = {"main": 2903423.0, "LZ4_compress_generic.constprop.0": 489000.0, "memcpy": 90000.0}


def _moves(base: dict[str, float], new: dict[str, float]) -> dict[str, Move]:
    c = compare(Results({}, (_cell(base),)), Results({}, (_cell(new),)), T)
    assert c.rows[0].explained is not None
    return {m.name: m for m in c.rows[0].explained.moves}


def test_figures_are_plain_and_each_share_says_what_it_is_of() -> None:
    main = _moves(BASE, NEW)["main"]
    text = explain.move_text(main)
    # the cell moved 74,657; main alone 25 times that, said as a plain figure
    assert text == "994,766 -> 2,903,423 (+1,908,657, x2.92; 2,556.6% of the cell's change)"
    assert "e+" not in text
    assert [relative(100, 142.1), relative(100, 70), relative(100, 292), relative(0, 5)] == [
        "+42.1%",
        "-30.0%",
        "x2.92",
        "",
    ]


def test_a_compilers_copy_is_matched_with_its_function_and_named() -> None:
    moves = _moves(BASE, NEW)
    generic = moves["LZ4_compress_generic"]
    assert (generic.base, generic.new, generic.delta) == (500000.0, 489000.0, -11000.0)
    assert generic.clones == ((), ("LZ4_compress_generic.constprop.0",))
    assert "LZ4_compress_generic.constprop.0" not in moves
    text = explain.move_text(generic)
    assert text.startswith("500,000 -> 489,000 (-11,000, -2.2%; -14.7% of the cell's change; "
                           "new as LZ4_compress_generic.constprop.0")  # fmt: skip
    names = ["f.constprop.0", "f.isra.0", "f.part.0", "f.cold", "f.lto_priv.0", "f.isra.0.cold"]
    assert {clone_base(n) for n in names} == {"f"}
    assert clone_base("f.c") == "f.c" and clone_base("fib'2") == "fib'2"


def test_a_caller_is_netted_of_the_function_inlined_into_it() -> None:
    moves = _moves(BASE, NEW)
    fast = moves["LZ4_compress_fast"]
    fast = Move(fast.name, fast.base, fast.new, fast.delta, fast.share, fast.approx,
                Elsewhere("new", (("main", 1),)))  # fmt: skip
    got = {m.name: m for m in netted((moves["main"], fast, moves["LZ4_compress_generic"]))}
    net = got["main"].net
    assert net == Net(("LZ4_compress_fast",), 994766.0 + 1873000.0, 2903423.0)
    text = explain.move_text(got["main"])
    assert text.endswith(
        "; with LZ4_compress_fast inlined into it: 2,867,766 -> 2,903,423 "
        "(+35,657, +1.2%; instead of main's and LZ4_compress_fast's moves))"
    )
    # main net of what it took in, the copy of LZ4_compress_generic and memcpy: the
    # cell's change, and their shares of it add up
    cell = sum(NEW.values()) - sum(BASE.values())
    assert 35657 + got["LZ4_compress_generic"].delta + moves["memcpy"].delta == cell
    shares = [35657 / cell, got["LZ4_compress_generic"].share, moves["memcpy"].share]
    assert sum(s or 0.0 for s in shares) == pytest.approx(1.0, abs=1e-3)
    assert got["LZ4_compress_generic"].net is None  # nothing was inlined into it
    # a function inlined into several callers is not split among them
    spread = Move(fast.name, fast.base, None, fast.delta, fast.share, False,
                  Elsewhere("new", (("main", 1), ("LZ4_compress_generic", 1))))  # fmt: skip
    assert all(m.net is None for m in netted((moves["main"], spread)))


def test_clones_and_nets_go_through_the_comparisons_json() -> None:
    moves = _moves(BASE, NEW)
    generic = moves["LZ4_compress_generic"]
    netted_main = Move("main", 1.0, 3.0, 2.0, 0.5, False, net=Net(("f",), 2.0, 3.0))
    doc = {"functions": [json.loads(json.dumps(m.to_json())) for m in (generic, netted_main)]}
    assert moves_from_json(doc) == (generic, netted_main)
    assert "clones" not in json.dumps(moves["memcpy"].to_json())
    c = compare(Results({}, (_cell(BASE),)), Results({}, (_cell(NEW),)), T)
    md = render.render_md(c)
    assert "`LZ4_compress_generic` 500,000 -> 489,000 (-11,000, -2.2%;" in md


def test_the_rest_of_the_change_is_said_so_that_the_shares_add_up() -> None:
    base = {f"f{k}": 1000.0 for k in range(8)}
    new = {f"f{k}": 1000.0 + 100 * (8 - k) for k in range(8)}  # f0 +800 ... f7 +100
    c = compare(Results({}, (_cell(base),)), Results({}, (_cell(new),)), T)
    e = c.rows[0].explained
    assert e is not None and [m.name for m in e.moves] == ["f0", "f1", "f2", "f3", "f4"]
    # f5, f6 and f7: 600 of the cell's 3,600
    assert e.rest == (600.0, round(600 / 3600, 4))
    assert "; the rest +600 (16.7% of the cell's change)" in render.build_table(c).notes[0]
    assert "  - the rest +600 (16.7% of the cell's change)\n" in render.render_md(c)
    shares = [m.share or 0.0 for m in e.moves] + [e.rest[1]]
    assert sum(shares) == pytest.approx(1.0, abs=1e-3)
    assert render.to_json(c)["cells"][0]["explained"]["rest"] == {"delta": 600.0, "share": 0.1667}
    assert _moves(BASE, NEW) and "rest" not in json.dumps(
        render.to_json(compare(Results({}, (_cell(BASE),)), Results({}, (_cell(NEW),)), T))
    )  # every function of the change named: no rest


def test_the_rest_is_about_where_a_move_named_is_a_bound() -> None:
    e = explain.Explanation("run", (Move("f", None, 50.0, 50.0, 0.5, True),), None, None,
                            (50.0, 0.5))  # fmt: skip
    assert explain.rest_text(e) == "the rest about +50 (50.0% of the cell's change)"
    exact = explain.Explanation("run", (Move("f", 0.0, 50.0, 50.0, 0.5, False),), None, None,
                                (50.0, 0.5))  # fmt: skip
    assert explain.rest_text(exact) == "the rest +50 (50.0% of the cell's change)"
