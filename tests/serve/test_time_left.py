"""The time a session has left (icount/eta.py), by what its runs cost, on a fake clock."""

from __future__ import annotations

import pytest

from icount.eta import Pace, Work


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _run(pace: Pace, clock: Clock, key: str, seconds: float, measured: bool = True) -> None:
    pace.begin(key)
    clock.now += seconds
    pace.end(key, measured)


def test_nothing_is_estimated_before_a_run_ends() -> None:
    clock = Clock()
    pace = Pace({"a": Work(3, 1000)}, clock=clock)
    assert pace.left() is None and pace.cell_left("a") is None
    pace.begin("a")
    clock.now += 5
    assert pace.left() is None


def test_a_cell_takes_its_own_rate_times_the_units_left() -> None:
    clock = Clock()
    pace = Pace({"a": Work(3, 1000), "b": Work(2, 10_000, ("requests",))}, clock=clock)
    _run(pace, clock, "a", 2.0)
    assert pace.cell_left("a") == pytest.approx(4.0)  # 2 runs of 2 s
    # b is like nothing measured: a run as long as the runs so far, not 10 times one
    assert pace.cell_left("b") == pytest.approx(4.0)
    pace.begin("a")
    clock.now += 0.5
    assert pace.cell_left("a") == pytest.approx(1.5 + 2.0)  # the running run counts down
    clock.now += 3.0
    assert pace.cell_left("a") == pytest.approx(2.0)  # overdue: what is left of it is 0


def test_a_cell_not_begun_takes_the_rate_of_the_likest_cells_measured() -> None:
    clock = Clock()
    work = {
        "small/plaintext": Work(2, 100, ("small", "requests")),
        "small/json": Work(2, 100, ("small", "requests")),
        "big/plaintext": Work(2, 1000, ("big", "requests")),
        "big/json": Work(2, 1000, ("big", "requests")),
        "big/cold-start": Work(2, 1, ("big cold", "cold-start")),
    }
    pace = Pace(work, clock=clock)
    _run(pace, clock, "small/plaintext", 1.0)  # 0.01 s a request
    # a run of a big cell costs ten of a small one, by its requests
    assert pace.cell_left("big/plaintext") == pytest.approx(2 * 10.0)
    assert pace.left() == pytest.approx(1.0 + 2 * 1.0 + 4 * 10.0 + 2 * 1.0)
    _run(pace, clock, "big/plaintext", 30.0)  # big's server is slower a request than small's
    assert pace.cell_left("big/json") == pytest.approx(2 * 30.0)  # its target's, not the pool's
    assert pace.cell_left("small/json") == pytest.approx(2 * 1.0)
    # a cold start is one request after a start: like no other cell until one ends
    assert pace.cell_left("big/cold-start") == pytest.approx(2 * (1.0 + 30.0) / 2)
    _run(pace, clock, "big/cold-start", 4.0)
    assert pace.cell_left("big/cold-start") == pytest.approx(4.0)


def test_finished_cells_and_failed_runs() -> None:
    clock = Clock()
    pace = Pace({"a": Work(3, 100), "b": Work(3, 100, ("requests",))}, clock=clock)
    _run(pace, clock, "a", 0.01, measured=False)  # its server did not start
    pace.finish("a")
    assert pace.cell_left("a") == 0.0
    assert pace.left() is None  # a failed run says nothing of what a run costs
    _run(pace, clock, "b", 3.0)
    assert pace.left() == pytest.approx(6.0)
    pace.finish("b")
    assert pace.left() == 0.0


def test_cells_measured_at_once_share_the_time() -> None:
    clock = Clock()
    pace = Pace({"a": Work(2, 100, ("r",)), "b": Work(2, 100, ("r",))}, jobs=2, clock=clock)
    _run(pace, clock, "a", 5.0)
    assert pace.cell_left("b") == pytest.approx(10.0)
    assert pace.left() == pytest.approx((5.0 + 10.0) / 2)
