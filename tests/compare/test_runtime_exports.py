"""A collected runtime's total in the geometric mean and in the exports for other tools
(bmf, benchmark-json, junit), on the measured node-http /json file and the cells
derived from it (runtime_cells.py, the sample of test_compare_runtime.py).

The geometric mean counts such a cell by its total, like for like with every other
cell's whole count and with an old file's; a total not valid leaves the cell out.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from collections.abc import Callable

import pytest

from icount import export
from icount.compare import geomean
from icount.compare.model import Comparison

from .runtime_cells import node
from .test_compare_render import forced, interleaved, mixed
from .test_compare_runtime import sample

PER_REQUEST = "instructions-per-request"
TOTAL = "total-instructions-per-request"


def _mean(changes: list[float]) -> float:
    return math.exp(math.fsum(math.log1p(x) for x in changes) / len(changes))


def _totals_by_hand(c: Comparison) -> dict[str, float]:
    """Each row's new/base - 1 of its totals, from the runtime's figures themselves (an
    old side's figure, its whole count, as its total), where both are valid."""
    out = {}
    for r in c.rows:
        t = r.total
        assert t is not None and r.base is not None and r.new is not None
        base = t.base.total if t.base is not None else r.base.median
        new = t.new.total if t.new is not None else r.new.median
        valid = all(f is None or f.total_valid for f in (t.base, t.new))
        if valid and base is not None and new is not None:
            out[r.name] = new / base - 1
    return out


def test_the_geometric_mean_counts_a_runtime_cell_by_its_total() -> None:
    c = sample()
    # before: every row by its mutator's median, the two old-file rows' whole count
    # against a mutator among them (+8.40%, -7.74%)
    by_mutator = {r.name: r.delta_pct for r in c.rows}
    assert by_mutator["after"] == pytest.approx(0.0840, abs=1e-4)
    assert by_mutator["before"] == pytest.approx(-0.0774, abs=1e-4)
    before = _mean([x for x in by_mutator.values() if x is not None])
    assert f"{before:.4f}" == "0.9936"  # what the golden sample printed: -0.64%
    # after: by the totals; `noisy` (a ~ total) left out, not counted by its mutator
    totals = _totals_by_hand(c)
    assert sorted(totals) == sorted(set(by_mutator) - {"noisy"})
    assert abs(totals["after"]) < 1e-4 and abs(totals["before"]) < 1e-4
    g = geomean.of(c)
    assert g is not None
    assert (g.cells, g.totals, g.left_out) == (7, 7, 1)
    assert g.ratio == pytest.approx(_mean(list(totals.values())), rel=1e-12)
    assert f"{g.ratio:.4f}" == "1.0013"  # +0.13%
    assert geomean.line(c) == (
        "geometric mean of new/base over 7 cells: 1.0013 (+0.13%); 7 by their total "
        "(mutator + the runtime's work); 1 left out (its total not valid)"
    )
    doc = json.loads(export.render_comparison(c, "json"))
    assert doc["geometric_mean"] == {"ratio": g.ratio, "cells": 7, "totals": 7, "left_out": 1}


def test_the_geometric_mean_of_other_cells_is_as_before() -> None:
    c = mixed()
    g = geomean.of(c)
    assert g is not None and (g.totals, g.left_out) == (0, 0)
    valid = [r.delta_pct for r in c.rows if r.base and r.new and r.delta_pct is not None]
    assert g.ratio == pytest.approx(_mean(valid), rel=1e-12)
    assert "total" not in (geomean.line(c) or "")
    assert set(json.loads(export.render_comparison(c, "json"))["geometric_mean"]) == {
        "ratio", "cells",
    }  # fmt: skip


def test_bmf_has_the_total_as_a_measure_of_its_own() -> None:
    c = sample()
    doc = json.loads(export.render_comparison(c, "bmf"))
    rows = {r.label: r for r in c.rows}
    for label, measures in doc.items():
        r = rows[label]
        assert r.new is not None and measures[PER_REQUEST]["value"] == r.new.median
        f = r.total.new if r.total is not None else None
        if f is None or not f.total_valid:  # an old new side, a ~ total: no number
            assert TOTAL not in measures, label
            continue
        assert f.total is not None
        assert measures[TOTAL] == {
            "value": f.total,
            "lower_value": f.total - f.half_width,
            "upper_value": f.total + f.half_width,
        }
    assert TOTAL not in doc["after/json"] and TOTAL not in doc["noisy/json"]
    assert doc["gc-up/json"][TOTAL]["value"] == pytest.approx(56504.2129, abs=1e-3)


def test_bmf_of_the_measured_file_has_its_total() -> None:
    doc = json.loads(export.render_results(node(), "bmf"))
    (measures,) = doc.values()
    assert measures[PER_REQUEST]["value"] == pytest.approx(51329.175, abs=1e-3)
    assert measures[TOTAL]["value"] == pytest.approx(55641.707, abs=1e-3)
    assert measures[TOTAL]["upper_value"] - measures[TOTAL]["value"] == pytest.approx(
        109.433, abs=1e-3
    )


def test_benchmark_json_has_the_total_as_an_entry() -> None:
    entries = {
        e["name"]: e for e in json.loads(export.render_comparison(sample(), "benchmark-json"))
    }
    for e in entries.values():  # customSmallerIsBetter: numbers, range and extra strings
        assert isinstance(e["value"], float) and isinstance(e["range"], str)
        assert isinstance(e["extra"], str) and e["unit"] == "instructions/request"
    up = entries["gc-up/json total (callgrind)"]
    assert up["value"] == pytest.approx(56504.2129, abs=1e-3)
    assert up["range"] == "± 131.32"
    assert "verdict: regressed (decides the cell)" in up["extra"].splitlines()
    assert "change: +1.55%" in up["extra"].splitlines()
    # the mutator's entry says the total decided it
    assert "the total regressed +1.55%" in entries["gc-up/json (callgrind)"]["extra"]
    assert "noisy/json total (callgrind)" not in entries  # ~: no number
    assert "after/json total (callgrind)" not in entries  # an old new side: its whole count
    assert len(entries) == 8 + 6


def _cases(xml: str) -> dict[str, ET.Element]:
    root = ET.fromstring(xml)
    return {case.attrib["name"]: case for case in root.iter("testcase")}


def _props(case: ET.Element) -> dict[str, str]:
    return {p.attrib["name"]: p.attrib["value"] for p in case.findall("properties/property")}


def test_junit_has_the_total_as_properties() -> None:
    cases = _cases(export.render_comparison(sample(), "junit"))
    up = _props(cases["gc-up/json"])
    assert up == {
        "base_total": "55641.707",
        "base_total_interval_95": "109.433",
        "new_total": "56504.213",
        "new_total_interval_95": "131.32",
        "total_delta_pct": "1.5501",
        "total_interval_95": "170.94",
        "total_verdict": "regressed",
        "total_rule": "beyond the threshold and the 95% interval ±170.94",
        "total_decides": "true",
    }
    assert cases["gc-up/json"].find("failure") is not None
    # the properties come first, as pytest's record_property writes them
    assert [child.tag for child in cases["gc-up/json"]] == ["properties", "failure", "system-out"]
    noisy = _props(cases["noisy/json"])
    assert "total_verdict" not in noisy and noisy["total_decides"] == "false"
    assert noisy["total_rule"].endswith("(not valid): the totals do not gate")
    before = _props(cases["before/json"])  # an old base: its whole count, no interval
    assert before["base_total"] == "55638.278" and "base_total_interval_95" not in before
    out = cases["gc-up/json"].findtext("system-out") or ""
    assert "gc-up/json: total 55.64k ±109.4 -> 56.50k ±131.3 +1.55%: regressed" in out


@pytest.mark.parametrize("make", [mixed, forced, interleaved])
def test_nothing_changes_for_comparisons_without_runtime_cells(
    make: Callable[[], Comparison],
) -> None:
    c = make()
    assert all(r.total is None for r in c.rows)
    for measures in json.loads(export.render_comparison(c, "bmf")).values():
        assert not any(m.startswith("total-") for m in measures)
    names = [e["name"] for e in json.loads(export.render_comparison(c, "benchmark-json"))]
    assert not any(" total (" in n for n in names)
    for case in _cases(export.render_comparison(c, "junit")).values():
        assert case.find("properties") is None
