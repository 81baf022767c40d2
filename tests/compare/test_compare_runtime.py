"""A collected runtime's totals in `icount compare`: the mutator judged as every cell,
the total beyond both the threshold and the two sides' 95% intervals, `~` never gating.

The cells are the measured node-http /json file (runtime_cells.py) and cells derived
from it for each rule.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

import pytest

from icount import export
from icount.charts import comparison_from_json
from icount.compare.model import Comparison, Row, Verdict, compare
from icount.compare.thresholds import parse_thresholds
from icount.results import Cell
from tests.support.golden import assert_golden

from .conftest import Cli
from .runtime_cells import derived, node, node_cell, of, without_runtime
from .test_compare_cli import Write
from .test_compare_render import FORMATS, GOLDEN, SUFFIX

CASES: dict[str, Callable[[Cell], Cell]] = {
    "same": lambda c: c,
    "gc-up": lambda c: derived(c, collector=1.2),  # total +1.55%, interval ±171
    "gc-small": lambda c: derived(c, collector=1.03),  # total +0.23%
    "gc-down": lambda c: derived(c, collector=0.5),
    "noisy": lambda c: derived(c, windows=[0.0, 5.0, 0.0]),  # a total shown ~
    "mutator-down-gc-up": lambda c: derived(c, collector=2.0, mutator=0.95),
}


def _pairs() -> list[tuple[Cell, Cell]]:
    # without its profile: these cells' functions are the measured ones on both sides
    c = dataclasses.replace(node_cell(), profile=None)
    name = dataclasses.replace
    out = [(name(c, name=n), name(f(c), name=n)) for n, f in CASES.items()]
    old = without_runtime(c)
    out.append((name(old, name="before"), name(c, name="before")))
    out.append((name(c, name="after"), name(old, name="after")))
    return out


def sample(threshold: str = "1%") -> Comparison:
    pairs = _pairs()
    return compare(
        of([b for b, _ in pairs]), of([n for _, n in pairs]), parse_thresholds([threshold], 10)
    )


LIMITS = parse_thresholds(["1%"], 10)


def rows(c: Comparison) -> dict[str, Row]:
    return {r.name: r for r in c.rows}


@pytest.mark.parametrize("fmt", FORMATS)
def test_golden(fmt: str) -> None:
    text = export.render_comparison(sample(), fmt, 110)
    assert_golden(GOLDEN / f"runtime.{SUFFIX[fmt]}", text)
    assert export.render_comparison(sample(), fmt, 110) == text


def test_the_measured_cell_has_a_valid_total() -> None:
    f = node_cell().runtime
    assert f is not None and f.total is not None and f.total_valid
    assert f.total == pytest.approx(f.mutator + f.collector + f.compiler)  # type: ignore[operator]
    assert 0 < f.half_width < 0.005 * f.total


def test_a_total_beyond_the_threshold_and_the_interval_regresses_the_cell() -> None:
    r = rows(sample())["gc-up"]
    assert r.delta == 0  # the mutator did not move
    assert r.total is not None and r.total.verdict is Verdict.REGRESSED and r.total.decides
    assert r.verdict is Verdict.REGRESSED
    assert r.total.delta is not None and r.total.interval is not None
    assert abs(r.total.delta) > r.total.interval
    assert r.why.startswith("the total regressed +1.55%, beyond the threshold and the 95% interval")


def test_the_interval_is_both_sides_in_quadrature() -> None:
    t = rows(sample())["gc-up"].total
    assert t is not None and t.base is not None and t.new is not None and t.interval is not None
    assert t.interval == pytest.approx((t.base.half_width**2 + t.new.half_width**2) ** 0.5)


def test_a_total_within_the_threshold_is_unchanged() -> None:
    r = rows(sample())["gc-small"]
    assert r.verdict is Verdict.UNCHANGED
    assert r.total is not None and r.total.rule == "within the threshold"


def test_a_total_beyond_the_threshold_but_within_the_interval_is_unchanged() -> None:
    # +0.23% beyond a 0.1% threshold, but the 129 instructions are inside ±157
    r = rows(sample("0.1%"))["gc-small"]
    assert r.verdict is Verdict.UNCHANGED
    assert r.total is not None and r.total.verdict is Verdict.UNCHANGED
    assert r.total.rule.startswith("within the 95% interval ±157.")


def test_a_total_shown_tilde_never_gates() -> None:
    r = rows(sample())["noisy"]
    assert r.total is not None and r.total.new is not None
    assert not r.total.new.total_valid and r.total.new.total is not None
    assert r.total.new.total > 1.05 * r.total.base.total  # type: ignore[union-attr,operator]
    assert r.total.verdict is None and r.verdict is Verdict.UNCHANGED
    assert "(not valid): the totals do not gate" in r.total.rule


def test_a_file_written_before_is_set_whole_against_the_total() -> None:
    # its figure is the whole count (55.64k): against the new mutator (51.33k) it would
    # read -7.8% improved, and the other way round +8.4% regressed (exit 3)
    for name, side in (("before", "base"), ("after", "new")):
        r = rows(sample())[name]
        assert r.total is not None and r.total.decides
        assert r.delta_pct is not None and abs(r.delta_pct) > 0.07  # the mutators' "change"
        assert r.verdict is Verdict.UNCHANGED, r.why
        assert r.total.delta_pct is not None and abs(r.total.delta_pct) < 0.001
        assert r.total.rule.startswith(f"{side} has no runtime's figures (its figure is the whole")
        assert (r.total.base_whole if side == "base" else r.total.new_whole) is not None


def test_a_file_written_before_still_gates_on_a_real_change() -> None:
    c = dataclasses.replace(node_cell(), profile=None)
    r = compare(of([without_runtime(c)]), of([derived(c, collector=1.2)]), LIMITS).rows[0]
    assert r.verdict is Verdict.REGRESSED and r.why.startswith("the whole count +1.56%: base has")


def test_a_total_regression_outweighs_a_mutator_improvement() -> None:
    r = rows(sample())["mutator-down-gc-up"]
    assert r.delta_pct == pytest.approx(-0.05)
    assert r.verdict is Verdict.REGRESSED
    assert "the mutator improved -5.00%" in r.why


def test_a_total_improvement_improves_an_unchanged_cell() -> None:
    r = rows(sample())["gc-down"]
    assert r.verdict is Verdict.IMPROVED and r.total is not None and r.total.decides


def test_a_mutator_regression_stays_one_whatever_the_total() -> None:
    c = dataclasses.replace(node_cell(), profile=None)
    c_new = derived(c, collector=0.2, mutator=1.05)  # mutator +5%, total down
    r = compare(of([c]), of([c_new]), LIMITS).rows[0]
    assert r.verdict is Verdict.REGRESSED and r.why == ""
    assert r.total is not None and r.total.verdict is Verdict.IMPROVED and not r.total.decides


def test_the_json_loads_back_in_the_report() -> None:
    doc = json.loads(export.render_comparison(sample(), "json"))
    assert doc["version"] == 2
    total = next(c for c in doc["cells"] if c["name"] == "gc-up")["total"]
    assert total["verdict"] == "regressed" and total["decides"] is True
    back = comparison_from_json(doc, "runtime.json")
    assert len(back.rows) == len(doc["cells"])


def test_a_total_regression_alone_exits_3(cli: Cli, write: Write) -> None:
    c = node_cell()
    base = write("base.json", of([c]))
    new = write("new.json", of([derived(c, collector=1.2)]))
    done = cli("compare", base, new)
    assert done.code == 3, done.err
    assert "the total regressed +1.55%" in done.out
    same = cli("compare", base, base)
    assert same.code == 0, same.err


def test_the_stored_file_shows_the_three_figures_in_every_table_format() -> None:
    """icount table of the measured file: the mutator as the cell's figure, the runtime's
    work with its interval and the total, in the table, md, csv and json."""
    res = node()
    note = (
        "v8: mutator 51.33k per request (the figure above), collector 4.313k ±109.4 "
        "(mean of 6 windows, 95%); total 55.64k"
    )
    assert note in " ".join(export.render_results(res, "table", width=400).split())
    assert note in export.render_results(res, "md")
    head, row = export.render_results(res, "csv").splitlines()
    fields = dict(zip(head.split(","), row.split(","), strict=True))
    assert (fields["median"], fields["mutator"]) == ("51329.175", "51329.175")
    assert (fields["collector"], fields["compiler"]) == ("4312.531", "0.000")
    assert (fields["interval_95"], fields["total"], fields["total_valid"]) == (
        "109.433", "55641.707", "true",
    )  # fmt: skip
    work = json.loads(export.render_results(res, "json"))["cells"][0]["runtime_work"]
    assert (work["total"], work["interval_95"], work["total_valid"]) == (55641.707, 109.433, True)


def test_a_file_written_before_against_a_tilde_total_does_not_gate() -> None:
    # the new side's total is ~ (its windows' collector work 0.2x, 1x, 1.8x): the mutator
    # against the old side's whole count would read -7.7% improved, or +8.4% regressed
    c = dataclasses.replace(node_cell(), profile=None)
    wide = derived(c, windows=[0.2, 1.0, 1.8])
    assert wide.runtime is not None and not wide.runtime.total_valid
    for base, new in ((without_runtime(c), wide), (wide, without_runtime(c))):
        r = compare(of([base]), of([new]), LIMITS).rows[0]
        assert r.delta_pct is not None and abs(r.delta_pct) > 0.07
        assert r.verdict is Verdict.UNCHANGED, r.why
        assert r.why.startswith("a whole count against a mutator is not like for like, and")
        assert r.why.endswith("(not valid): the totals do not gate")
