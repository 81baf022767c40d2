"""Windows added for a collected runtime's interval (serve/added_windows.py):
after the --reps windows, more of the same --requests until the cell's total is valid,
within --max-windows and --max-extra-seconds a run; the run's median and its rules keep
to the --reps windows. A run's windows are one span, judged by the bound over spans
(results/runtime.py): a collection of C instructions every 70th request needs spans of
2C / (1% of the total) requests. Through the fake backend (counts known by
construction, no sleeps: the time cap reads a fake clock), and once under callgrind with
c-epoll's known collector (periodic_work(), every 700th request)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from icount import backends
from icount import cpus as cpus_mod
from icount.backends.callgrind import CallgrindOptions
from icount.errors import UsageError
from icount.export import render_results
from icount.results import UNIT_PER_REQUEST, Cell, Results, Run
from icount.results.details import ServeDetail, detail_from_json
from icount.results.files import provenance_path
from icount.serve import adapter as adapters
from icount.serve import plan as plan_mod
from icount.serve import window as window_mod
from icount.serve.adapter import load_adapter
from icount.serve.cell_options import CellOptions
from icount.serve.runs import RunOutcome, measure_run
from icount.serve.server import Target
from icount.session import options as o
from icount.session.options import Warmup
from tests.serve.test_runs import ADAPTER, SPLIT
from tests.support.fake_backend import FakeBackend, FakeConfig

from .conftest import AdapterMaker

MUTATOR = 1000.0 + 27.0 / 100  # the fake's window cost is part of each window's work


def every(n: int, work: float) -> Callable[[int], float]:
    """A collector of `work` instructions every `n`th request: windows of 100 requests
    hold one or two of them when n is 70, so they differ by work/100 per request."""
    return lambda i: work if i % n == 0 else 0.0


@pytest.fixture
def target(tmp_path: Path) -> Target:
    (tmp_path / "adapter.toml").write_text(ADAPTER)
    return Target(adapters.load_adapter(tmp_path / "adapter.toml"), tmp_path / "build")


def run(target: Target, tmp_path: Path, config: FakeConfig, i: int = 0,
        earlier: Sequence[ServeDetail] = (), notes: list[str] | None = None,
        **kw: Any) -> RunOutcome:  # fmt: skip
    opts = CellOptions(backend=FakeBackend(config), cpus=SPLIT, runs=kw.pop("runs", 1),
                       reps=3, requests=100, warmup=Warmup(20), idle_seconds=0, **kw)  # fmt: skip
    note = (lambda text: None) if notes is None else notes.append
    return measure_run(target, target.adapter.paths[0], opts, tmp_path / f"run-{i}", None,
                       note, earlier)  # fmt: skip


def cell(outcomes: Sequence[RunOutcome]) -> Cell:
    runs = tuple(Run(x.value, x.reason is None, x.reason, x.detail) for x in outcomes)
    return Cell("fake", "plaintext", "fake", UNIT_PER_REQUEST, runs, {}, len(runs), 0.01)


def asked_only(outcome: RunOutcome) -> RunOutcome:
    """The run as it was before any window was added."""
    d = outcome.detail
    assert d is not None
    kept = dataclasses.replace(d, reps=d.asked_reps, added_windows=0)
    return dataclasses.replace(outcome, detail=kept)


def test_windows_are_added_until_the_totals_interval_fits(target: Target, tmp_path: Path) -> None:
    notes: list[str] = []
    # the mutator of the windows after request 400 is 100 more: the added windows must
    # not move the run's median, which is the --reps windows'. C = 3000 over a total of
    # ~1043: spans of 3000 / 5.2 = ~580 requests, 6 windows
    config = FakeConfig(cost=lambda i, p: 1000.0 + (100.0 if i >= 400 else 0.0),
                        collector=every(70, 3000.0))  # fmt: skip
    outcome = run(target, tmp_path, config, notes=notes)
    d = outcome.detail
    assert outcome.reason is None and d is not None, outcome.reason
    assert d.contiguous and d.added_windows > 0
    assert len(d.reps) == 3 + d.added_windows <= o.MAX_WINDOWS
    assert d.window_cap is None
    assert all(r.requests == 100 for r in d.reps)
    assert outcome.value == pytest.approx(MUTATOR)  # the median of the 3 asked-for reps
    assert len(outcome.functions) == 3  # the spread explanation keeps to them too
    before, after = cell([asked_only(outcome)]).runtime, cell([outcome]).runtime
    assert before is not None and not before.total_valid  # ~ with the 3 windows asked
    assert after is not None and after.bound is not None
    assert after.total_valid, after.reason
    assert after.windows == len(d.reps) and after.added_windows == d.added_windows
    truth = MUTATOR + 3000.0 / 70
    assert after.total is not None and abs(after.total - truth) <= after.half_width
    # one window fewer would not have fitted: windows stop as soon as it does
    fewer = dataclasses.replace(d, reps=d.reps[:-1], added_windows=d.added_windows - 1)
    shorter = cell([dataclasses.replace(outcome, detail=fewer)]).runtime
    assert shorter is not None and not shorter.total_valid
    added = [n for n in notes if "(added: the runtime's interval needs about" in n]
    assert len(added) == d.added_windows and added[0].startswith("rep 4/20 (added")
    # the file says how many were added, and reads back the same
    doc = d.to_json()
    assert doc["added_windows"] == d.added_windows and "window_cap" not in doc
    assert doc["contiguous"] is True
    assert detail_from_json(json.loads(json.dumps(doc))) == d
    results = Results({}, (cell([outcome]),))
    work = json.loads(render_results(results, "json"))["cells"][0]["runtime_work"]
    assert work["added_windows"] == d.added_windows and work["rule"] == "span"
    assert work["spans"] == [100 * len(d.reps)] and work["collection"] >= 3000.0
    n = len(d.reps)
    assert (f"(mean of {n} windows, {n - 3} added for the interval; bound over 1 span of "
            f"{100 * n} requests, a collection up to") in render_results(
        results, "table", 200
    )  # fmt: skip


def test_the_cells_earlier_runs_are_pooled(target: Target, tmp_path: Path) -> None:
    """Under the interval over windows (runs whose windows were not one span): a run
    whose cell's earlier run already took the windows the cell needs adds none, where the
    same run alone, assuming the cell's other run alike, adds its share."""
    from icount.results.runtime import windows_to_fit

    first = run(target, tmp_path, FakeConfig(collector=every(70, 1500.0)), max_windows=3)
    assert first.detail is not None
    apart = dataclasses.replace(first.detail, contiguous=False)
    # as a file from before the bound: twelve windows, pooled
    more = dataclasses.replace(apart, reps=apart.reps * 4, added_windows=9)
    assert windows_to_fit([more], apart, 2, 0.01) == 3
    alone = windows_to_fit([], apart, 2, 0.01)
    assert alone is not None and 3 < alone < 12


