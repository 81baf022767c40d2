"""Name alignment and per-name statistics of `icount inline`."""

from __future__ import annotations

from pathlib import Path

from icount.callgrind.parser import parse_bytes, parse_file
from icount.inline.align import NO_SYMBOL, align, normalise_name, side_of

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "callgrind"


def test_normalise_name() -> None:
    assert normalise_name("fib'2") == "fib"
    assert normalise_name("fib.part.0") == "fib.part.0"  # a real clone, kept apart
    assert normalise_name("app::main::h0123456789abcdef") == "app::main"
    assert normalise_name("app::main::h0123456789abcdef'2") == "app::main"
    assert normalise_name("ns::f(int)") == "ns::f(int)"
    assert normalise_name("0x000000000001ab70") == NO_SYMBOL


def test_recursion_levels_fold_into_one_function() -> None:
    # fib(15): 1973 calls of fib, 1 from main and 1972 from fib itself.
    side = side_of([parse_file(FIXTURES / "fib.out")], "Ir")
    assert side.functions["fib"].calls == 1973
    assert side.edges[("fib", "fib")].count == 1972
    assert side.edges[("main", "fib")].count == 1
    assert "fib'2" not in side.functions
    # fib's inclusive cost is what main's call to it cost: nothing counted twice.
    assert side.functions["fib"].inclusive == side.edges[("main", "fib")].cost
    assert sum(f.self_cost for f in side.functions.values()) == side.total


def test_inclusive_never_exceeds_the_total_on_real_files() -> None:
    for name in ("fib.out", "threads.out", "fib-cache.out"):
        side = side_of([parse_file(FIXTURES / name)], "Ir")
        worst = max(f.inclusive for f in side.functions.values())
        assert 0 < worst <= side.total, name


def test_threads_sum_into_one_side() -> None:
    files = [FIXTURES / f"threads-sep.out-0{k}" for k in (1, 2, 3)]
    side = side_of([parse_file(f) for f in files], "Ir")
    assert side.total == sum(parse_file(f).totals["Ir"] for f in files)
    assert side.functions["spin"].calls == 2


_A = b"""events: Ir
fn=main
1 10
cfn=helper
calls=5 1
1 50
fn=helper
1 50
"""
_B = b"""events: Ir
fn=main
1 60
"""


def test_align_reports_the_inlined_helper() -> None:
    a = side_of([parse_bytes(_A, "a")], "Ir")
    b = side_of([parse_bytes(_B, "b")], "Ir")
    al = align(a, b)
    assert [d.name for d in al.only_a] == ["helper"]
    assert al.only_b == []
    assert [(e.caller, e.callee, e.count_delta) for e in al.edges] == [("main", "helper", -5)]
    main = next(d for d in al.functions if d.name == "main")
    assert main.self_delta == 50 and main.inclusive_delta == 0
    assert [d.name for d in al.functions] == ["helper", "main"]  # ties: by name


def test_a_name_shared_by_functions_counts_those_no_other_of_them_reaches() -> None:
    # three static `leaf`s (three files): leaf(a) calls hub, which calls leaf(c);
    # leaf(b) reaches only itself (through loop). leaf(c)'s cost is inside leaf(a)'s.
    text = """events: Ir
fl=a.c
fn=leaf
1 10
cfl=h.c
cfn=hub
calls=1 1
1 25
fl=b.c
fn=leaf
1 7
cfl=l.c
cfn=loop
calls=1 1
1 9
fl=h.c
fn=hub
1 5
cfl=c.c
cfn=leaf
calls=1 1
1 20
fl=c.c
fn=leaf
1 20
fl=l.c
fn=loop
1 1
cfl=b.c
cfn=leaf
calls=1 1
1 8
"""
    side = side_of([parse_bytes(text.encode(), "leaf")], "Ir")
    leaf = side.functions["leaf"]
    assert leaf.self_cost == 10 + 7 + 20
    assert leaf.inclusive == (10 + 25) + (7 + 9)  # leaf(a) and leaf(b), not leaf(c) again


def test_a_member_reached_through_a_node_that_holds_two_sources_is_nested() -> None:
    # three static `leaf`s, each calling hub, which calls leaf(c): hub is reached from
    # all three, leaf(c) only through hub; the sources hub keeps (two) must include
    # one other than leaf(c), whichever of them is walked first
    text = "events: Ir\n"
    for f, own in (("a", 10), ("b", 7), ("c", 20)):
        text += f"fl={f}.c\nfn=leaf\n1 {own}\ncfl=h.c\ncfn=hub\ncalls=1 1\n1 30\n"
    text += "fl=h.c\nfn=hub\n1 5\ncfl=c.c\ncfn=leaf\ncalls=1 1\n1 25\n"
    side = side_of([parse_bytes(text.encode(), "hub")], "Ir")
    leaf = side.functions["leaf"]
    assert leaf.self_cost == 10 + 7 + 20
    assert leaf.inclusive == (10 + 30) + (7 + 30)  # leaf(a) and leaf(b): leaf(c) is inside
