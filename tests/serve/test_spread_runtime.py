"""A collected runtime's spread note speaks of its figure, the mutator: the spread it
states is the mutator windows', and the functions it names are the mutator's where the
runtime's work is found by name (Go), or said to include it where it is not (V8). On the
recorded windows of fixtures/go/ and fixtures/v8/ (their READMEs say how they were taken)
and on constructed reps."""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from icount import results_table, runtimes
from icount.backends.valgrind import functions_of
from icount.callgrind.parser import parse_file
from icount.export import render_results
from icount.results import Results
from icount.results.details import WINDOW_DUMPS, IdleCount, Rep, ServeDetail
from icount.results.files import from_json as results_from_json
from icount.serve import spread
from icount.serve.spread import Window, explain
from icount.serve.window import count_window
from icount.session.options import Warmup
from icount.spread_note import describe

from .test_go_runtime import WINDOWS, _Client, _RecordedServer, go_cell
from .test_session import FAKE_ADAPTER, _session

V8_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "v8"
ADVICE = "longer windows (--requests, or the adapter's `requests`) average it"


def go_windows(tmp_path: Path) -> list[Window]:
    """The two recorded go-http windows as two runs' reps, through the backend's sum of a
    window's processes and its functions, as serve takes them."""
    server = _RecordedServer(tmp_path, [name for name, _ in WINDOWS])
    out = []
    for run, (_, n) in enumerate(WINDOWS):
        rep, _, functions, _, _ = count_window(server, _Client(), n, "rep 1", None)  # type: ignore[arg-type]
        assert functions is not None
        out.append(Window(f"run {run + 1} rep 1", rep, functions))
    return out


def v8_windows() -> list[Window]:
    """The three recorded 1000-request windows of one Express process, each Rep as
    serve/runs.py makes it from the backend's count."""
    out = []
    for i, n in enumerate((2, 4, 6)):
        prof = parse_file(V8_FIXTURES / f"express-json-{n}.callgrind")
        total, by_name = functions_of(prof)
        work = runtimes.runtime_work(prof)
        rep = Rep(float(total), 1000, collector=float(work.collector),
                  compiler=float(work.compiler), runtime_calls=work.calls)  # fmt: skip
        out.append(Window(f"run 1 rep {i + 1}", rep, by_name))
    return out


def whole(windows: Sequence[Window]) -> list[Window]:
    """The same windows as a file of before the runtime's work was counted apart."""
    return [
        Window(w.label, Rep(w.rep.instructions, w.rep.requests, w.rep.processes), w.functions)
        for w in windows
    ]


def spread_of(values: Sequence[float]) -> float:
    return (max(values) - min(values)) / statistics.median(values)


