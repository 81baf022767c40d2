"""A collected runtime's three figures through the fake backend (known by construction):
every 7th request also costs the collector 10,000 instructions, and windows of 100
requests hold 14 or 15 of them, so their totals differ by 7% while the mutator is exact.
Also: --warmup auto follows the mutator, work driven by the clock is taken out whatever
the machine's load, and the outputs show the figures (and nothing new for other cells)."""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from icount import numfmt
from icount.backends.protocol import WindowCount
from icount.export import render_results
from icount.results import UNIT_PER_REQUEST, Cell, Results, Run
from icount.results.details import ServeDetail
from icount.serve import adapter as adapters
from icount.serve.cell_options import CellOptions
from icount.serve.runs import RunOutcome, measure_run
from icount.serve.server import Target
from icount.session.options import AUTO, Warmup
from tests.serve.test_runs import ADAPTER, SPLIT
from tests.support.fake_backend import FakeBackend, FakeConfig, FakeServer

N, GC = 7, 1000.0
MUTATOR = 1000.0 + 27.0 / 100  # the fake's window cost is part of each window's work


def gc(i: int) -> float:
    return GC if i % N == 0 else 0.0


@pytest.fixture
def target(tmp_path: Path) -> Target:
    (tmp_path / "adapter.toml").write_text(ADAPTER)
    return Target(adapters.load_adapter(tmp_path / "adapter.toml"), tmp_path / "build")


def run(target: Target, tmp_path: Path, config: FakeConfig, i: int = 0, **kw: Any) -> RunOutcome:
    kw.setdefault("idle_seconds", 0)
    kw.setdefault("warmup", Warmup(20))
    opts = CellOptions(backend=FakeBackend(config), cpus=SPLIT, runs=1,
                       reps=kw.pop("reps", 3), requests=100, **kw)  # fmt: skip
    return measure_run(target, target.adapter.paths[0], opts, tmp_path / f"run-{i}", None,
                       lambda text: None)  # fmt: skip


def cell(outcomes: list[RunOutcome]) -> Cell:
    runs = tuple(Run(o.value, o.reason is None, o.reason, o.detail) for o in outcomes)
    return Cell("fake", "plaintext", "fake", UNIT_PER_REQUEST, runs, {}, len(runs), 0.01)


def test_the_mutator_is_exact_and_the_collector_apart(target: Target, tmp_path: Path) -> None:
    outcomes = [run(target, tmp_path, FakeConfig(collector=gc), i) for i in range(3)]
    for o in outcomes:
        assert o.reason is None and o.detail is not None
        assert o.value == pytest.approx(MUTATOR)
        assert o.detail.runtime == "fake-gc"
        for r in o.detail.reps:  # 14 or 15 collections: the total is both figures
            assert r.per_request == pytest.approx(MUTATOR + (r.collector or 0) / r.requests)
            assert r.collector in (14 * GC, 15 * GC)
    c = cell(outcomes)
    f = c.runtime
    assert c.valid and f is not None and f.windows == 9
    # windows back to back at one phase to the collector (all 14 here): the interval's
    # edge term is what holds the truth
    assert abs(f.collector - GC / N) <= f.half_width
    truth = MUTATOR + GC / N
    assert f.total is not None and abs(f.total - truth) <= f.half_width


def test_a_total_whose_interval_does_not_fit_is_marked_with_the_windows_it_needs(
    target: Target, tmp_path: Path
) -> None:
    # every 70th request: 1 or 2 collections per window, an interval far wider than 1%
    config = FakeConfig(collector=lambda i: GC * 100 if i % 70 == 0 else 0.0)
    c = cell([run(target, tmp_path, config, i) for i in range(2)])
    f = c.runtime
    assert c.valid and f is not None and not f.total_valid
    assert f.reason is not None and "would bring it in" in f.reason
    assert "total ~" in render_results(Results({}, (c,)), "table", 200)


