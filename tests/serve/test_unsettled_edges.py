"""A window edge dumped while the server was busy (callgrind's wait for an idle server
ran out: a closed loop, an external load generator, a thread that never sleeps): the
window records why, as the rep's `unsettled`, the results file keeps it, and the cell's
notes say how many edges and what such an edge can move."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from icount import procs, results, threads_idle
from icount.backends import callgrind_server
from icount.backends.callgrind_server import CallgrindServer
from icount.backends.protocol import WindowCount
from icount.results import Cell, Results, Run
from icount.results.details import WINDOW_DIFFERENTIAL, WINDOW_DUMPS, Rep, ServeDetail
from icount.serve.cell_windows import gather, unsettled_note
from icount.serve.http_client import LoadResult
from icount.serve.runs import RunOutcome
from icount.serve.window import count_window

BUSY = (
    "the server was never idle within 2 s: pid 7 thread 9 (running) kept it busy (a thread "
    "that never sleeps as long as two scans of the server's threads take: measure it with "
    "--arrival closed)"
)
SHOWN = "the server was never idle within 2 s: pid 7 thread 9 (running) kept it busy"


def _unstarted(out: Path) -> CallgrindServer:
    """A callgrind server with no process (no valgrind started): its dumps reach none,
    so only its wait for an idle server and what the window makes of it run."""
    server = CallgrindServer.__new__(CallgrindServer)
    server.out, server.pid, server.thread, server.root_only = out, 7, None, False
    server.keep_profiles, server.collectors, server.profile_top = False, (), 0
    server._seen, server._ended, server._threads = set(), set(), set()
    server._order, server._functions, server._profiles, server._runtime = {7: 0}, {}, [], {}
    server._dumps, server._dump_times, server._instrumented = 0, [], True
    server._starts_instrumented, server._unsettled = True, []
    server.processes = lambda: []  # type: ignore[method-assign]
    return server


def _waits(answers: list[str | None]) -> Callable[..., str | None]:
    def wait_idle(watch: threads_idle.Watch, timeout_s: float) -> str | None:
        assert (watch.root, timeout_s) == (7, callgrind_server.IDLE_TIMEOUT_S)
        return answers.pop(0)

    return wait_idle


def test_each_edge_dumped_busy_is_recorded_with_its_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Window 1 opens on a busy server and closes on an idle one; window 2 is idle at
    both edges and says nothing (the first window's reason is not carried over)."""
    answers: list[str | None] = [BUSY, None, None, None]
    monkeypatch.setattr(threads_idle, "wait_idle", _waits(answers))
    server = _unstarted(tmp_path)
    server.open_window()
    assert server.close_window().unsettled == (f"open: {BUSY}",)
    server.open_window()
    assert server.close_window().unsettled == ()
    assert not answers


class _Counted:
    """A server whose one window closed with a busy edge."""

    close_latency_s = opened_at = 0.0

    def open_window(self) -> None:
        pass

    def close_window(self) -> WindowCount:
        return WindowCount(2e6, unsettled=(f"close: {BUSY}",))

    def uncounted(self) -> list[str]:
        return []


class _Client:
    def run(self, n: int) -> LoadResult:
        return LoadResult(n, n, 0, None, 1.0)


def test_the_rep_keeps_the_edges_and_the_results_file_reads_them_back(tmp_path: Path) -> None:
    rep = count_window(_Counted(), _Client(), 1000, "rep 1", None)[0]  # type: ignore[arg-type]
    assert (rep.instructions, rep.requests, rep.unsettled) == (2e6, 1000, (f"close: {BUSY}",))
    detail = ServeDetail(WINDOW_DUMPS, 10, (rep, Rep(2e6, 1000)))
    cell = Cell("c", "", "callgrind", results.UNIT_INSTRUCTIONS,
                (Run(2000.0, True, None, detail),), {}, 1, 0.01)  # fmt: skip
    path = tmp_path / "r.json"
    results.save(path, Results({}, (cell,)), None, overwrite=True)
    read = results.load(path).cells[0].runs[0].detail
    assert isinstance(read, ServeDetail)
    assert [r.unsettled for r in read.reps] == [(f"close: {BUSY}",), ()]
    assert path.read_text().count('"unsettled"') == 1  # a settled rep writes nothing


