"""A cell's stored profile is checked against the cell: the medians over its windows
(results/cell_profile.py) cannot exceed the counts of those windows. A profile claiming 5e14
instructions for `main` in a cell of 120k loaded, and compare 'explained' its change as
+8.33e+12%."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from icount import results
from icount.errors import ResultsFileError

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / "tests" / "compare" / "runtime" / "node-json.json"  # measured, with a profile


def _doc() -> tuple[dict[str, Any], dict[str, Any]]:
    doc = json.loads(NODE.read_text())
    cell = next(c for c in doc["cells"] if c.get("profile"))
    return doc, cell


def _largest(cell: dict[str, Any]) -> float:
    return max(
        float(r["instructions"]) / int(r["requests"])
        for run in cell["runs"]
        for r in run["detail"]["reps"]
    )


def _refused(tmp_path: Path, doc: dict[str, Any]) -> str:
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsFileError) as info:
        results.load(path)
    text = str(info.value)
    assert "\n" not in text
    return text.removeprefix(f"{path}: malformed results file: cell node-http/json/callgrind: ")


def test_the_measured_profile_loads_and_holds_what_the_checks_bound() -> None:
    _, cell = _doc()
    p = cell["profile"]
    largest = _largest(cell)
    assert max(f[1] for f in p["functions"]) <= largest
    assert sum(f[1] for f in p["functions"]) + p["others"]["self"] <= largest  # near 2x room
    assert max(f[2] for f in p["functions"]) > 2 * largest  # inclusive: pooled, unbounded
    assert results.load(NODE).cells


def test_a_function_costing_more_than_its_windows_is_refused(tmp_path: Path) -> None:
    doc, cell = _doc()
    cell["profile"]["functions"][0][1] = 5e14
    text = _refused(tmp_path, doc)
    name = cell["profile"]["functions"][0][0]
    assert text == (
        f"cell.profile.functions[] {name} 5e+14 is beyond the cell's largest window, "
        f"{_largest(cell):g}"
    )


@pytest.mark.parametrize("field", ["allocations", "frees"])
def test_more_allocator_calls_than_instructions_are_refused(tmp_path: Path, field: str) -> None:
    doc, cell = _doc()
    cell["profile"][field] = 1e9
    assert _refused(tmp_path, doc).startswith(f"cell.profile.{field} 1e+09 is beyond")


def test_self_costs_adding_up_past_twice_the_cell_are_refused(tmp_path: Path) -> None:
    doc, cell = _doc()
    each = _largest(cell) * 0.9  # each below the largest window, three together beyond 2x
    for f in cell["profile"]["functions"][:3]:
        f[1] = each
    assert _refused(tmp_path, doc).startswith("cell.profile's self costs add up to ")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda p: p.update(windows=0), "cell.profile.windows 0 is not 1 to the 6 windows"),
        (lambda p: p.update(windows=7), "cell.profile.windows 7 is not 1 to the 6 windows"),
        (lambda p: p.update(top=3), "cell.profile keeps 20 functions, more than its top 3"),
        (lambda p: p.update(top=30), "cell.profile keeps fewer functions than its top 30"),
        (lambda p: p["functions"].append(p["functions"][0]), "keeps 21 functions"),
        (lambda p: p.update(top=21) or p["functions"].append(p["functions"][0]),
         "cell.profile.functions names a function twice"),
    ],
)  # fmt: skip
def test_a_profile_its_cell_could_not_have_kept_is_refused(
    tmp_path: Path, edit: Any, message: str
) -> None:
    doc, cell = _doc()
    edit(cell["profile"])
    assert message in _refused(tmp_path, doc)