def test_outputs_show_the_three_figures(target: Target, tmp_path: Path) -> None:
    c = cell([run(target, tmp_path, FakeConfig(collector=gc), i) for i in range(3)])
    results = Results({}, (c,))
    table = render_results(results, "table", 200)
    assert "fake-gc: mutator 1.000k per request (the figure above), collector 140 ±3.333" in table
    assert "total 1.140k" in table
    assert "total 1.140k" in render_results(results, "md")
    header, row = render_results(results, "csv").splitlines()
    values = dict(zip(header.split(","), row.split(","), strict=True))
    assert values["runtime"] == "fake-gc" and values["total_valid"] == "true"
    assert float(values["collector"]) == pytest.approx(140.0)
    doc = json.loads(render_results(results, "json"))
    work = doc["cells"][0]["runtime_work"]
    assert work["runtime"] == "fake-gc" and work["windows"] == 9 and work["total_valid"]


def test_one_window_has_no_interval_and_every_format_says_so(
    target: Target, tmp_path: Path
) -> None:
    # one run of one window (the docs' --runs 1 --reps 1), in a file from before the bound
    # over spans: no interval can be taken, and JSON has no infinity (this was an internal
    # error of icount serve)
    o = run(target, tmp_path, FakeConfig(collector=gc), reps=1, max_windows=1)
    assert o.detail is not None and o.detail.contiguous
    spanned = cell([o]).runtime  # a span of one window is bounded all the same
    assert spanned is not None and math.isfinite(spanned.half_width) and spanned.total
    assert abs(spanned.total - (MUTATOR + GC / N)) <= spanned.half_width
    o = dataclasses.replace(o, detail=dataclasses.replace(o.detail, contiguous=False))
    c = cell([o])
    f = c.runtime
    assert f is not None and f.windows == 1 and not f.total_valid
    assert f.reason is not None and "one window gives no interval" in f.reason
    results = Results({}, (c,))
    assert "(mean of 1 window: no interval)" in render_results(results, "table", 200)
    doc = json.loads(render_results(results, "json"))
    assert doc["cells"][0]["runtime_work"]["interval_95"] is None
    header, row = render_results(results, "csv").splitlines()
    assert dict(zip(header.split(","), row.split(","), strict=True))["interval_95"] == ""


def test_a_cell_without_a_collector_shows_nothing_new(target: Target, tmp_path: Path) -> None:
    c = cell([run(target, tmp_path, FakeConfig(), i) for i in range(3)])
    assert c.runtime is None
    results = Results({}, (c,))
    assert render_results(results, "csv").splitlines()[0].endswith("valid,reason")
    assert "runtime_work" not in json.loads(render_results(results, "json"))["cells"][0]
    detail = c.runs[0].detail
    assert detail is not None and "runtime" not in detail.to_json()
    assert all(set(r) <= {"instructions", "requests", "processes"}
               for r in detail.to_json()["reps"])  # fmt: skip


def test_auto_warmup_follows_the_mutator_not_the_collector(target: Target, tmp_path: Path) -> None:
    """Without the collector apart, probes 14 and 15 collections in differ by 7% and
    auto never settles; the mutator's curve (falling for 300 requests) settles."""
    config = FakeConfig(cost=lambda i, p: 1000.0 + (500.0 if i < 300 else 0.0), collector=gc)
    o = run(target, tmp_path, config, warmup=AUTO)
    assert o.reason is None and o.detail is not None, o.reason
    assert o.detail.warmup_curve[-1][1] == pytest.approx(MUTATOR)
    assert o.value == pytest.approx(MUTATOR)


@pytest.mark.parametrize("delay", [0.0, 0.002], ids=["idle", "loaded"])
def test_work_driven_by_the_clock_is_taken_out_whatever_the_load(
    target: Target, tmp_path: Path, delay: float
) -> None:
    """200,000 instructions a second of clock-driven work: a loaded machine's windows
    last longer and count more of it, the mutator is the same."""
    config = FakeConfig(clock_rate=200_000.0, answer_delay_s=delay)
    o = run(target, tmp_path, config, idle_seconds=0.2)
    assert o.reason is None and o.detail is not None and o.value is not None, o.reason
    assert o.detail.clock_subtracted and all(r.seconds for r in o.detail.reps)
    assert o.value == pytest.approx(1000.0, rel=0.002)
    table = render_results(Results({}, (cell([o]),)), "table", 200)
    assert "taken out of the figure" in table


