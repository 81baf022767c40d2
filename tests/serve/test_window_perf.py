"""perf windows: interval records parsed from real perf 6.1 output, the enable/disable
protocol on the control fifo run against the c-epoll server, and a counter that is
<not supported> (these VMs) turning the cell invalid with perf's words."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from icount.serve import cpus as cpus_mod
from icount.serve.adapter import load_adapter
from icount.serve.method import MethodOptions, Target, WindowChoice, measure_run
from icount.serve.window_perf import IntervalRecord, parse_intervals, window_total

from .conftest import AdapterMaker

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


def test_not_supported_never_passes_as_a_number() -> None:
    first, _ = _windows("instructions:u")
    total, problem = window_total(first)
    assert total is None
    assert problem is not None and "<not supported>" in problem


def test_a_window_where_nothing_ran_is_refused() -> None:
    records = parse_intervals(FIXTURE.read_text().split("Events enabled")[0], "x", "task-clock")
    assert records  # only the disabled stretch before the first enable
    total, problem = window_total(records)
    assert total is None and problem == "task-clock was never counted"


def _perf_run(
    make_adapter: AdapterMaker, tmp_path: Path, event: str
) -> tuple[float | None, str | None, dict[str, object]]:
    if shutil.which("perf") is None:
        pytest.skip("perf is not installed (apt-get install linux-perf)")
    adapter = load_adapter(make_adapter("perf-" + event.replace(":", "-")))
    split = cpus_mod.split(None, None)
    opts = MethodOptions(
        backend="perf", cpus=split, runs=1, reps=2, requests=3000, warmup=200, perf_event=event
    )
    with cpus_mod.pinned_self(split.load):
        return measure_run(
            Target(adapter, tmp_path / "build"),
            adapter.paths[0],
            opts,
            tmp_path / "run",
            WindowChoice(),
            lambda text: None,
        )


@pytest.mark.slow
def test_fifo_protocol_with_a_software_event(make_adapter: AdapterMaker, tmp_path: Path) -> None:
    """enable/disable around each window, ack awaited, intervals summed: task-clock
    (milliseconds of CPU) counts on every machine, PMU or not."""
    value, reason, detail = _perf_run(make_adapter, tmp_path, "task-clock")
    assert reason is None, reason
    assert value is not None and value > 0
    reps = detail["reps"]
    assert isinstance(reps, list) and len(reps) == 2
    for rep in reps:
        assert rep["requests"] == 3000
        assert rep["instructions"] > 0  # msec of task-clock in the window
        # a window of 3000 requests cannot take more CPU time than its wall time allows
        assert rep["instructions"] / 1000 < 3000 / rep["client_rps"] + 0.2


@pytest.mark.slow
def test_unsupported_counter_makes_the_cell_say_so(
    make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    from icount.backends import perf

    if shutil.which("perf") and perf.probe().usable:
        pytest.skip("this machine's PMU counts instructions:u; nothing is <not supported>")
    value, reason, _ = _perf_run(make_adapter, tmp_path, "instructions:u")
    assert value is None
    assert reason is not None and "instructions:u not supported" in reason, reason
    assert "<not supported>" in reason
