"""The typed options of a session (icount/session/options.py): parsed from what a user
types, and to and from the JSON a provenance file records for --resume."""

from __future__ import annotations

from typing import Any

import pytest

from icount.errors import UsageError
from icount.session import options as o
from icount.session.options import Processes, Warmup


def test_warmup_is_auto_or_a_count_and_reads_back_what_it_writes() -> None:
    assert Warmup.parse("auto") == o.AUTO and o.AUTO.auto and o.AUTO.count is None
    assert Warmup.parse(" 20 ") == Warmup(20) and not Warmup(20).auto
    for w in (o.AUTO, Warmup(0), Warmup(100)):
        assert Warmup.from_json(w.to_json()) == w
    assert (o.AUTO.param(), Warmup(5).param()) == ("auto", 5)  # a cell's params
    assert Warmup.from_json(5) == Warmup(5)  # a count recorded as a number reads too
    with pytest.raises(UsageError, match="--warmup takes a request count or 'auto', got 'lots'"):
        Warmup.parse("lots")
    with pytest.raises(UsageError, match="--warmup must be >= 0, got -1"):
        Warmup.parse("-1")


@pytest.mark.parametrize("value", [True, None, [], "lots", "-1", 1.5])
def test_a_recorded_warmup_that_is_not_one_is_refused(value: Any) -> None:
    with pytest.raises(ValueError):
        Warmup.from_json(value)


def test_spread_limits_and_process_modes() -> None:
    assert o.parse_spread("1%") == o.MAX_SPREAD == 0.01 and o.MAX_SPREAD_TEXT == "1%"
    assert o.spread_from_json(o.percent_text(0.005)) == 0.005
    assert o.spread_from_json(0.02) == 0.02
    for bad in ("x", True, -1, None):
        with pytest.raises(ValueError):
            o.spread_from_json(bad)
    assert Processes.parse("root") is Processes.ROOT and str(Processes.ALL) == "all"
    with pytest.raises(UsageError, match="--processes takes all or root, got 'some'"):
        Processes.parse("some")


@pytest.mark.parametrize(
    ("read", "good", "bad"),
    [
        (lambda v: o.int_from_json(v, 1, 100), 3, [0, 101, True, "3", 2.0]),
        (lambda v: o.float_from_json(v, 0, 600), 1.5, [-1, 601, False, "1", float("nan")]),
        (o.bool_from_json, True, [1, "true", None]),
        (o.str_from_json, "fake", ["", 1, None]),
    ],
)
def test_recorded_values_are_read_as_their_type(read: Any, good: Any, bad: list[Any]) -> None:
    assert read(good) == good
    for value in bad:
        with pytest.raises(ValueError):
            read(value)


def test_idle_seconds_are_checked() -> None:
    assert o.check_idle_seconds(0) == 0
    for bad in (-1, 601, float("nan")):
        with pytest.raises(UsageError, match="--idle-seconds takes 0 to 600 seconds"):
            o.check_idle_seconds(bad)


def test_the_caps_on_added_windows_are_checked_when_given() -> None:
    with pytest.raises(UsageError, match="--max-windows takes 1 to 1000 windows, got 0"):
        o.check_max_windows(0)
    for bad in (-1.0, 86401.0, float("nan")):
        with pytest.raises(UsageError, match="--max-extra-seconds takes 0 to 86400 seconds"):
            o.check_max_extra_seconds(bad)
    assert (o.check_max_windows(3), o.check_max_extra_seconds(0.0)) == (3, 0.0)
