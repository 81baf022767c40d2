"""The time a session has left (icount/eta.py), by what its runs cost, on a fake clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from icount.eta import Pace, Work
from icount.session.options import Warmup
from tests.support.told import Told


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
    # b is like nothing measured: a run as long as the runs so far, not 10 times one,
    # in the session's time left; b's own is not told from a's
    assert pace.left() == pytest.approx(4.0 + 2 * 2.0)
    assert pace.cell_left("b") is None
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
    # a run of a big cell costs ten of a small one, by its requests, in the session's
    # time left; the big cells' own is not told by another target's runs
    assert pace.left() == pytest.approx(1.0 + 2 * 1.0 + 4 * 10.0 + 2 * 1.0)
    assert pace.cell_left("big/plaintext") is None
    _run(pace, clock, "big/plaintext", 30.0)  # big's server is slower a request than small's
    assert pace.cell_left("big/json") == pytest.approx(2 * 30.0)  # its target's, not the pool's
    assert pace.cell_left("small/json") == pytest.approx(2 * 1.0)
    # a cold start is one request after a start: like no other cell until one ends
    assert pace.cell_left("big/cold-start") is None
    left = 1.0 + 2.0 + 30.0 + 2 * 30.0 + 2 * (1.0 + 30.0) / 2  # the last: 2 mean runs
    assert pace.left() == pytest.approx(left)
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
    # (5 + 10) / 2 would end b's two runs of 5 s in 7.5 s: one after the other, 10 s
    assert pace.left() == pytest.approx(10.0)
    pace2 = Pace({k: Work(2, 100, ("r",)) for k in "abcd"}, jobs=2, clock=clock)
    _run(pace2, clock, "a", 5.0)
    assert pace2.left() == pytest.approx((5.0 + 3 * 10.0) / 2)  # more cells than jobs


def test_what_a_cell_does_beside_its_runs_is_in_its_rate() -> None:
    """--memory's native runs follow a cell's counted runs: the time from its start to
    its end counts, in its own rate and in that of the cells like it."""
    clock = Clock()
    pace = Pace({"a": Work(2, 100, ("t",)), "b": Work(2, 100, ("t",))}, clock=clock)
    pace.start("a")
    _run(pace, clock, "a", 2.0)
    _run(pace, clock, "a", 2.0)
    assert pace.cell_left("b") == pytest.approx(4.0)
    pace.finish("a")  # its runs are over
    clock.now += 6.0  # its native runs
    pace.finish("a")  # and it ends
    assert pace.cell_left("b") == pytest.approx(10.0)  # (4 + 6) s for 2 runs
    pace.start("b")
    _run(pace, clock, "b", 2.0, measured=False)  # a failed run: b measured nothing
    pace.finish("b")
    assert pace.left() == 0.0


_ADAPTER = """
name = "NAME"
start = ["true", "--port", "{port}"]
BUILD
[[paths]]
name = "plaintext"
target = "/plaintext"
[paths.expect]
body = "Hello, World!"
"""


def test_the_cells_of_a_target_that_failed_to_build_leave_the_time_left_fake(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Known before any cell is measured, they take no time: the time left before the
    good target's second cell is that cell's alone. The clock is the fake servers'
    requests, 10 ms each."""
    from icount import backends, environment
    from icount.serve import plan as plan_mod
    from icount.serve import session
    from icount.serve.plan import ServeRequest
    from tests.support import fake_backend

    monkeypatch.setitem(backends.REGISTRY, "fake", "tests.support.fake_backend")
    monkeypatch.setattr(fake_backend, "CONFIG", fake_backend.FakeConfig())
    targets = []
    for name, build in (("a-good", ""), ("z-bad", 'build = [["false"]]')):
        (tmp_path / name).mkdir()
        adapter = tmp_path / name / "adapter.toml"
        adapter.write_text(_ADAPTER.replace("NAME", name).replace("BUILD", build))
        targets.append(str(adapter))
    request = ServeRequest(targets=tuple(targets), backend="fake", runs=2, reps=1,
                           requests=20, warmup=Warmup(0), idle_seconds=0)  # fmt: skip
    plan = plan_mod.prepare(request, output=tmp_path / "r.json", resume=None, force=False)
    told = Told()

    def clock() -> float:
        return 0.01 * sum(s.requests for s in fake_backend.CONFIG.started)

    recorder = environment.ProvenanceRecorder(["icount", "serve"])
    res = session.run_session(plan, told, recorder, clock=clock)
    assert [c.valid for c in res.cells] == [True, False]
    _, left = next(x for x in told.lines if x[0].startswith("a-good/plaintext/fake run 2/2"))
    run = 0.01 * fake_backend.CONFIG.started[0].requests
    assert left == pytest.approx(run)  # not 3 runs more of z-bad's


def test_a_cells_native_memory_runs_count_in_the_time_left_fake(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """--memory's native runs follow each cell's counted runs: the next cell of the
    target is told its runs and their share of that time. Those runs are replaced by
    5 s of the fake clock (the fake servers' requests, 10 ms each, plus that)."""
    from icount import backends, environment
    from icount.serve import cell_extras, session
    from icount.serve import plan as plan_mod
    from icount.serve.plan import ServeRequest
    from tests.support import fake_backend

    monkeypatch.setitem(backends.REGISTRY, "fake", "tests.support.fake_backend")
    monkeypatch.setattr(fake_backend, "CONFIG", fake_backend.FakeConfig())
    native = [0.0]

    def memory_peaks(*args: object) -> None:
        native[0] += 5.0

    monkeypatch.setattr(cell_extras, "memory_peaks", memory_peaks)
    (tmp_path / "t").mkdir()
    adapter = tmp_path / "t" / "adapter.toml"
    two_paths = _ADAPTER.replace("BUILD", "") + '[[paths]]\nname = "json"\ntarget = "/json"\n'
    adapter.write_text(two_paths.replace("NAME", "t") + "[paths.expect]\nstatus = 200\n")
    request = ServeRequest(targets=(str(adapter),), backend="fake", runs=2, reps=1,
                           requests=20, warmup=Warmup(0), idle_seconds=0,
                           memory=True)  # fmt: skip
    plan = plan_mod.prepare(request, output=tmp_path / "r.json", resume=None, force=False)
    told = Told()

    def clock() -> float:
        return 0.01 * sum(s.requests for s in fake_backend.CONFIG.started) + native[0]

    recorder = environment.ProvenanceRecorder(["icount", "serve"])
    session.run_session(plan, told, recorder, clock=clock)
    assert native == [10.0]
    _, left = next(x for x in told.lines if x[0].startswith("t/json/fake run 1/2"))
    runs = 0.01 * sum(s.requests for s in fake_backend.CONFIG.started[:2])
    assert left == pytest.approx(runs + 5.0)  # the first cell's runs and its native runs