def _outcome(*reps: Rep, window: str = WINDOW_DUMPS) -> RunOutcome:
    detail = ServeDetail(window, 0, reps)
    return RunOutcome(reps[0].per_request, None, detail, None, (), (None,) * len(reps))


def test_the_cells_note_counts_the_edges_and_bounds_what_they_move() -> None:
    busy = Rep(2e6, 1000, unsettled=(f"open: {BUSY}", f"close: {BUSY}"))
    got = gather([_outcome(busy, Rep(2e6, 1000)), _outcome(Rep(2e6, 500, unsettled=(
        f"close: {BUSY}",)))], cold_start=False)  # fmt: skip
    assert [r.valid for r in got.runs] == [True, True]
    assert got.notes == (
        f"3 of 6 window edges were dumped without the server seen idle (first, open: {SHOWN}): "
        "such "
        "an edge falls inside the server's work, not between requests, and moves at most the "
        "requests in flight then, one a connection, partly out of a window of 500 requests "
        "or more; that alone leaves a window valid, its spread judged as any other's",
    )
    # every edge settled, or windows that are not dumps (the differential method's): none
    assert gather([_outcome(Rep(2e6, 1000))], cold_start=False).notes == ()
    assert unsettled_note([_outcome(busy, window=WINDOW_DIFFERENTIAL).detail]) is None  # type: ignore[list-item]


def test_a_permission_refused_edge_is_not_said_busy_nor_given_advice() -> None:
    """An edge dumped because /proc hid the server's threads: not seen idle, not seen
    busy, and the idle check's advice (--arrival closed) is left out of the note."""
    why = ("cannot tell whether the server is idle: /proc/7/task: Permission denied "
           "(measure it with --arrival closed)")  # fmt: skip
    note = unsettled_note([_outcome(Rep(2e6, 1000, unsettled=(f"open: {why}",))).detail])  # type: ignore[list-item]
    assert note is not None and "without the server seen idle (first, open: cannot tell" in note
    assert "--arrival closed" not in note and "Permission denied)" in note


SPIN = ["/bin/sh", "-c", "while :; do :; done"]


@pytest.fixture
def short_wait(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(callgrind_server, "IDLE_TIMEOUT_S", 0.3)
    yield


@pytest.mark.slow
@pytest.mark.parametrize("argv", [SPIN, ["sleep", "60"]], ids=["spinning", "asleep"])
def test_a_server_that_never_sleeps_gets_both_edges_recorded(
    need_valgrind: None, short_wait: None, tmp_path: Path, argv: list[str]
) -> None:
    """Under callgrind for real: a shell loop never waits, so the wait before each dump
    runs out and both edges say so; a sleeping process has none."""
    cpus = sorted(os.sched_getaffinity(0))
    server = CallgrindServer(argv, tmp_path / "run", env=dict(os.environ), cwd=tmp_path,
                             cpus=cpus, instrumented=True)  # fmt: skip
    watch = threads_idle.Watch(server.pid)
    spins = argv is SPIN
    try:
        if not spins:  # valgrind's start-up runs first
            assert threads_idle.wait_idle(watch, 30.0) is None
        server.open_window()

        # valgrind's gdbserver waits in poll() a moment after a dump: the loop again
        def running() -> bool:
            return isinstance(watch.scan(), threads_idle.Running)

        assert procs.wait_until(running, 10.0 if spins else 0.5) is spins
        count = server.close_window()
    finally:
        server.stop()
        server.cleanup()
    if spins:
        assert count.instructions > 0
        assert [e.split(":")[0] for e in count.unsettled] == ["open", "close"]
        for edge in count.unsettled:
            assert f"the server was never idle within 0.3 s: pid {server.pid} thread " in edge
            assert edge.endswith(
                ("(running) kept it busy", "(state R) kept it busy"), 0, edge.index(" (a thread")
            )
    else:
        assert count.unsettled == ()