def test_a_cap_in_windows_stops_them_and_the_total_stays_not_valid(
    target: Target, tmp_path: Path
) -> None:
    notes: list[str] = []
    outcome = run(target, tmp_path, FakeConfig(collector=every(70, 3000.0)), notes=notes,
                  max_windows=5)  # fmt: skip
    d = outcome.detail
    assert outcome.reason is None and d is not None
    # the need, 6 windows, is read at the whole collection seen from the first: beyond
    # the cap, no window is spent on a total that would stay ~
    assert len(d.reps) == 3 and d.window_cap == "--max-windows 5"
    c = cell([outcome])
    f = c.runtime
    assert c.valid and f is not None and not f.total_valid and f.window_cap == "--max-windows 5"
    assert f.reason is not None
    assert f.reason.startswith("the total's bound over 1 span of 300 requests is ")
    assert "wider than the 1% limit: the largest collection seen, " in f.reason
    assert "(a run's windows stopped at --max-windows 5): about 3 more windows a run" in f.reason
    (stop,) = [n for n in notes if n.startswith("windows added for the runtime's interval")]
    assert stop.startswith("windows added for the runtime's interval stopped at --max-windows 5 ")
    assert stop.endswith(" windows a run)") and "(it needs about 6 " in stop
    assert "total ~" in render_results(Results({}, (c,)), "table", 200)