def test_go_names_the_mutators_functions_not_the_scheduler_it_counted_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole counts differ by 8.07% and their difference is the scheduler's (netpoll,
    stealWork, findRunnable first); the cell's figure is the mutator, 0.40% apart, and
    what differs in it is the allocating request's (mallocgc, heapBitsSetType)."""
    windows = go_windows(tmp_path)
    before = explain(whole(windows), 0.01)
    assert before is not None and round(before["spread"], 4) == 0.0807
    assert [n for n, _ in before["functions"][:3]] == [
        "runtime.netpoll", "runtime.stealWork", "runtime.findRunnable"
    ]  # fmt: skip
    assert set(before) == {"spread", "low", "high", "functions", "explained"}

    got = explain(windows, 0.01)
    assert got is not None
    mutators = [(w.rep.instructions - w.rep.apart) / w.rep.requests for w in windows]
    assert got["spread"] == round(spread_of(mutators), 6) and round(got["spread"], 4) == 0.0040
    assert got["whole_spread"] == before["spread"]
    assert (got["figure"], got["functions_of"]) == ("mutator", "mutator")
    assert got["high"] == {"window": "run 2 rep 1", "per_request": round(max(mutators), 3)}
    assert got["low"] == {"window": "run 1 rep 1", "per_request": round(min(mutators), 3)}
    named = [n for n, _ in got["functions"]]
    assert named[:2] == ["runtime.mallocgc", "runtime.heapBitsSetType"]
    # none of the functions the runtime's work is counted of, whatever its delta
    for name in ("runtime.netpoll", "runtime.stealWork", "runtime.scanblock"):
        assert name not in named
    # every function left, not only the named: their deltas add up to the mutator's gap,
    # so nothing of the runtime's work is among them
    monkeypatch.setattr(spread, "TOP", 10**6)
    every = explain(windows, 0.01)
    assert every is not None
    rounding = 0.05 * len(every["functions"])  # each delta is rounded to 0.1
    assert sum(d for _, d in every["functions"]) == pytest.approx(
        max(mutators) - min(mutators), abs=rounding
    )

    line = describe(got, 0.01)
    assert line.startswith(
        "the mutator's windows differ by 0.40% (run 2 rep 1 29.78k vs run 1 rep 1 29.66k per "
        "request; whole windows 8.07% apart, the runtime's own work counted apart); per "
        "request, the highest minus the lowest, the runtime's functions left out: "
        "runtime.mallocgc +108.2, runtime.heapBitsSetType +80.1"
    ), line
    # within the limit: the whole count's spread is no reason to lengthen the windows
    assert "median depends" not in line and ADVICE not in line
    # past a limit the mutator's own spread reaches, the advice is the median's again
    assert describe(got, 0.003).endswith(ADVICE)


def test_v8_mutator_within_the_limit_needs_no_note() -> None:
    """Express: whole counts 6.48% apart (marking, sweeping), the mutator 0.13%, under a
    quarter of the 1% limit: nothing of the figure to explain. Before, the note named
    ConcurrentMarking::RunMajor and advised longer windows for the median."""
    windows = v8_windows()
    before = explain(whole(windows), 0.01)
    assert before is not None and round(before["spread"], 4) == 0.0648
    assert describe(before, 0.01).endswith(ADVICE)
    assert explain(windows, 0.01) is None


def test_v8_functions_that_cannot_be_told_apart_are_said_to_include_the_runtimes() -> None:
    """V8's work is counted inclusively below its entry points: a window's self costs
    by name do not tell the marking visitors from the request's code, so the note names
    the whole windows' functions and says that the runtime's work is among them."""
    windows = v8_windows()
    got = explain(windows, 0.003)
    assert got is not None
    mutators = [(w.rep.instructions - w.rep.apart) / w.rep.requests for w in windows]
    assert got["spread"] == round(spread_of(mutators), 6) and round(got["spread"], 4) == 0.0013
    assert (got["figure"], got["functions_of"]) == ("mutator", "window")
    assert got["high"]["window"] == "run 1 rep 2" and got["low"]["window"] == "run 1 rep 1"
    line = describe(got, 0.003)
    assert line.startswith(
        "the mutator's windows differ by 0.13% (run 1 rep 2 521.2k vs run 1 rep 1 520.5k per "
        "request; whole windows 6.48% apart, the runtime's own work counted apart); per "
        "request, the highest minus the lowest of the whole windows, the runtime's own work "
        "counted apart among them (a window's functions do not tell it apart): "
    ), line
    assert "v8::internal::ConcurrentMarking::RunMajor +7986.8" in line
    assert ADVICE not in line
    assert describe(got, 0.001).endswith(ADVICE)  # the mutator past the limit
    # the named deltas add up to the whole windows' gap, the share said of it
    top = sum(d for _, d in got["functions"])
    gap = windows[1].rep.per_request - windows[0].rep.per_request
    assert got["explained"] == round(top / gap, 3)


def _go_like(collector: float, scheduler: float | None = None) -> list[Window]:
    """Two windows of Go's names: the request's handler and allocator, the collector's
    scanobject (counted by self cost) and a recursive netpoll (the scheduler's)."""
    out = []
    for i, (handler, scan) in enumerate([(100e3, 20e3), (103e3, 60e3)]):
        functions = {"main.handler": handler, "runtime.mallocgc": 40e3,
                     "runtime.scanobject": scan, "runtime.netpoll'2": 5e3}  # fmt: skip
        apart = scan + collector
        rep = Rep(sum(functions.values()), 100, collector=apart, compiler=0.0,
                  scheduler=5e3 if scheduler is None else scheduler)  # fmt: skip
        out.append(Window(f"run {i + 1} rep 1", rep, functions))
    return out


