from icount.stats import spread_reason, summarize


def test_summary_median_and_spread() -> None:
    s = summarize([100, 102, 101])
    assert (s.median, s.min, s.max, s.n) == (101, 100, 102, 3)
    assert abs(s.spread - 2 / 101) < 1e-12


def test_spread_rule_is_strictly_below_the_limit() -> None:
    assert spread_reason(summarize([1000, 1005, 1009.9]), 0.01) is None
    reason = spread_reason(summarize([1000, 1005, 1011]), 0.01)
    assert reason is not None and "spread 1.09%" in reason and "--max-spread 1%" in reason


def test_zero_median() -> None:
    assert summarize([0, 0]).spread == 0
    assert summarize([0, 0, 5]).spread == float("inf")
