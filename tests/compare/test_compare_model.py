"""Matching and verdicts (pure): thresholds, the absolute floor, the spread rule,
invalid and missing cells, fingerprints and the gate's exit codes."""

from __future__ import annotations

import pytest

from icount.compare.model import (
    FieldDifference,
    Pair,
    Verdict,
    compare,
    compare_pairs,
    fingerprint_differences,
    gate,
    refusal,
)
from icount.compare.thresholds import Override, Thresholds, parse_thresholds
from icount.errors import ExitCode, UsageError
from icount.results import UNIT_PER_REQUEST

from .conftest import FP, cell, res

T1 = Thresholds(0.01, (), 10)


def one(base: list[float], new: list[float], t: Thresholds = T1, name: str = "a") -> Verdict:
    c = compare(res(cell(name, base)), res(cell(name, new)), t)
    assert len(c.rows) == 1
    return c.rows[0].verdict


def test_a_1_5_percent_regression_fails_at_1_and_passes_at_2() -> None:
    at1 = compare(res(cell("a", [200000] * 3)), res(cell("a", [203000] * 3)), T1)
    (row,) = at1.rows
    assert row.verdict is Verdict.REGRESSED
    assert row.delta == 3000
    assert row.delta_pct == pytest.approx(0.015)
    err = gate(at1, fail_on_invalid=False)
    assert err is not None and err.exit_code == ExitCode.REGRESSION
    assert int(ExitCode.REGRESSION) == 3

    at2 = compare(
        res(cell("a", [200000] * 3)), res(cell("a", [203000] * 3)), Thresholds(0.02, (), 10)
    )
    assert at2.rows[0].verdict is Verdict.UNCHANGED
    assert gate(at2, fail_on_invalid=True) is None


@pytest.mark.parametrize("new", [1.0, 50000.0, 99000.0, 99999.0])
def test_an_improvement_never_fails(new: float) -> None:
    c = compare(res(cell("a", [100000] * 3)), res(cell("a", [new] * 3)), Thresholds(0.01, (), 0))
    assert c.rows[0].verdict in (Verdict.IMPROVED, Verdict.UNCHANGED)
    assert gate(c, fail_on_invalid=True) is None


def test_delta_exactly_at_the_threshold_is_unchanged() -> None:
    # 101/100 - 1 is 0.010000000000000009 in binary floating point.
    assert one([100] * 3, [101] * 3, Thresholds(0.01, (), 0)) is Verdict.UNCHANGED
    assert one([100] * 3, [101.01] * 3, Thresholds(0.01, (), 0)) is Verdict.REGRESSED


def test_first_matching_glob_wins_on_name_slash_path() -> None:
    t = parse_thresholds(["1%", "nginx/json=5%", "nginx/*=2%", "*=3%"], 10)
    assert t.for_label("nginx/json") == (0.05, "nginx/json")
    assert t.for_label("nginx/plaintext") == (0.02, "nginx/*")
    assert t.for_label("node/plaintext") == (0.03, "*")
    assert parse_thresholds(["nginx/*=2%"], 10).for_label("node") == (0.01, "default")