def test_go_functions_are_left_out_only_when_they_are_what_was_counted_apart() -> None:
    """Counted apart exactly as the self costs the table's Go entries name: those are
    left out. Counted apart beyond them (a `--collector` entry counted inclusively), the
    names do not say which functions hold it: the whole windows' functions, said so."""
    exact = explain(_go_like(0.0), 0.01)
    assert exact is not None and exact["functions_of"] == "mutator"
    assert exact["functions"] == [["main.handler", 30.0], ["runtime.mallocgc", 0.0]]
    assert exact["explained"] == 1.0  # the mutator: 1.4k and 1.43k per request
    assert exact["spread"] == round(30 / 1415, 6)

    beyond = explain(_go_like(2e3), 0.01)
    assert beyond is not None and beyond["functions_of"] == "window"
    assert [n for n, _ in beyond["functions"]][:2] == ["runtime.scanobject", "main.handler"]
    # a scheduler the backend counted other than the names say: not told apart either
    other = explain(_go_like(0.0, scheduler=1e3), 0.01)
    assert other is not None and other["functions_of"] == "window"


def test_the_figure_judged_is_the_runs_mutator_with_the_clocks_share_out() -> None:
    """Where the idle window's rate is subtracted, the run's mutator is less the clock's
    share too: the window that is highest before the clock comes out is not the highest
    figure. The note takes the figure session.py hands it (ServeDetail.mutator)."""
    reps = (
        Rep(1_100_000.0, 1000, collector=50_000.0, compiler=0.0, seconds=2.0),
        Rep(1_080_000.0, 1000, collector=50_000.0, compiler=0.0, seconds=1.0),
    )
    detail = ServeDetail(WINDOW_DUMPS, 0, reps, idle=IdleCount(300_000.0, 10.0),
                         runtime="v8", clock_subtracted=True)  # fmt: skip
    functions = {"uv_run": 1.0}
    windows = [Window(f"run 1 rep {j + 1}", r, functions, detail.mutator(r))
               for j, r in enumerate(reps)]  # fmt: skip
    got = explain(windows, 0.01)
    assert got is not None
    assert got["high"] == {"window": "run 1 rep 2", "per_request": 1000.0}
    assert got["low"] == {"window": "run 1 rep 1", "per_request": 990.0}
    assert got["spread"] == round(10 / 995, 6)
    # without the clock, the order is the other way round
    plain = explain([Window(w.label, w.rep, w.functions) for w in windows], 0.01)
    assert plain is not None and plain["high"]["window"] == "run 1 rep 1"


def test_cells_without_runtime_work_read_as_before() -> None:
    """A window with no runtime counted: the whole count, whatever mutator it is handed
    (the clock's share stays in, as before), and no new field in the results file."""
    a = Window("run 1 rep 1", Rep(1000e3, 1000), {"f": 900e3, "g": 100e3}, mutator=1.0)
    b = Window("run 2 rep 1", Rep(1100e3, 1000), {"f": 990e3, "g": 110e3}, mutator=1.0)
    got = explain([a, b], 0.01)
    assert got == {
        "spread": round(100 / 1050, 6),
        "low": {"window": "run 1 rep 1", "per_request": 1000.0},
        "high": {"window": "run 2 rep 1", "per_request": 1100.0},
        "functions": [["f", 90.0], ["g", 10.0]],
        "explained": 1.0,
    }
    assert describe(got, 0.01) == (
        "windows differ by 9.52% (run 2 rep 1 1.100k vs run 1 rep 1 1.000k per request); per "
        "request, the highest minus the lowest: f +90.0, g +10.0; the median depends on "
        "which windows that work fell in: " + ADVICE
    )


