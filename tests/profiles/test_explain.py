"""`icount compare` names the functions behind a changed cell (compare/explain.py),
from profiles built by hand: their self costs per request are known exactly."""

from __future__ import annotations

import json

from icount.compare import render
from icount.compare.model import Verdict, compare
from icount.compare.thresholds import Thresholds
from icount.results import UNIT_PER_REQUEST, Cell, Results, Run
from icount.results.cell_profile import cell_profile
from icount.window_profile import FunctionCost, WindowProfile

T = Thresholds(0.01, (), 10)


def _cell(value: float, functions: dict[str, float] | None, path: str = "json") -> Cell:
    profile = None
    if functions is not None:
        w = WindowProfile({k: FunctionCost(v * 100, v * 100, 100) for k, v in functions.items()},
                          allocations=300 if value > 1200 else 200, top=3)  # fmt: skip
        profile = cell_profile([(w, 100)])
    runs = tuple(Run(value, True) for _ in range(3))
    return Cell("srv", path, "callgrind", UNIT_PER_REQUEST, runs, {}, 3, 0.01, profile=profile)


def _res(*cells: Cell) -> Results:
    return Results({"backend": "callgrind"}, cells)


BASE = {"handle": 600.0, "std::vector<int>::push_back(int const&)": 300.0, "io": 90.0, "x": 10.0}
NEW = {"handle": 600.0, "std::vector<long>::push_back(long const&)": 800.0, "io": 90.0, "x": 10.0}


def test_the_function_that_moved_is_named_first_with_its_exact_delta_and_share() -> None:
    c = compare(_res(_cell(1000, BASE)), _res(_cell(1500, NEW)), T)
    (row,) = c.rows
    assert row.verdict is Verdict.REGRESSED and row.explained is not None
    first = row.explained.moves[0]
    # matched across builds by the short name: the template argument changed
    assert first.name == "std::vector::push_back"
    assert (first.base, first.new, first.delta, first.share) == (300.0, 800.0, 500.0, 1.0)
    assert not first.approx
    assert len(row.explained.moves) == 1  # nothing else moved
    assert row.explained.allocations == (2.0, 3.0)

    table = "\n".join(t for t in render.build_table(c).notes)
    assert "srv/json: moved most (self instructions per request): std::vector::push_back " \
        "300 -> 800 (+500, x2.67; 100.0% of the cell's change); allocations per request " \
        "2 -> 3" in table  # fmt: skip
    md = render.render_md(c)
    assert (
        "  - `std::vector::push_back` 300 -> 800 (+500, x2.67; 100.0% of the cell's change)\n" in md
    )
    doc = render.to_json(c)["cells"][0]["explained"]
    assert doc["functions"][0] == {"function": "std::vector::push_back", "base": 300.0,
                                   "new": 800.0, "delta": 500.0, "share": 1.0,
                                   "approx": False}  # fmt: skip


def test_a_function_outside_a_sides_top_is_a_bound() -> None:
    new = {**BASE, "fresh": 700.0}  # top 3: x and io fall into the others of new
    c = compare(_res(_cell(1000, BASE)), _res(_cell(1700, new)), T)
    moves = c.rows[0].explained.moves  # type: ignore[union-attr]
    assert (moves[0].name, moves[0].base, moves[0].delta, moves[0].approx) == (
        "fresh",
        None,
        700.0,
        True,
    )
    assert (
        "fresh - -> 700 (at least +700; 100.0% of the cell's change)"
        in render.build_table(c).notes[0]
    )


def test_cells_without_profiles_compare_as_before() -> None:
    with_profiles = compare(_res(_cell(1000, None)), _res(_cell(1500, None)), T)
    assert with_profiles.rows[0].explained is None
    assert "explained" not in json.dumps(render.to_json(with_profiles))
    assert not any("moved most" in n for n in render.build_table(with_profiles).notes)
    one_side = compare(_res(_cell(1000, BASE)), _res(_cell(1500, None)), T)
    assert one_side.rows[0].explained is None


def test_unchanged_cells_are_not_explained() -> None:
    c = compare(_res(_cell(1000, BASE)), _res(_cell(1001, BASE)), T)
    assert c.rows[0].verdict is Verdict.UNCHANGED and c.rows[0].explained is None


def test_the_report_lists_the_moves_under_the_changed_cell() -> None:
    from icount.charts.page import ComparisonInput, comparison_section
    from icount.compare.drawn import comparison_from_json

    c = compare(_res(_cell(1000, BASE)), _res(_cell(1500, NEW)), T)
    doc = comparison_from_json(json.loads(json.dumps(render.to_json(c))), "c.json")
    (row,) = doc.rows
    assert row.moves == c.rows[0].explained.moves  # type: ignore[union-attr]
    html = comparison_section(ComparisonInput("c.json", doc), "s1")
    assert '<ul class="moved"><li><code>std::vector::push_back</code> 300 -&gt; 800 ' \
        "(+500, x2.67; 100.0% of the cell&#x27;s change)</li></ul>" in html  # fmt: skip


def test_a_damaged_explanation_is_refused_naming_the_cell() -> None:
    import pytest

    from icount.compare.drawn import comparison_from_json
    from icount.errors import ParseError

    c = compare(_res(_cell(1000, BASE)), _res(_cell(1500, NEW)), T)
    doc = render.to_json(c)
    doc["cells"][0]["explained"]["functions"][0]["delta"] = "a lot"
    with pytest.raises(ParseError) as e:
        comparison_from_json(doc, "c.json")
    assert "cell 1: explained.functions[].delta is not a number" in str(e.value)
