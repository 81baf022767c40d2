"""The perf stat parsers, on output recorded from the real perf (fixtures/perf/README.md)."""

from pathlib import Path

import pytest

from icount.backends import perf_parser as perf
from icount.backends.perf_parser import IntervalRecord, parse_intervals, window_total
from icount.errors import ParseError

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "perf"


@pytest.mark.parametrize(
    "name", ["stat-x-instructions-not-supported.txt", "stat-o-instructions-not-supported.txt"]
)
def test_not_supported_never_passes_as_a_number(name: str) -> None:
    counts = perf.parse_csv((FIX / name).read_text(), name)
    c = perf.find_event(counts)
    assert c.value is None and not c.ok
    assert c.problem is not None and "not supported" in c.problem


def test_numbers_and_several_events() -> None:
    counts = perf.parse_csv((FIX / "stat-x-software-events.txt").read_text(), "x")
    assert [c.event for c in counts] == ["task-clock", "context-switches", "page-faults"]
    assert counts[2].value == 83 and counts[2].ok
    mixed = perf.parse_csv((FIX / "stat-x-mixed.txt").read_text(), "m")
    assert [c.ok for c in mixed] == [False, False, True]


def test_multiplexed_and_not_counted_are_flagged() -> None:
    # Same layout as the recorded lines, with the two states a PMU-less VM cannot produce.
    part = perf.parse_csv("123456;;instructions:u;1000;62.50;;\n", "t")[0]
    assert part.value == 123456 and not part.ok and "multiplexed" in str(part.problem)
    nc = perf.parse_csv("<not counted>;;instructions:u;0;0.00;;\n", "t")[0]
    assert nc.value is None and "not counted" in str(nc.problem)
    assert perf.find_event([]).problem == "instructions:u missing from perf output"


@pytest.mark.parametrize(
    "text", ["", "# started on x\n\n", "garbage\n", "abc;;instructions:u;0;100.00\n"]
)
def test_garbage_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        perf.parse_csv(text, "bad.txt")


# ------------------------------------------------ interval records (perf stat -I)

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "serve" / "perf-intervals.txt"


def _windows(event: str) -> list[list[IntervalRecord]]:
    """The fixture's records grouped by window: from each `Events enabled` to the next one."""
    text = FIXTURE.read_text()
    chunks = text.split("Events enabled")
    return [parse_intervals(chunk, str(FIXTURE), event) for chunk in chunks[1:]]


def test_interval_records_of_a_recorded_run() -> None:
    text = FIXTURE.read_text()
    records = parse_intervals(text, str(FIXTURE), "task-clock")
    assert len(records) == text.count(";task-clock;") == 14  # one per 100 ms interval
    assert len({r.timestamp for r in records}) == 14
    counted = [r.count.value for r in records if r.count.value is not None]
    assert counted == [10.35, 2.61, 26.03]  # the lines with a number, by hand
    assert all("not counted" in (r.count.problem or "") for r in records if r.count.value is None)


def test_window_sums_its_intervals_and_not_counted_adds_zero() -> None:
    first, second = _windows("task-clock")
    total1, problem1 = window_total(first)
    total2, problem2 = window_total(second)
    assert (problem1, problem2) == (None, None)
    # by hand from the fixture: 10.35 in window 1; 2.61 + 26.03 in window 2
    assert total1 == pytest.approx(10.35)
    assert total2 == pytest.approx(2.61 + 26.03)


def test_not_supported_never_passes_as_a_number_in_a_window() -> None:
    first, _ = _windows("instructions:u")
    total, problem = window_total(first)
    assert total is None
    assert problem is not None and "<not supported>" in problem


def test_a_window_where_nothing_ran_is_refused() -> None:
    records = parse_intervals(FIXTURE.read_text().split("Events enabled")[0], "x", "task-clock")
    assert records  # only the disabled stretch before the first enable
    total, problem = window_total(records)
    assert total is None and problem == "task-clock was never counted"


def test_an_enabled_counter_whose_task_never_ran_counted_zero() -> None:
    """An idle window: icount enabled the counter (perf acknowledged), the server slept."""
    records = parse_intervals(FIXTURE.read_text().split("Events enabled")[0], "x", "task-clock")
    assert window_total(records, enabled=True) == (0.0, None)