@pytest.mark.parametrize("whole_spread", [None, "x", True, float("nan")])
def test_a_files_odd_whole_spread_reads_without_it(whole_spread: Any) -> None:
    """The loader checks the fields every explanation has; a collected runtime's
    `whole_spread` that a file lacks or holds as something else is left out of the line."""
    got: dict[str, Any] = {
        "spread": 0.004, "low": {"window": "a", "per_request": 100.0},
        "high": {"window": "b", "per_request": 100.4}, "functions": [["f", 0.4]],
        "figure": "mutator", "functions_of": "mutator",
    }  # fmt: skip
    if whole_spread is not None:
        got["whole_spread"] = whole_spread
    assert describe(got, 0.01) == (
        "the mutator's windows differ by 0.40% (b 100.4 vs a 100 per request); per request, "
        "the highest minus the lowest, the runtime's functions left out: f +0.4"
    )


def test_the_note_reads_back_from_the_results_file(tmp_path: Path) -> None:
    """The explanation written with a go-http cell, through the json file and back, is
    the same line in the table's notes."""
    windows = go_windows(tmp_path)
    got = explain(windows, 0.01)
    assert got is not None
    cell = dataclasses.replace(go_cell([w.rep for w in windows]),
                               extra={"spread_explained": got})  # fmt: skip
    doc = json.loads(render_results(Results({}, (cell,)), "json"))
    loaded = results_from_json(doc, "go.json").cells[0]
    assert loaded.extra["spread_explained"] == got
    line = f"go-http/plaintext/callgrind: {describe(got, 0.01)}"
    assert line in results_table.explaining_notes([loaded])


@pytest.fixture
def fake_collected(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The fake backend with a collector on every 170th request (counted apart) and
    periodic work of the request's own on every 250th (the mutator's)."""
    from icount import backends
    from tests.support import fake_backend

    monkeypatch.setitem(backends.REGISTRY, "fake", "tests.support.fake_backend")
    config = fake_backend.FakeConfig(
        cost=lambda i, p: 1000.0 + (5e4 if i % 250 == 0 else 0.0),
        function=lambda i: "cache_fill" if i % 250 == 0 else "handle_request",
        window_cost=0,
        collector=lambda i: 3e4 if i % 170 == 0 else 0.0,
    )
    monkeypatch.setattr(fake_backend, "CONFIG", config)
    (tmp_path / "fake").mkdir()
    (tmp_path / "fake" / "adapter.toml").write_text(FAKE_ADAPTER)
    return tmp_path / "fake" / "adapter.toml"


def test_a_session_explains_the_mutators_windows_fake(fake_collected: Path, tmp_path: Path) -> None:
    """Through a whole session: the note the cell records is the mutator's (1000 to 1500
    per request, the collector's 300 a window aside) and the table shows it."""
    from icount.serve.plan import ServeRequest

    request = ServeRequest(targets=(str(fake_collected),), backend="fake", runs=2, reps=3,
                           requests=100, warmup=Warmup(20), idle_seconds=0)  # fmt: skip
    res = _session(request, tmp_path / "r.json")
    cell = next(c for c in res.cells if c.path == "plaintext")
    got = cell.extra["spread_explained"]
    assert (got["figure"], got["spread"]) == ("mutator", 0.5)
    assert got["high"] == {"window": "run 2 rep 2", "per_request": 1500.0}
    reps = [r for run in cell.runs if isinstance(run.detail, ServeDetail) for r in run.detail.reps]
    assert got["whole_spread"] == round(spread_of([r.per_request for r in reps]), 6)
    assert got["whole_spread"] != got["spread"]  # the collector's 300 a window fell unevenly
    assert got["functions_of"] == "window"  # the fake's names are no runtime's
    notes = results_table.build_table(res).notes
    assert any(
        n.startswith("fake/plaintext/fake: the mutator's windows differ by 50.00% (run 2 rep 2 "
                     "1.500k vs run 1 rep 1 1.000k per request; whole windows ")
        and n.endswith(ADVICE)
        for n in notes
    ), notes  # fmt: skip
