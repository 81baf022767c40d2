"""Staggered warm-ups (serve/runs.py `stagger`): run k of a collected runtime's cell warms
up k x reps x requests more than the cell's warm-up, so that the cell's windows tile one
span of a collector's cycle counted in requests instead of measuring one phase of it in
every run; a cell without a runtime keeps its warm-up. Through the fake backend (counts
known by construction), and under callgrind with c-epoll's known collector
(periodic_work() every Nth request)."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from icount import backends, results
from icount import cpus as cpus_mod
from icount.backends.callgrind import CallgrindOptions
from icount.results import UNIT_PER_REQUEST, Cell, Run
from icount.results.details import ServeDetail
from icount.serve import adapter as adapters
from icount.serve.adapter import load_adapter
from icount.serve.cell_options import CellOptions
from icount.serve.runs import RunOutcome, measure_run
from icount.serve.server import Target
from icount.serve.targets import PathChoice
from icount.session.options import Warmup
from tests.serve.test_runs import ADAPTER, SPLIT
from tests.support import fake_backend
from tests.support.fake_backend import FakeBackend, FakeConfig

from .conftest import AdapterMaker

# requests a fake server is sent before the warm-up: one readiness probe, one verify
BEFORE = 2


def every(n: int, work: float) -> Callable[[int], float]:
    return lambda i: work if i % n == 0 else 0.0


def _session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             config: FakeConfig) -> results.Results:  # fmt: skip
    """One cell of 3 runs of 3 windows of 50 requests after a warm-up of 5, saved and
    read back."""
    from icount import environment
    from icount.serve import plan as plan_mod
    from icount.serve import session
    from icount.serve.plan import ServeRequest

    monkeypatch.setitem(backends.REGISTRY, "fake", "tests.support.fake_backend")
    monkeypatch.setattr(fake_backend, "CONFIG", config)
    (tmp_path / "fake").mkdir(exist_ok=True)
    (tmp_path / "fake" / "adapter.toml").write_text(ADAPTER)
    request = ServeRequest(targets=(str(tmp_path / "fake" / "adapter.toml"),), backend="fake",
                           runs=3, reps=3, requests=50, warmup=Warmup(5), idle_seconds=0,
                           only_paths=(PathChoice("plaintext"),))  # fmt: skip
    out = tmp_path / "r.json"
    plan = plan_mod.prepare(request, output=out, resume=None, force=False)
    recorder = environment.ProvenanceRecorder(["icount", "serve"])
    res = session.run_session(plan, lambda text, done, total: None, recorder)
    assert results.load(out).sorted() == res.sorted()  # what the file reads back
    return res


def _details(cell: Cell) -> list[ServeDetail]:
    out = [r.detail for r in cell.runs if isinstance(r.detail, ServeDetail)]
    assert len(out) == len(cell.runs) == 3 and all(r.valid for r in cell.runs)
    return out


def test_run_k_of_a_collected_runtime_warms_up_k_times_its_windows_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a small collector every 7th request: the interval fits, no window is added
    config = FakeConfig(cost=lambda i, p: 800.0, collector=every(7, 7.0))
    (cell,) = _session(tmp_path, monkeypatch, config).cells
    details = _details(cell)
    assert [d.warmup for d in details] == [5, 5 + 150, 5 + 300]
    assert cell.params["warmup"] == 5  # the cell keeps the warm-up asked for
    assert all(d.added_windows == 0 and d.runtime == "fake-gc" for d in details)
    assert [s.requests for s in config.started] == [BEFORE + 5 + k * 150 + 150 for k in range(3)]
    # the cell's nine windows are one process's 450 contiguous requests: each window
    # holds the collector's calls of its own 50 requests of that span
    start = BEFORE + 5
    calls = [r.runtime_calls for d in details for r in d.reps]
    span = [sum(1 for i in range(start + 50 * m, start + 50 * (m + 1)) if i % 7 == 0)
            for m in range(9)]  # fmt: skip
    assert calls == span and calls[:3] != calls[3:6]  # runs at phases that differ
    f = cell.runtime
    assert f is not None
    assert f.collector == pytest.approx(7.0 * sum(span) / 450)


def test_a_cell_without_a_runtime_keeps_its_warm_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = FakeConfig(cost=lambda i, p: 800.0)
    (cell,) = _session(tmp_path, monkeypatch, config).cells
    details = _details(cell)
    assert [d.warmup for d in details] == [5, 5, 5]
    assert all(d.runtime is None for d in details)
    assert [d.to_json() for d in details] == [details[0].to_json()] * 3
    assert {s.requests for s in config.started} == {BEFORE + 5 + 150}


def _run(target: Target, tmp_path: Path, config: FakeConfig, name: str,
         earlier: Sequence[ServeDetail] = (), **kw: int) -> RunOutcome:  # fmt: skip
    opts = CellOptions(backend=FakeBackend(config), cpus=SPLIT, runs=3, reps=3, requests=100,
                       warmup=Warmup(None), idle_seconds=0)  # fmt: skip
    return measure_run(target, target.adapter.paths[0], opts, tmp_path / name, None,
                       lambda text: None, earlier, **kw)  # fmt: skip


def test_after_warmup_auto_the_stagger_is_cheap_and_a_run_without_index_is_not_staggered(
    tmp_path: Path,
) -> None:
    (tmp_path / "adapter.toml").write_text(ADAPTER)
    target = Target(adapters.load_adapter(tmp_path / "adapter.toml"), tmp_path / "build")
    config = FakeConfig(cost=lambda i, p: 800.0, collector=every(7, 7.0))
    first = _run(target, tmp_path, config, "run-0")
    assert first.detail is not None and first.reason is None, first.reason
    settled = first.detail.warmup
    assert settled == first.detail.warmup_curve[-1][0]  # auto's own count, unstaggered
    cheap = config.instrumented.count(False)
    second = _run(target, tmp_path, config, "run-1", [first.detail], run=1)
    assert second.detail is not None and second.reason is None, second.reason
    assert second.detail.warmup == settled + 300
    assert second.detail.warmup_curve == first.detail.warmup_curve  # the curve as it was
    # the stagger runs uninstrumented, one switch more than auto's own cheap warm-ups
    assert config.instrumented.count(False) == 2 * cheap + 1
    assert config.started[-1].requests == BEFORE + settled + 300 + 300
    # as the interleave of `icount compare` calls it: no run index, no stagger
    pair = _run(target, tmp_path, config, "pair", [first.detail, second.detail])
    assert pair.detail is not None and pair.detail.warmup == settled


N, K = 90, 5000  # 1000-request windows hold 11 or 12 calls; 3000 hold 33 or 34; 9000, 100
TRUTH = 2 * K / N  # the collector's instructions per request (its loop: 2 a turn)


@pytest.mark.slow
def test_staggered_runs_tile_the_collectors_cycle(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    """Without the stagger two runs see the same phases (their windows count the same
    calls), and a cell of such runs is off the truth by a third of a call per run's
    requests; staggered, the cell's 9000 requests hold exactly 100 calls."""
    adapter = load_adapter(make_adapter("every", "--every", str(N), "--every-loop", str(K)))
    split = cpus_mod.split(None, None)
    backend = backends.create("callgrind", CallgrindOptions(collector=("periodic_work",)))
    opts = CellOptions(backend=backend, cpus=split, runs=3, reps=3, requests=1000,
                       warmup=Warmup(100), idle_seconds=0, max_windows=3)  # fmt: skip
    target = Target(adapter, tmp_path / "build")

    def measure(name: str, earlier: Sequence[ServeDetail], run: int) -> ServeDetail:
        with cpus_mod.pinned_self(split.load):
            o = measure_run(target, adapter.paths[0], opts, tmp_path / name, None,
                            lambda text: None, earlier, run)  # fmt: skip
        assert o.reason is None and o.detail is not None, o.reason
        assert o.detail.runtime == "user"
        return o.detail

    def figures(details: Sequence[ServeDetail]) -> tuple[float, float, float, bool]:
        runs = tuple(Run(statistics.median(d.mutator_per_request), True, None, d)
                     for d in details)  # fmt: skip
        cell = Cell("c", "plaintext", "callgrind", UNIT_PER_REQUEST, runs, {}, len(runs), 0.01)
        f = cell.runtime
        assert f is not None and f.mutator is not None and f.total is not None
        truth = f.mutator + TRUTH
        return f.collector, f.half_width, f.total - truth, f.total_valid

    first = measure("run-0", (), 0)
    same = measure("run-0-again", [first], 0)  # as every run was before the stagger
    assert [r.runtime_calls for r in same.reps] == [r.runtime_calls for r in first.reps]
    assert [r.collector for r in same.reps] == [r.collector for r in first.reps]
    shared, _, _, _ = figures([first, same])
    second = measure("run-1", [first], 1)
    third = measure("run-2", [first, second], 2)
    assert (second.warmup, third.warmup) == (3100, 6100)
    collector, half, off, valid = figures([first, second, third])
    print(f"collector {collector:.2f} staggered, {shared:.2f} in one phase, truth "
          f"{TRUTH:.2f}; total off the truth by {off:.2f} (±{half:.2f})")  # fmt: skip
    assert sum(r.runtime_calls or 0 for d in (first, second, third) for r in d.reps) == 100
    assert abs(collector - TRUTH) / TRUTH < 0.005
    assert abs(shared - TRUTH) / TRUTH > 0.005  # the bias the stagger takes away
    assert abs(off) <= half and valid