def test_a_cap_in_time_stops_them(
    target: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each window reads 10 s on the clock the cap reads: a collection of 8000 every 70th
    request needs 15 windows, 12 added: 150 s hold them, 85 s do not, and then none is
    spent on a total that would stay ~."""
    ticks = iter(range(0, 10**6, 10))  # read as each window starts and ends
    monkeypatch.setattr(window_mod, "CLOCK", lambda: float(next(ticks)))
    outcome = run(target, tmp_path, FakeConfig(collector=every(70, 8000.0)),
                  max_extra_seconds=85.0)  # fmt: skip
    d = outcome.detail
    assert d is not None and d.window_cap == "--max-extra-seconds 85", d
    assert d.added_windows == 0
    f = cell([outcome]).runtime
    assert f is not None and not f.total_valid and f.reason is not None
    assert "stopped at --max-extra-seconds 85" in f.reason
    held = run(target, tmp_path, FakeConfig(collector=every(70, 8000.0)), 1,
               max_extra_seconds=150.0)  # fmt: skip
    assert held.detail is not None and held.detail.window_cap is None
    assert held.detail.added_windows == 12
    f = cell([held]).runtime
    assert f is not None and f.total_valid, f


def test_a_need_far_beyond_the_caps_adds_no_window(target: Target, tmp_path: Path) -> None:
    """A collection of 50,000 every 250th request over a total of ~1200: spans of ~8,300
    requests, 84 windows a run; even half the collection would need 42, beyond the cap of
    20, so none is spent on it."""
    outcome = run(target, tmp_path, FakeConfig(collector=every(250, 50_000.0)))
    d = outcome.detail
    assert d is not None and d.added_windows == 0 and d.window_cap == "--max-windows 20"
    f = cell([outcome]).runtime
    assert f is not None and not f.total_valid
    assert f.reason is not None and "stopped at --max-windows 20" in f.reason


def test_nothing_changes_without_runtime_work(target: Target, tmp_path: Path) -> None:
    # windows that differ by a collector the backend does not find: no runtime, none added
    config = FakeConfig(cost=lambda i, p: 1000.0 + (5e4 if i % 250 == 0 else 0.0))
    outcome = run(target, tmp_path, config)
    d = outcome.detail
    assert d is not None and len(d.reps) == 3 and d.added_windows == 0 and d.window_cap is None
    doc = d.to_json()
    assert "added_windows" not in doc and "window_cap" not in doc
    # nor where the runtime's interval fits with the windows asked for
    fits = run(target, tmp_path, FakeConfig(collector=every(7, 1000.0)), 1)
    assert fits.detail is not None and len(fits.detail.reps) == 3
    assert fits.detail.window_cap is None
    f = cell([fits]).runtime
    assert f is not None and f.total_valid and f.added_windows == 0


def test_a_detail_claiming_more_added_windows_than_reps_is_refused(
    target: Target, tmp_path: Path
) -> None:
    outcome = run(target, tmp_path, FakeConfig())
    assert outcome.detail is not None
    doc = outcome.detail.to_json() | {"added_windows": 4}
    with pytest.raises(ValueError, match="added_windows is more than its reps"):
        detail_from_json(doc)


def test_the_caps_are_recorded_in_the_plan_and_resumed_unless_given(tmp_path: Path) -> None:
    request = plan_mod.ServeRequest(max_windows=40, max_extra_seconds=30.0)
    saved = request.to_json(())
    assert (saved["max_windows"], saved["max_extra_seconds"]) == (40, 30.0)
    out = tmp_path / "r.json"
    provenance_path(out).write_text(json.dumps({"plan": {**saved, "targets": ["/a.toml"]}}))
    resumed = plan_mod.resume_request(plan_mod.ServeRequest(), out, frozenset())
    assert (resumed.max_windows, resumed.max_extra_seconds) == (40, 30.0)
    given = plan_mod.ServeRequest(max_windows=5)
    again = plan_mod.resume_request(given, out, frozenset({"max_windows"}))
    assert (again.max_windows, again.max_extra_seconds) == (5, 30.0)
    # a session recorded before the caps existed resumes with the defaults
    provenance_path(out).write_text(json.dumps({"plan": {"targets": ["/a.toml"]}}))
    old = plan_mod.resume_request(plan_mod.ServeRequest(), out, frozenset())
    assert (old.max_windows, old.max_extra_seconds) == (o.MAX_WINDOWS, o.MAX_EXTRA_SECONDS)
    provenance_path(out).write_text(json.dumps({"plan": {"max_windows": 0}}))
    with pytest.raises(UsageError, match="the recorded max_windows 0 is not valid"):
        plan_mod.resume_request(plan_mod.ServeRequest(targets=("x",)), out, frozenset())


def test_collector_patterns_are_in_the_cells_params_and_must_match_to_resume(
    target: Target,
) -> None:
    path = target.adapter.paths[0]
    patterns = CallgrindOptions(collector=("my_gc", "Sweep"))
    with_them = CellOptions(backend=backends.create("callgrind", patterns), cpus=SPLIT)
    without = CellOptions(backend=backends.create("callgrind"), cpus=SPLIT)
    params = plan_mod.cell_params(path, with_them)
    assert params["collectors"] == ["my_gc", "Sweep"]
    assert "collectors" not in plan_mod.cell_params(path, without)  # as cells before read
    assert "collectors" in plan_mod.COMPARABLE_PARAMS  # --resume refuses to mix the two


N, K = 700, 5000  # periodic_work(): 2K instructions every Nth request
TRUTH = 2 * K / N  # 14.29 per request: windows of 1000 requests hold 1 or 2 calls


def c_epoll_run(make_adapter: AdapterMaker, tmp_path: Path, loop: int, i: int,
                earlier: Sequence[ServeDetail] = ()) -> RunOutcome:  # fmt: skip
    adapter = load_adapter(make_adapter(f"k{loop}", "--every", str(N), "--every-loop", str(loop)))
    split = cpus_mod.split(None, None)
    backend = backends.create("callgrind", CallgrindOptions(collector=("periodic_work",)))
    opts = CellOptions(backend=backend, cpus=split, runs=2, reps=3, requests=1000,
                       warmup=Warmup(100), idle_seconds=0)  # fmt: skip
    with cpus_mod.pinned_self(split.load):
        return measure_run(Target(adapter, tmp_path / "build"), adapter.paths[0], opts,
                           tmp_path / f"run-{loop}-{i}", None, lambda text: None,
                           earlier)  # fmt: skip


@pytest.mark.slow
def test_a_known_collectors_total_is_bounded_over_spans_with_no_window_added(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    """A collector of 2K instructions every Nth request: each run's three windows are one
    span of 3,000 requests, over which the total is off by at most one collection (the
    bound, results/runtime.py), 0.74% of it here: valid without a window added, the
    mutator exact, and the truth inside the bound."""
    base = c_epoll_run(make_adapter, tmp_path, 0, 0)  # the call alone: a few instructions
    first = c_epoll_run(make_adapter, tmp_path, K, 1)
    assert first.detail is not None
    second = c_epoll_run(make_adapter, tmp_path, K, 2, [first.detail])
    for x in (base, first, second):
        assert x.reason is None and x.detail is not None and x.value is not None, x.reason
    assert base.value is not None and first.value is not None
    assert first.value == pytest.approx(base.value, rel=1e-4)  # the mutator stays exact
    b = cell([base]).runtime
    got = cell([first, second]).runtime
    assert b is not None and got is not None
    added = sum(x.detail.added_windows for x in (first, second) if x.detail)
    truth = base.value + b.collector + TRUTH
    print(f"truth {truth:.3f}; {got.windows} windows ({added} added): {got.total} "
          f"±{got.half_width:.3f} ({got.reason})")  # fmt: skip
    assert got.bound is not None and got.total_valid, got.reason
    assert added == 0  # the projection asks for no window where the bound already fits
    assert got.total is not None and abs(got.total - truth) <= got.half_width


def test_a_collection_that_grows_with_the_span_stops_the_adding(
    target: Target, tmp_path: Path
) -> None:
    """A collector whose every collection is larger than the last (a heap that keeps
    growing: every 150th request's costs 20 x its index): each window added shows a
    larger C and a larger need, and the run stops at the first whose need at the whole C
    is beyond the cap, for a total that stays `~`."""
    notes: list[str] = []
    growing = lambda i: 20.0 * i if i % 150 == 0 else 0.0  # noqa: E731
    outcome = run(target, tmp_path, FakeConfig(collector=growing), notes=notes)
    d = outcome.detail
    assert outcome.reason is None and d is not None
    assert d.added_windows <= 3 and d.window_cap == "--max-windows 20", d.added_windows
    f = cell([outcome]).runtime
    assert f is not None and not f.total_valid
    (stop,) = [n for n in notes if n.startswith("windows added for the runtime's interval")]
    assert "stopped at --max-windows 20" in stop
    needs = [int(n.split("needs about ")[1].split()[0]) for n in notes if "needs about" in n]
    assert needs[-1] > 20 and all(k <= 20 for k in needs[:-1]), needs
