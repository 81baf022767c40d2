"""A cell's profile from its windows (results/cell_profile.py): medians per request, the top
functions and the rest, allocations; kept in the results file and read back checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icount import results
from icount.callgrind.functions import allocator_kind
from icount.results import UNIT_PER_REQUEST, Cell, Results, Run
from icount.results.cell_profile import PER_REQUEST, cell_profile
from icount.window_profile import FunctionCost, WindowProfile, sum_windows


def window(
    costs: dict[str, tuple[float, float, int]], allocs: int = 0, top: int = 2
) -> WindowProfile:
    return WindowProfile({k: FunctionCost(*v) for k, v in costs.items()}, allocs, allocs, top)


def test_medians_per_request_top_functions_and_the_rest() -> None:
    # three windows of 100 requests: handle costs 50, 52 and 51 a request
    windows = [
        (window({"handle": (5000, 9000, 100), "parse": (3000, 3000, 200), "log": (10, 10, 1),
                 "0x401000": (5, 5, 0), "0x402000": (5, 5, 0)}, allocs=300), 100),
        (window({"handle": (5200, 9200, 100), "parse": (3000, 3000, 200), "log": (30, 30, 3)},
                allocs=300), 100),
        (window({"handle": (5100, 9100, 100), "parse": (3000, 3000, 200)}, allocs=300), 100),
    ]  # fmt: skip
    p = cell_profile(windows)
    assert p is not None and p.per == PER_REQUEST and p.windows == 3 and p.top == 2
    assert [(f.name, f.self_ir, f.inclusive, f.calls) for f in p.functions] == [
        ("handle", 51.0, 91.0, 1.0),
        ("parse", 30.0, 30.0, 2.0),
    ]
    # log and the code without a symbol (two addresses, one row): their median per request
    assert p.others.functions == 2
    assert p.others.self_ir == 0.2  # windows: 0.2, 0.3, 0.0
    assert p.allocations == 3.0 and p.frees == 3.0


def test_no_profile_without_windows_or_with_top_0() -> None:
    assert cell_profile([]) is None
    assert cell_profile([(window({"f": (1, 1, 1)}, top=0), 1)]) is None


def test_the_processes_of_a_window_are_summed_and_recursion_levels_pooled() -> None:
    both = sum_windows([window({"f": (10, 30, 1)}, allocs=2), window({"f": (5, 5, 1)}, allocs=1)])
    assert both.costs["f"] == FunctionCost(15, 35, 2) and both.allocations == 3
    assert dict(both) == {"f": 15}  # as a mapping: self costs, what the spread notes read
    rec = window({"fib": (10, 100, 1), "fib'2": (90, 90, 9)}).pooled()
    assert rec == {"fib": FunctionCost(100, 100, 10)}


@pytest.mark.parametrize(
    ("name", "kind"),
    [("malloc", 1), ("operator new(unsigned long)", 1), ("__rust_alloc", 1),
     ("runtime.mallocgc", 1), ("_PyObject_Malloc", 1), ("free", 2),
     ("operator delete(void*, unsigned long)", 2), ("PyObject_Free", 2), ("mallocx_ok", 0),
     ("malloc'2", 1), ("handle", 0)],
)  # fmt: skip
def test_allocator_entry_points(name: str, kind: int) -> None:
    assert allocator_kind(name) == kind


def _cell(profile_windows: list[tuple[WindowProfile, int]]) -> Cell:
    return Cell("srv", "json", "callgrind", UNIT_PER_REQUEST, (Run(81.0, True),), {}, 1, 0.01,
                profile=cell_profile(profile_windows))  # fmt: skip


def test_kept_in_the_file_and_read_back(tmp_path: Path) -> None:
    c = _cell([(window({"handle": (8000, 8000, 100), "x": (100, 100, 1)}, allocs=200), 100)])
    out = tmp_path / "r.json"
    results.save(out, Results({"backend": "callgrind"}, (c,)), None, overwrite=False)
    back = results.load(out)
    assert back.cells[0].profile == c.profile
    doc = json.loads(out.read_text())
    assert doc["cells"][0]["profile"]["functions"][0] == ["handle", 80.0, 80.0, 1.0]
    assert doc["cells"][0]["profile"]["allocations"] == 2.0


def test_a_cell_without_a_profile_writes_none() -> None:
    assert "profile" not in Cell("a", "", "callgrind", "instructions", (Run(1.0, True),), {}, 1,
                                 0.01).to_json()  # fmt: skip


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda p: p.update(per="week"), "cell.profile.per is 'week'"),
        (lambda p: p["functions"][0].pop(), "is [name, self, inclusive, calls]"),
        (lambda p: p["functions"][0].__setitem__(1, -5), "functions[] self -5 is negative"),
        (lambda p: p.update(allocations="many"), "cell.profile.allocations is not a number"),
        (lambda p: p["others"].pop("calls"), "missing field 'calls'"),
    ],
)
def test_a_damaged_profile_is_refused_naming_the_field(tmp_path: Path, edit, said) -> None:  # type: ignore[no-untyped-def]
    c = _cell([(window({"handle": (8000, 8000, 100)}), 100)])
    out = tmp_path / "r.json"
    results.save(out, Results({"backend": "callgrind"}, (c,)), None, overwrite=False)
    doc = json.loads(out.read_text())
    edit(doc["cells"][0]["profile"])
    out.write_text(json.dumps(doc))
    with pytest.raises(Exception) as e:
        results.load(out)
    assert said in str(e.value) and "cell srv/json/callgrind" in str(e.value)


def test_the_costliest_calls_are_kept_per_request_and_read_back(tmp_path: Path) -> None:
    edges = {("main", "f"): 900.0, ("f", "f'2"): 50.0, ("0x1", "main"): 1000.0}
    costs = {"main": FunctionCost(100, 1000, 1), "f'2": FunctionCost(0, 0, 1)}
    w = WindowProfile(costs, top=1, edges=edges)
    c = _cell([(w, 10)])
    assert c.profile is not None
    # per request, largest first; a recursion level stays a layer of its own
    assert [(e.caller, e.callee, e.inclusive) for e in c.profile.edges] == [
        ("[code without a symbol: JIT-compiled or stripped]", "main", 100.0),
        ("main", "f", 90.0),
        ("f", "f'2", 5.0),
    ]
    out = tmp_path / "r.json"
    results.save(out, Results({"backend": "callgrind"}, (c,)), None, overwrite=False)
    assert results.load(out).cells[0].profile == c.profile