def test_only_runtime_work_counted_apart_staggers() -> None:
    """With --collector every profile names a runtime (USER), even a C server's where no
    pattern matched, and CPython's collector rarely runs in a window: only work counted
    apart makes a cell's runs staggered."""
    from icount.results.details import Rep
    from icount.runtimes import USER
    from icount.serve.runs import stagger

    opts = CellOptions(backend=FakeBackend(FakeConfig()), cpus=SPLIT, reps=3, requests=50)
    nothing = ServeDetail("fake", 5, (Rep(1000, 50, collector=0.0, compiler=0.0),), runtime=USER)
    matched = ServeDetail("fake", 5, (Rep(1000, 50, collector=30.0, compiler=0.0),), runtime=USER)
    assert stagger(1, opts, [nothing]) == 0
    assert stagger(2, opts, [nothing, nothing]) == 0
    assert stagger(1, opts, [matched]) == 150
    assert stagger(2, opts, [matched, matched]) == 300
    # a runtime of the table whose collector ran in no window (CPython's, mostly)
    quiet = ServeDetail("fake", 5, (Rep(1000, 50, collector=0.0, compiler=0.0),),
                        runtime="cpython")  # fmt: skip
    assert stagger(1, opts, [quiet]) == 0


def test_memory_runs_replay_the_warm_up_asked_for_not_the_stagger() -> None:
    from icount.results.details import Rep
    from icount.serve.native import warmup_of

    rep = (Rep(1000, 50, collector=30.0, compiler=0.0),)
    fixed = [ServeDetail("fake", 5 + k * 150, rep, runtime="v8") for k in range(3)]
    assert warmup_of(fixed, 5) == 5
    # auto: where each run settled (its curve's last probe), before its stagger
    auto = [ServeDetail("fake", s + k * 150, rep, warmup_curve=((s // 2, 9.0), (s, 8.0)),
                        runtime="v8") for k, s in enumerate((400, 800, 600))]  # fmt: skip
    assert warmup_of(auto, None) == 600
