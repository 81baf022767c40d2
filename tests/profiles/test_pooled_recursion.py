"""A window's functions with callgrind's recursion levels pooled (profiles.pooled): the
function's inclusive cost is its first level's, which holds the deeper levels', never
their sum or the costliest level's when a mutual recursion inflates those."""

from __future__ import annotations

from icount.window_profile import FunctionCost, WindowProfile


def test_a_mutual_recursions_function_keeps_its_first_levels_inclusive() -> None:
    # callgrind's figures for main -> ping -> pong -> ping'2 -> pong'2 -> ping'3: a
    # level's inclusive counts what is under it again, so ping'2's exceeds ping's
    w = WindowProfile({
        "ping": FunctionCost(50, 100, 1), "ping'2": FunctionCost(25, 140, 1),
        "ping'3": FunctionCost(5, 5, 1), "pong": FunctionCost(10, 50, 1),
        "pong'2": FunctionCost(15, 20, 1),
    })  # fmt: skip
    pooled = w.pooled()
    assert pooled["ping"] == FunctionCost(80, 100, 3)
    assert pooled["pong"] == FunctionCost(25, 50, 2)


def test_a_window_opened_inside_a_recursion_takes_its_costliest_level() -> None:
    w = WindowProfile({"fib'3": FunctionCost(5, 40, 1), "fib'4": FunctionCost(30, 30, 2)})
    assert w.pooled()["fib"] == FunctionCost(35, 40, 3)
