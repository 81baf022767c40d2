"""A compiler's copies (names.clone_base) as compare's explanation, the flame graph and
`icount inline` pair them: gcc's numbered suffixes and the `[clone ...]` a demangled C++
copy carries are a copy of their function; a Go function `part` of package `main` is
not one of `main`."""

from __future__ import annotations

import pytest

from icount.compare.explain import Elsewhere, Move, Net
from icount.compare.inlined import netted
from icount.compare.model import compare
from icount.compare.thresholds import Thresholds
from icount.names import clone_base, recursion_base
from icount.results import UNIT_INSTRUCTIONS, Cell, Results, Run
from icount.results.cell_profile import PER_RUN, cell_profile
from icount.window_profile import FunctionCost, WindowProfile


@pytest.mark.parametrize(
    ("name", "base"),
    [
        ("f.constprop.0", "f"),
        ("f.isra.12", "f"),
        ("f.part.0", "f"),
        ("f.cold", "f"),
        ("f.lto_priv.0", "f"),
        ("f.isra.0.cold", "f"),
        ("f.llvm.8391057214593410247", "f"),
        ("f.part.0'2", "f'2"),
        ("scale(long*, int, long) [clone .constprop.0]", "scale(long*, int, long)"),
        ("scale [clone .isra.0] [clone .cold]", "scale"),
        ("ns::A::f(int) [clone .part.0]", "ns::A::f(int)"),
        # no copies: the number gcc always writes is missing, or what is left is a path
        ("main.part", "main.part"),
        ("runtime.part", "runtime.part"),
        ("main.constprop", "main.constprop"),
        ("main.(*T).part.0", "main.(*T).part.0"),
        ("f.c", "f.c"),
        ("fib'2", "fib'2"),
    ],
)
def test_a_copys_function(name: str, base: str) -> None:
    assert clone_base(name) == base


def test_a_recursion_level_is_of_its_function() -> None:
    assert [recursion_base(n) for n in ("fib'2", "fib'12", "fib", "a'b")] == [
        "fib",
        "fib",
        "fib",
        "a'b",
    ]


def _cell(costs: dict[str, float]) -> Cell:
    w = WindowProfile({k: FunctionCost(v, v, 1) for k, v in costs.items()}, top=10)
    runs = (Run(sum(costs.values()), True),) * 3
    return Cell("cl", "", "callgrind", UNIT_INSTRUCTIONS, runs, {}, 3, 0.01,
                profile=cell_profile([(w, 1)], PER_RUN))  # fmt: skip


def _moves(
    base: dict[str, float], new: dict[str, float]
) -> dict[str, tuple[float | None, float | None]]:
    c = compare(Results({}, (_cell(base),)), Results({}, (_cell(new),)), Thresholds(0.0, (), 0))
    assert c.rows[0].explained is not None
    return {m.name: (m.base, m.new) for m in c.rows[0].explained.moves}


def test_a_cxx_copy_is_its_functions_row_in_the_explanation() -> None:
    # g++ -O2 made a .constprop copy of scale in one build and not in the other (the
    # review's cl.cc: 3,077 and 3,079 instructions)
    moves = _moves({"main": 1000.0, "scale(long*, int, long) [clone .constprop.0]": 3077.0},
                   {"main": 1000.0, "scale(long*, int, long)": 3079.0})  # fmt: skip
    assert moves == {"scale(long*, int, long)": (3077.0, 3079.0)}


def test_a_go_function_named_like_a_copy_keeps_its_own_row() -> None:
    moves = _moves({"main.main": 100.0, "main.part": 50.0, "main": 10.0},
                   {"main.main": 100.0, "main.part": 80.0, "main": 10.0})  # fmt: skip
    assert moves == {"main.part": (50.0, 80.0)}


def test_a_cxx_method_is_netted_of_what_dwarf_says_was_inlined_into_it() -> None:
    # DWARF names the holder `handle`; the profile's rows `Server::handle(int)`
    handle = Move("Server::handle", 6032.0, 20.0, -6012.0, -0.46, False)
    cost = Move("cost", None, 18031.0, 18031.0, 1.38, True, Elsewhere("base", (("handle", 2),)))
    got = {m.name: m for m in netted((handle, cost))}
    assert got["Server::handle"].net == Net(("cost",), 6032.0, 18051.0)
    # two methods of that name: which one is not known, so neither is netted
    other = Move("Client::handle", 10.0, 12.0, 2.0, 0.0, False)
    assert all(m.net is None for m in netted((handle, other, cost)))
