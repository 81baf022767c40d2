"""Go's runtime work on recorded go-http windows: the scheduler's wait for a request that
has not arrived yet is counted apart from the collector and from the request's own work
(fixtures/go/README.md)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from icount import numfmt, runtimes
from icount.backends.callgrind_server import CallgrindServer
from icount.backends.protocol import WindowCount
from icount.callgrind.parser import parse_bytes, parse_file
from icount.charts import svg
from icount.charts.runtime import runtime_figure
from icount.compare import geomean
from icount.compare.model import Verdict, compare, judge
from icount.compare.thresholds import Thresholds
from icount.export import render_results
from icount.results import UNIT_PER_REQUEST, Cell, Results, Run
from icount.results.details import WINDOW_DUMPS, Rep, ServeDetail
from icount.results.files import from_json as results_from_json
from icount.serve.http_client import LoadResult
from icount.serve.window import count_window

GO_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "go"


def per_request(name: str, requests: int) -> tuple[float, runtimes.RuntimeWork]:
    prof = parse_file(GO_FIXTURES / name)
    total = int(prof.self_cost[:, prof.event_index("Ir")].sum())
    return total / requests, runtimes.runtime_work(prof)


def test_the_scheduler_waiting_for_each_request_is_counted_apart_from_the_request() -> None:
    """Two windows of one go-http plaintext build: a client that sends each request as
    soon as it has the answer (most requests already there when the server reads), and
    one that sleeps 2 ms first (the server waits for every one). The whole counts differ
    by 8.4%; what is left once the collector and the scheduler are out differs by 0.4%."""
    answered_total, answered = per_request("plaintext-answered.callgrind", 10_000)
    waited_total, waited = per_request("plaintext-waited.callgrind", 5_000)
    assert answered.runtime == waited.runtime == "go"
    assert waited_total / answered_total > 1.08
    rest_answered = answered_total - (answered.collector + answered.scheduler) / 10_000
    rest_waited = waited_total - (waited.collector + waited.scheduler) / 5_000
    assert abs(rest_waited / rest_answered - 1) < 0.005
    # the difference is the scheduler's, not the collector's: the collector reads the same
    moved = waited.scheduler / 5_000 - answered.scheduler / 10_000
    assert moved > 0.9 * (waited_total - answered_total)
    assert abs(waited.collector / 5_000 - answered.collector / 10_000) < 20
    assert answered.compiler == waited.compiler == 0


def test_scheduler_functions_are_not_the_collectors_nor_the_requests() -> None:
    """Each Go function goes to one kind: findRunnable and netpoll (its recursive
    activation too) to the scheduler, scanobject to the collector, the handler and
    mallocgc to the request."""
    prof = parse_bytes(
        b"# callgrind format\nevents: Ir\n"
        b"fn=runtime.mallocgc\n0 40\n"
        b"fn=runtime.findRunnable\n0 30\n"
        b"fn=runtime.netpoll\n0 8\n"
        b"fn=runtime.netpoll'2\n0 2\n"
        b"fn=runtime.scanobject\n0 20\n"
        b"fn=main.handler\n0 100\n",
        "go",
    )
    work = runtimes.runtime_work(prof)
    assert (work.runtime, work.collector, work.compiler, work.scheduler) == ("go", 20, 0, 40)


def test_no_other_runtime_names_scheduler_work() -> None:
    """Only Go's entry has the scheduler's kind: elsewhere the field stays 0, so the
    runtimes measured before read as they did."""
    for runtime in runtimes.TABLE:
        kinds = {e.kind for e in runtime.entries}
        assert (runtimes.SCHEDULER in kinds) == (runtime.name == "go")


class _RecordedServer:
    """A go-http server whose windows are the recorded ones: each close hands the next
    fixture to the callgrind backend as a dump of its own (the backend reads and sums it
    as it would a live process's), so only the vgdb dump is not the real path."""

    def __init__(self, out: Path, windows: list[str]) -> None:
        server = CallgrindServer.__new__(CallgrindServer)  # no valgrind to start here
        server.out, server.pid, server.thread, server.root_only = out, 1, None, False
        server.keep_profiles, server.collectors, server.profile_top = False, (), 0
        server._seen, server._ended, server._threads = set(), set(), set()
        server._order, server._functions, server._profiles, server._runtime = {1: 0}, {}, [], {}
        self.backend, self.windows, self.opened_at, self.close_latency_s = server, windows, 0.0, 0.0

    def open_window(self) -> None:
        self.opened_at = time.monotonic()

    def close_window(self) -> WindowCount:
        n = len(self.backend._seen) + 1
        shutil.copy(GO_FIXTURES / self.windows.pop(0), self.backend.out / f"callgrind.out.1.{n}")
        counts, _ = self.backend._collect()
        return self.backend._window_count(counts)

    def uncounted(self) -> list[str]:
        return []


class _Client:
    def run(self, n: int) -> LoadResult:
        return LoadResult(n, n, 0, None, 1.0)


WINDOWS = [("plaintext-answered.callgrind", 10_000), ("plaintext-waited.callgrind", 5_000)]


def recorded_reps(tmp_path: Path) -> list[Rep]:
    server = _RecordedServer(tmp_path, [name for name, _ in WINDOWS])
    return [count_window(server, _Client(), n, "rep 1", None)[0] for _, n in WINDOWS]  # type: ignore[arg-type]


def go_cell(reps: Sequence[Rep]) -> Cell:
    """One run for each rep."""
    details = [ServeDetail(WINDOW_DUMPS, 2000, (r,), runtime="go") for r in reps]
    runs = tuple(Run(statistics.median(d.mutator_per_request), True, None, d) for d in details)
    return Cell("go-http", "plaintext", "callgrind", UNIT_PER_REQUEST, runs, {}, len(runs), 0.01)


def test_recorded_windows_through_the_backend_to_the_cells_figures(tmp_path: Path) -> None:
    """The two recorded windows as the two runs of one cell, through the backend's sum of
    a window's processes, the run's rep, the results file and back: the whole counts
    are 8.4% apart (the spread rule would refuse the cell), the mutators 0.4% (valid);
    the total is mutator + collector, and the scheduler is shown beside it, in neither."""
    windows = WINDOWS
    reps = recorded_reps(tmp_path)
    recorded = [per_request(name, n) for name, n in windows]
    for rep, (whole, work) in zip(reps, recorded, strict=True):
        assert rep.per_request == pytest.approx(whole)
        assert (rep.collector, rep.compiler, rep.scheduler) == (work.collector, 0.0, work.scheduler)
    assert reps[1].per_request / reps[0].per_request > 1.08
    c = go_cell(reps)
    # through the results file, as a later `icount table` reads it
    doc = json.loads(render_results(Results({}, (c,)), "json"))
    loaded = results_from_json(doc, "go.json").cells[0]
    for cell in (c, loaded):
        f = cell.runtime
        assert cell.valid and f is not None and f.runtime == "go"
        assert f.mutator is not None and f.total is not None and f.scheduler is not None
        mutators = [(r.instructions - r.collector - r.scheduler) / r.requests for r in reps]  # type: ignore[operator]
        assert f.mutator == pytest.approx(statistics.median(mutators))
        assert (max(mutators) - min(mutators)) / f.mutator < 0.005
        requests = sum(r.requests for r in reps)
        assert f.collector == pytest.approx(sum(w.collector for _, w in recorded) / requests)
        assert f.scheduler == pytest.approx(sum(w.scheduler for _, w in recorded) / requests)
        assert f.total == pytest.approx(f.mutator + f.collector)  # the scheduler is in neither
        assert f.scheduler_half_width > f.scheduler / 2  # 3.4k and 6.1k: two windows apart
    work = doc["cells"][0]["runtime_work"]
    assert work["scheduler"] == pytest.approx(loaded.runtime.scheduler, abs=0.001)  # type: ignore[union-attr]
    table = render_results(Results({}, (loaded,)), "table", 300)
    assert "in neither the figure nor the total" in table
    # the report's stacked bar: mutator and collector up to the total, the scheduler beside
    f = loaded.runtime
    assert f is not None and f.total is not None and f.scheduler is not None
    fig = runtime_figure([loaded], "rt")
    assert fig is not None and f">{numfmt.si(f.total)}<" in fig.body
    assert f"the scheduler {svg.exact(f.scheduler)}" in fig.body
    assert fig.body.count(" seg") == 2  # no third segment for it


def test_a_file_written_before_the_scheduler_was_apart_does_not_gate(tmp_path: Path) -> None:
    """The same windows as a file of before (no scheduler: its mutator held the wait)
    against today's: the mutator reads 12% lower, which is no change of the server's;
    the cell does not gate, either way round, and the geometric mean leaves it out."""
    reps = recorded_reps(tmp_path)
    assert go_cell(reps).valid  # with the wait in the mutator, refused at 8.4%:
    assert not go_cell([dataclasses.replace(r, scheduler=None) for r in reps]).valid
    answered = reps[:1] * 2  # two runs alike: a total with an interval, valid
    now = go_cell(answered)
    before = go_cell([dataclasses.replace(r, scheduler=None) for r in answered])
    assert before.runtime is not None and now.runtime is not None
    assert now.runtime.total_valid and before.runtime.total_valid
    assert before.runtime.mutator / now.runtime.mutator > 1.1  # type: ignore[operator]
    for base, new, held in ((before, now, "base"), (now, before, "new")):
        row = judge(base, new, Thresholds())
        assert row.verdict is Verdict.UNCHANGED
        assert row.why.startswith(f"{held}'s figures hold the runtime scheduler's wait")
        assert row.total is not None and row.total.verdict is None and row.total.delta is None
        g = geomean.of(compare(Results({}, (base,)), Results({}, (new,)), Thresholds()))
        assert g is None
    # both sides counted apart: judged as ever, the total beside the mutator
    row = judge(now, now, Thresholds())
    assert row.total is not None and row.total.verdict is Verdict.UNCHANGED
    assert row.total.delta == 0
