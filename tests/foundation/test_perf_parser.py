"""The perf stat parsers, on output recorded from the real perf (fixtures/perf/README.md)."""

from pathlib import Path

import pytest

from icount.backends import perf
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