def test_a_collector_pattern_that_is_no_regular_expression_is_one_line_exit_2(
    tmp_path: Path,
) -> None:
    from tests.support.cli import run_icount_here

    done = run_icount_here(["serve", "--cmd", "true {port}", "--collector", "("], tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "icount: error: --collector '(' is not a regular expression: missing ), "
        "unterminated subpattern at position 0"
    )


def test_a_mutator_that_falls_as_the_collector_rises_is_not_still_warming(
    target: Target, tmp_path: Path
) -> None:
    """Work the split moves from the mutator to the collector window by window (the
    total flat) is not a server warming up."""
    config = FakeConfig(
        cost=lambda i, p: 1000.0 - (i // 100) * 10.0,
        collector=lambda i: (i // 100) * 10.0 or 0.001,
        window_cost=0,
    )
    o = run(target, tmp_path, config)
    assert o.reason is None and o.detail is not None, o.reason
    totals = [r.per_request for r in o.detail.reps]
    assert max(totals) - min(totals) < 0.01  # the whole count did not fall
    assert o.detail.mutator_per_request[0] > o.detail.mutator_per_request[-1]


def with_scheduler(monkeypatch: pytest.MonkeyPatch, per_request: Callable[[int], float]) -> None:
    """The fake's windows also count a scheduler waiting for requests, `per_request(w)`
    a request in the server's w-th window (the machine's load moving it window by
    window), reported apart as Go's is (icount/runtimes.py's SCHEDULER)."""
    opened: dict[int, int] = {}
    real_open, real_close = FakeServer.open_window, FakeServer.close_window

    def open_window(self: FakeServer) -> None:
        real_open(self)
        opened[id(self)] = self.requests

    def close_window(self: FakeServer) -> WindowCount:
        count = real_close(self)
        if count.runtime is None:
            return count
        wait = per_request(self.windows) * (self.requests - opened[id(self)])
        return dataclasses.replace(
            count, instructions=count.instructions + wait,
            processes=tuple(dataclasses.replace(p, instructions=p.instructions + wait)
                            for p in count.processes),
            runtime=dataclasses.replace(count.runtime, scheduler=int(wait)),
        )  # fmt: skip

    monkeypatch.setattr(FakeServer, "open_window", open_window)
    monkeypatch.setattr(FakeServer, "close_window", close_window)


def test_the_scheduler_is_in_neither_the_figure_nor_the_total(
    target: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scheduler that waits 100 or 300 instructions a request, window by window, as
    a client's timing and the machine's load move it: the whole counts are 20% apart,
    the mutator is exact and valid, and the total is mutator + collector, its interval
    and validity what they are without the scheduler; the scheduler is shown beside."""
    without = cell([run(target, tmp_path, FakeConfig(collector=gc), i) for i in range(3)])
    with_scheduler(monkeypatch, lambda w: 300.0 if w % 2 else 100.0)
    outcomes = [run(target, tmp_path, FakeConfig(collector=gc), i + 3) for i in range(3)]
    for o in outcomes:
        assert o.reason is None and o.detail is not None, o.reason
        assert o.value == pytest.approx(MUTATOR)
        assert {r.scheduler for r in o.detail.reps} == {100 * 100.0, 300 * 100.0}
        assert max(o.detail.per_request) / min(o.detail.per_request) > 1.15
    c = cell(outcomes)
    f, f0 = c.runtime, without.runtime
    assert c.valid and f is not None and f0 is not None
    assert f.scheduler is not None and f0.scheduler is None
    waits = [(r.scheduler or 0) / r.requests for o in outcomes for r in o.detail.reps]  # type: ignore[union-attr]
    assert f.scheduler == pytest.approx(statistics.mean(waits))
    assert 0 < f.scheduler_half_width < math.inf
    assert (f.mutator, f.collector, f.half_width) == (f0.mutator, f0.collector, f0.half_width)
    assert f.total == f0.total and f.total_valid and f.total == f.mutator + f.collector  # type: ignore[operator]
    results = Results({}, (c,))
    table = render_results(results, "table", 300)
    assert f"beside it the scheduler {numfmt.si(f.scheduler)} ±" in table
    assert "in neither the figure nor the total" in table
    header, row = render_results(results, "csv").splitlines()
    values = dict(zip(header.split(","), row.split(","), strict=True))
    assert header.endswith(",total_valid,scheduler,scheduler_interval_95")
    assert float(values["scheduler"]) == pytest.approx(f.scheduler, abs=0.001)
    assert float(values["total"]) == pytest.approx(f.total, abs=0.001)
    doc = json.loads(render_results(results, "json"))
    work = doc["cells"][0]["runtime_work"]
    assert work["scheduler"] == pytest.approx(f.scheduler, abs=0.001)
    assert work["scheduler_interval_95"] == pytest.approx(f.scheduler_half_width, abs=0.001)
    assert all("scheduler" in r for r in doc["cells"][0]["runs"][0]["detail"]["reps"])
    # and a file without one keeps its columns and keys
    old = Results({}, (without,))
    assert render_results(old, "csv").splitlines()[0].endswith(",total,total_valid")
    assert "scheduler" not in render_results(old, "json")


def test_auto_warmup_follows_the_mutator_not_the_scheduler(
    target: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Probes whose scheduler waits 0, 500, 0, 500 ... a request never settle on the
    whole count; on the mutator (falling for 300 requests, then flat) they do."""
    with_scheduler(monkeypatch, lambda w: 500.0 if w % 2 else 0.0)
    config = FakeConfig(cost=lambda i, p: 1000.0 + (500.0 if i < 300 else 0.0), collector=gc)
    o = run(target, tmp_path, config, warmup=AUTO)
    assert o.reason is None and o.detail is not None, o.reason
    assert o.detail.warmup_curve[-1][1] == pytest.approx(MUTATOR)
    assert o.value == pytest.approx(MUTATOR)


def test_a_negative_scheduler_in_a_results_file_is_refused() -> None:
    from icount.results.details import detail_from_json

    doc = {"window": "dump", "warmup": 0, "reps": [
        {"instructions": 100.0, "requests": 1, "collector": 1.0, "scheduler": -5.0}]}  # fmt: skip
    with pytest.raises(ValueError, match=r"rep\.scheduler -5\.0 is negative"):
        detail_from_json(doc)
    doc["reps"][0]["scheduler"] = 5.0  # type: ignore[index]
    detail = detail_from_json(doc)
    assert isinstance(detail, ServeDetail) and detail.reps[0].scheduler == 5.0
    assert detail.mutator(detail.reps[0]) == 94.0


def test_with_idle_arrival_the_scheduler_is_part_of_the_total(
    target: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each request reaching an idle server finds it parked, so its scheduler is a fixed
    part of the request: a cell measured so adds it to the total (its windows' spread in
    the interval) and draws it in the stack; the same runs measured closed do not."""
    from icount import charts

    with_scheduler(monkeypatch, lambda w: 200.0 + (w % 2))  # repeats within 1 a request
    outcomes = [run(target, tmp_path, FakeConfig(collector=gc), i) for i in range(3)]
    closed = cell(outcomes)
    idle = dataclasses.replace(closed, params={"arrival": "idle"})
    f, f0 = idle.runtime, closed.runtime
    assert f is not None and f0 is not None and f.scheduler is not None
    assert f.scheduler_in_total and not f0.scheduler_in_total
    assert f.mutator == f0.mutator and f.collector == f0.collector
    assert f.total == pytest.approx(f0.total + f.scheduler)  # type: ignore[operator]
    assert f.total_valid and f.half_width > f0.half_width  # the scheduler's spread is in it
    table = render_results(Results({}, (idle,)), "table", 300)
    assert f"the scheduler {numfmt.si(f.scheduler)} ±" in table and "in the total" in table
    assert "in neither" not in table
    svg = charts.results_svg(Results({}, (idle,)))
    assert 'class="c3 seg"' in svg and "each request found the server parked" in svg
    assert 'class="c3 seg"' not in charts.results_svg(Results({}, (closed,)))