def test_cells_without_a_path_match_on_their_name() -> None:
    t = parse_thresholds(["fib*=2%"], 10)
    base = res(cell("fib-c", [100000] * 3), cell("nginx", [1000] * 3, "plaintext"))
    new = res(cell("fib-c", [101500] * 3), cell("nginx", [1015] * 3, "plaintext"))
    rows = {r.label: r for r in compare(base, new, t).rows}
    assert rows["fib-c"].verdict is Verdict.UNCHANGED and rows["fib-c"].rule == "fib*"
    assert rows["nginx/plaintext"].verdict is Verdict.REGRESSED
    assert rows["nginx/plaintext"].rule == "default"


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["1%", "2%"], "without a glob given twice"),
        (["=2%"], "empty glob"),
        (["x=abc"], "takes a percentage"),
        (["0"], "must be above 0%"),
    ],
)
def test_bad_thresholds_are_usage_errors(items: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_thresholds(items, 10)


def test_negative_min_delta_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--min-delta"):
        parse_thresholds([], -1)


def test_min_delta_keeps_tiny_counts_from_flapping() -> None:
    # +1.5% of 200 instructions is 3 instructions: under the default floor of 10.
    c = compare(res(cell("tiny", [200] * 3)), res(cell("tiny", [203] * 3)), T1)
    assert c.rows[0].verdict is Verdict.UNCHANGED
    assert "below --min-delta 10" in c.rows[0].why
    assert one([200] * 3, [203] * 3, Thresholds(0.01, (), 0)) is Verdict.REGRESSED


def test_a_delta_inside_the_measured_spread_is_unchanged() -> None:
    # +2% median shift, but new's fastest run (101000) is below base's slowest (102000).
    c = compare(
        res(cell("a", [99000, 100000, 102000])), res(cell("a", [101000, 102000, 103000])), T1
    )
    (row,) = c.rows
    assert row.verdict is Verdict.UNCHANGED
    assert row.why == "within the measured spread (base 99000-102000, new 101000-103000)"
    # The same shift with ranges that do not overlap is a regression / an improvement.
    assert one([99000, 100000, 100500], [101000, 102000, 103000]) is Verdict.REGRESSED
    assert one([101000, 102000, 103000], [99000, 100000, 100500]) is Verdict.IMPROVED


def test_invalid_and_missing_cells() -> None:
    base = res(
        cell("both-bad", [1000, 1000], failed="exited with status 1"),
        cell("base-bad", [1000, 1000], failed="killed by SIGSEGV"),
        cell("new-bad", [1000] * 3),
        cell("gone", [1000] * 3),
        cell("unit", [1000] * 3),
    )
    new = res(
        cell("both-bad", [1000, 1000], failed="timed out after 5 s"),
        cell("base-bad", [1000] * 3),
        cell("new-bad", [1000, 1000], failed="exited with status 2"),
        cell("added", [1000] * 3),
        cell("unit", [1000] * 3, unit=UNIT_PER_REQUEST),
    )
    rows = {r.label: r for r in compare(base, new, T1).rows}
    assert [r for r in rows] == sorted(rows)
    assert rows["base-bad"].verdict is Verdict.INVALID_IN_BASE
    assert "killed by SIGSEGV" in rows["base-bad"].why
    assert rows["both-bad"].verdict is Verdict.INVALID_IN_BASE
    assert "exited with status 1" in rows["both-bad"].why
    assert "timed out after 5 s" in rows["both-bad"].why
    assert rows["new-bad"].verdict is Verdict.INVALID_IN_NEW
    assert rows["gone"].verdict is Verdict.MISSING_IN_NEW
    assert rows["added"].verdict is Verdict.MISSING_IN_BASE
    assert rows["unit"].verdict is Verdict.INVALID_IN_NEW
    assert "instructions/request" in rows["unit"].why
    c = compare(base, new, T1)
    assert gate(c, fail_on_invalid=False) is None
    err = gate(c, fail_on_invalid=True)
    assert err is not None and err.exit_code == ExitCode.INVALID
    assert "6 of 6 cells are invalid or missing" in err.message


def test_backend_is_part_of_the_key() -> None:
    base = res(cell("a", [1000] * 3, backend="callgrind"))
    new = res(cell("a", [1000] * 3, backend="perf"))
    verdicts = sorted(r.verdict.value for r in compare(base, new, T1).rows)
    assert verdicts == ["missing in base", "missing in new"]


def test_regression_takes_precedence_over_invalid_in_the_gate() -> None:
    base = res(cell("a", [1000] * 3), cell("b", [1000] * 3))
    new = res(cell("a", [2000] * 3))
    err = gate(compare(base, new, T1), fail_on_invalid=True)
    assert err is not None and err.exit_code == ExitCode.REGRESSION


def test_zero_base_median() -> None:
    c = compare(
        res(cell("z", [0] * 3), cell("same", [0] * 3)),
        res(cell("z", [50] * 3), cell("same", [0] * 3)),
        T1,
    )
    rows = {r.label: r for r in c.rows}
    assert rows["z"].verdict is Verdict.REGRESSED and rows["z"].delta_pct is None
    assert rows["same"].verdict is Verdict.UNCHANGED


def test_fingerprint_differences_name_fields_and_both_values() -> None:
    other = {**FP, "cpu_model": "Other CPU", "cpu_flags": ["avx2", "avx512f", "sse2"]}
    diffs = fingerprint_differences(FP, other)
    assert [d.field for d in diffs] == ["cpu_model", "cpu_flags"]
    text = refusal(diffs, "base.json", "new.json")
    assert "base.json and new.json" in text
    assert "cpu_model: base 'Example CPU family 6 model 85' vs new 'Other CPU'" in text
    assert "cpu_flags: only base has erms; only new has avx512f" in text
    # Fields that do not move counts (kernel, hosts, ASLR wording) are not compared.
    assert fingerprint_differences(FP, {**FP, "kernel": "6.1.0"}) == ()
    assert FieldDifference("glibc", None, "glibc 2.36").describe() == (
        "glibc: base (absent) vs new 'glibc 2.36'"
    )


def test_interleaved_pairs_gate_on_the_median_ratio() -> None:
    pairs = [Pair(1000000, 1015000), Pair(1000000, 1016000), Pair(1000000, 1014000)]
    c = compare_pairs("loop", "perf", "instructions", pairs, None, T1)
    (row,) = c.rows
    assert c.median_ratio == pytest.approx(1.015)
    assert row.delta_pct == pytest.approx(0.015)
    assert row.verdict is Verdict.REGRESSED
    assert (
        compare_pairs("loop", "perf", "instructions", pairs, None, Thresholds(0.02)).rows[0].verdict
        is Verdict.UNCHANGED
    )


def test_interleaved_ratios_that_straddle_1_are_unchanged() -> None:
    pairs = [Pair(1000000, 1030000), Pair(1000000, 1020000), Pair(1000000, 990000)]
    (row,) = compare_pairs("loop", "perf", "instructions", pairs, None, T1).rows
    assert row.verdict is Verdict.UNCHANGED
    assert row.why == "pair ratios 0.9900-1.0300 straddle 1"


def test_a_failed_interleaved_run_is_invalid() -> None:
    pairs = [Pair(1000000, 1015000), Pair(1000000, None)]
    failed = (Verdict.INVALID_IN_NEW, "new run 2: exited with status 1")
    c = compare_pairs("loop", "perf", "instructions", pairs, failed, T1)
    assert c.rows[0].verdict is Verdict.INVALID_IN_NEW
    assert c.rows[0].why == "new run 2: exited with status 1"
    zero = compare_pairs("loop", "perf", "instructions", [Pair(0, 10)], None, T1)
    assert zero.rows[0].verdict is Verdict.INVALID_IN_BASE


def test_thresholds_default_when_none_given() -> None:
    t = parse_thresholds([], 10)
    assert t == Thresholds(0.01, (), 10)
    assert parse_thresholds(["a=b=2%"], 0).overrides == (Override("a=b", 0.02),)


SWEEP = [f"{i / 10:g}" for i in range(1, 100)] + ["0.7", "1.4", "2.9", "12.5", "33.3", "0.05"]


@pytest.mark.parametrize("pct", SWEEP)
def test_a_change_exactly_at_any_threshold_is_unchanged(pct: str) -> None:
    """In floats 0.7/100 is above 0.007, so a change of exactly 0.7% was 'regressed'
    (at 1% it was unchanged): the README promises unchanged at the threshold."""
    from fractions import Fraction

    limits = parse_thresholds([pct], 0)
    base = 10**6
    at = base + int(Fraction(pct) * 10**4)  # exactly pct% more
    assert one([base] * 3, [at] * 3, limits) is Verdict.UNCHANGED
    assert one([base] * 3, [at + 1] * 3, limits) is Verdict.REGRESSED
    assert one([at] * 3, [base] * 3, parse_thresholds([f"{pct}"], 0)) in (
        Verdict.UNCHANGED,
        Verdict.IMPROVED,
    )
    below = base - int(Fraction(pct) * 10**4)
    assert one([base] * 3, [below] * 3, limits) is Verdict.UNCHANGED
    assert one([base] * 3, [below - 1] * 3, limits) is Verdict.IMPROVED
    # a per-request figure as written in the file: 100 -> 100 + pct
    per_request = float(Fraction(100) + Fraction(pct))
    assert one([100.0] * 3, [per_request] * 3, limits) is Verdict.UNCHANGED


@pytest.mark.parametrize("pct", ["0.7", "1.4", "2.9", "1"])
def test_interleaved_pairs_exactly_at_the_threshold_are_unchanged(pct: str) -> None:
    from fractions import Fraction

    new = float(1000 + Fraction(pct) * 10)
    pairs = [Pair(1000.0, new)] * 3
    c = compare_pairs("a", "callgrind", "instructions", pairs, None, parse_thresholds([pct], 0))
    assert c.rows[0].verdict is Verdict.UNCHANGED
    above = [Pair(1000.0, new + 0.01)] * 3
    c = compare_pairs("a", "callgrind", "instructions", above, None, parse_thresholds([pct], 0))
    assert c.rows[0].verdict is Verdict.REGRESSED


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0])
def test_min_delta_must_be_finite_and_not_negative(bad: float) -> None:
    with pytest.raises(UsageError, match="--min-delta must be 0 or more and finite"):
        parse_thresholds([], bad)
