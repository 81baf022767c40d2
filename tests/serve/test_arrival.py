"""The arrival discipline (serve/arrival.py): the built-in client's waves, how a thread
is read from /proc, and what a session records. The counts under callgrind are in
test_arrival_truth.py."""

from __future__ import annotations

import dataclasses
import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from icount import backends, procs, results, threads_idle
from icount import cpus as cpus_mod
from icount.errors import UsageError
from icount.results.details import arrival_of
from icount.results.files import provenance_path
from icount.serve import adapter as adapters
from icount.serve import arrival
from icount.serve import plan as plan_mod
from icount.serve.adapter import Expect, PathSpec
from icount.serve.cell_options import CellOptions
from icount.serve.http_client import KeepAliveClient
from icount.serve.loadgen import make_load_generator
from icount.session.options import Arrival, Warmup
from tests.support.cli import run_icount_here

from .conftest import HOST, StartServer, free_port
from .test_session import _session, fake  # noqa: F401 (a fixture)

PLAIN = PathSpec("plaintext", "/plaintext", Expect(200, {}, b"Hello, World!"))


def first_running(watch: threads_idle.Watch) -> threads_idle.Running | None:
    """The first thread one scan finds with work to do; None when every thread waited as
    it was read."""
    found = watch.scan()
    return found if isinstance(found, threads_idle.Running) else None


@pytest.fixture
def c_epoll_process(c_epoll_adapter: tuple[adapters.Adapter, Path]) -> Iterator[tuple[int, int]]:
    """(pid, port) of a c-epoll process, stopped after the test."""
    target, build = c_epoll_adapter
    port = free_port()
    argv = adapters.expand(target.start, port=port, build_dir=build, adapter=target)
    child = procs.spawn(argv)
    try:

        def listening() -> bool:
            try:
                socket.create_connection((HOST, port), timeout=1).close()
            except OSError:
                return False
            return True

        assert procs.wait_until(listening, 10), "c-epoll did not start listening"
        yield child.pid, port
    finally:
        child.stop()


@pytest.mark.parametrize(("concurrency", "n", "waves"), [(1, 5, 5), (4, 10, 3), (8, 3, 1)])
def test_a_paced_client_sends_waves_when_every_answer_is_in(
    c_server: StartServer, concurrency: int, n: int, waves: int
) -> None:
    port = c_server("--crash-after", str(n))  # request n + 1 would abort it
    seen: list[int] = []

    def pace() -> str | None:
        seen.append(len(seen))
        return None

    with KeepAliveClient(HOST, port, PLAIN, concurrency, 5.0, pace) as client:
        result = client.run(n)
    assert result.ok, result.first_error
    assert (result.completed, len(seen)) == (n, waves)


def test_a_server_never_idle_ends_the_run_with_the_reason(c_server: StartServer) -> None:
    port = c_server()
    calls: list[int] = []

    def pace() -> str | None:
        calls.append(1)
        return "the server was never idle" if len(calls) == 2 else None

    with KeepAliveClient(HOST, port, PLAIN, 1, 5.0, pace) as client:
        result = client.run(10)
        assert (result.completed, result.first_error) == (1, "the server was never idle")
        # the connections stay usable: the next run starts as any other
        assert client.run(1).completed == 1 and len(calls) == 3


def test_external_load_generators_take_no_pace() -> None:
    with pytest.raises(UsageError, match="needs the built-in client"):
        make_load_generator("h2load", HOST, 1, PLAIN, 1, 1.0, [], lambda: None)
    client = make_load_generator("builtin", HOST, 1, PLAIN, 1, 1.0, [], lambda: None)
    assert isinstance(client, KeepAliveClient) and client.pace is not None


def test_an_idle_server_reads_idle_and_a_spinning_one_running(
    c_epoll_process: tuple[int, int],
) -> None:
    pid, _ = c_epoll_process
    assert threads_idle.wait_idle(threads_idle.Watch(pid), 5.0) is None
    assert first_running(threads_idle.Watch(pid)) is None  # and it stays so: nothing wakes it
    spin = procs.spawn([sys.executable, "-c", "while True: pass"], leaf=True)
    try:
        found = first_running(threads_idle.Watch(spin.pid))
        assert found is not None and found.pid == spin.pid, found
        assert found.describe().startswith(f"pid {spin.pid} thread {spin.pid} (")
        ticks = iter(range(100))
        why = threads_idle.wait_idle(
            threads_idle.Watch(spin.pid), 3.0, clock=lambda: float(next(ticks))
        )
        assert why is not None and why.startswith("the server was never idle within 3 s: pid")
        assert why.endswith("threads take: measure it with --arrival closed)")
    finally:
        spin.stop()


def test_a_process_gone_reads_idle() -> None:
    child = procs.spawn([sys.executable, "-c", "pass"], leaf=True)
    child.wait(10)
    assert first_running(threads_idle.Watch(child.pid)) is None


def test_descendants_are_watched_too() -> None:
    """A parent asleep with a spinning child is not idle: every process counts."""
    code = "import os, time\nif os.fork() == 0:\n    while True: pass\ntime.sleep(60)\n"
    parent = procs.spawn([sys.executable, "-c", code])
    try:
        found: list[threads_idle.Running | None] = []

        def only_the_child() -> bool:
            found.append(first_running(threads_idle.Watch(parent.pid)))
            return found[-1] is not None and found[-1].pid != parent.pid

        # once the parent sleeps, the child still runs: the server is never idle
        assert procs.wait_until(only_the_child, 10), found[-3:]
    finally:
        parent.stop()


def test_valgrind_lock_descriptors_are_read_from_the_limits(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    limits = tmp_path / "limits"
    limits.write_text(
        "Limit                     Soft Limit           Hard Limit           Units     \n"
        "Max open files            1036                 20000                files     \n"
    )
    monkeypatch.setattr("os.readlink", lambda p: "/usr/libexec/valgrind/x-amd64-linux")
    real = threads_idle._read
    monkeypatch.setattr(
        threads_idle,
        "_read",
        lambda p, kept=None: limits.read_text() if p.endswith("limits") else real(p),
    )
    assert threads_idle._valgrind_floor(1) == 1024
    monkeypatch.setattr("os.readlink", lambda p: "/usr/bin/python3")
    assert threads_idle._valgrind_floor(1) is None


def test_resolve_parse_and_recorded() -> None:
    assert arrival.resolve(None, "builtin")[0] == "idle"
    assert arrival.resolve(None, "h2load") == (
        "closed",
        "h2load sends its requests itself (a closed loop)",
    )
    assert arrival.resolve(Arrival.CLOSED, "builtin") == ("closed", "asked for with --arrival")
    with pytest.raises(UsageError, match="--arrival idle needs the built-in client: ab"):
        arrival.resolve(Arrival.IDLE, "ab")
    assert Arrival.parse("closed") is Arrival.CLOSED
    with pytest.raises(UsageError, match="--arrival takes idle or closed, got 'open'"):
        Arrival.parse("open")
    assert arrival_of({}) == "closed"  # files written before the field existed
    assert arrival_of({"arrival": "idle"}) == "idle"


def test_a_session_records_its_arrival_and_resumes_it(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    saved = plan_mod.ServeRequest(arrival=Arrival.CLOSED).to_json(())
    assert saved["arrival"] == "closed"
    for recorded, explicit, asked, resumed in [
        ("closed", frozenset(), None, Arrival.CLOSED),
        (None, frozenset(), None, None),  # not given: the default, decided again
        ("closed", frozenset({"arrival"}), Arrival.IDLE, Arrival.IDLE),
    ]:
        plan = {"targets": ["/a.toml"], "arrival": recorded}
        provenance_path(out).write_text(json.dumps({"plan": plan}))
        request = plan_mod.resume_request(plan_mod.ServeRequest(arrival=asked), out, explicit)
        assert request.arrival == resumed
    # a session from before it was recorded: its cells say (test_an_old_file_resumes_closed)
    provenance_path(out).write_text(json.dumps({"plan": {"targets": ["/a.toml"]}}))
    assert plan_mod.resume_request(plan_mod.ServeRequest(), out, frozenset()).arrival is None
    provenance_path(out).write_text(json.dumps({"plan": {"arrival": "open"}}))
    with pytest.raises(UsageError, match="the recorded arrival 'open' is not valid"):
        plan_mod.resume_request(plan_mod.ServeRequest(targets=("x",)), out, frozenset())


def test_every_cell_records_its_arrival_and_old_cells_compare_as_closed() -> None:
    path = PLAIN
    cpus = cpus_mod.CpuSplit((0,), (1,), "test")
    idle = CellOptions(backend=backends.create("callgrind"), cpus=cpus, arrival=Arrival.IDLE)
    closed = dataclasses.replace(idle, arrival=Arrival.CLOSED)
    assert plan_mod.cell_params(path, idle)["arrival"] == "idle"
    params = dict(plan_mod.cell_params(path, closed))
    assert params["arrival"] == "closed"
    old = {k: v for k, v in params.items() if k != "arrival"}  # a file from before
    assert plan_mod._comparable(old) == plan_mod._comparable(params)
    assert plan_mod._comparable(old) != plan_mod._comparable(plan_mod.cell_params(path, idle))


# /proc lines read from a program under callgrind (valgrind 3.19, real soft limit 20000):
# the main thread in epoll_wait, a thread in pthread_cond_wait, and a runnable one waiting
# for valgrind's lock (read() on descriptor 0x4e18 = 19992, a pipe of valgrind's own)
_STAT = "{tid} (t) {state} 1 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 3 0 100"
_EPOLL = "232 0x5 0x1fff000620 0x4 0xffffffff 0x0 0x5a2b6c0 0x1002c8dcf0 0x580c3315"
_FUTEX = "202 0x10c0a8 0x189 0x0 0x0 0x0 0xffffffff 0x1004888ce0 0x580c3315"
_LOCK = "0 0x4e18 0x1002ffec9f 0x1 0x0 0x0 0x0 0x1002ffec60 0x58031d79"
_GUEST_READ = "0 0x3 0x1ffefffc40 0x1000 0x0 0x0 0x0 0x1ffefffbd0 0x580c3315"


@pytest.mark.parametrize(
    ("threads", "floor", "running"),
    [
        ([("S", _EPOLL), ("S", _FUTEX)], 19988, None),
        ([("S", _EPOLL), ("S", _FUTEX), ("S", _LOCK)], 19988, "state S, system call 0"),
        ([("S", _EPOLL), ("R", "running")], 19988, "state R"),
        ([("S", _EPOLL), ("S", "running")], 19988, "running"),  # woke between the reads
        # natively syscall is not read: the second scan's counters show such a thread
        ([("S", _EPOLL), ("S", "running")], None, None),
        ([("D", "-1 0x7ffd 0x0")], None, "state D"),
        ([("S", _GUEST_READ)], 19988, None),  # the guest's own read() waits
        ([("S", _LOCK)], None, None),  # not under valgrind: a read like any other
        ([("t", _EPOLL), ("Z", "")], 19988, None),
    ],
)
def test_a_thread_waiting_for_valgrinds_lock_reads_running(
    monkeypatch: pytest.MonkeyPatch,
    threads: list[tuple[str, str]],
    floor: int | None,
    running: str | None,
) -> None:
    files = {}
    for i, (state, syscall) in enumerate(threads):
        files[f"/proc/7/task/{7 + i}/stat"] = _STAT.format(tid=7 + i, state=state)
        files[f"/proc/7/task/{7 + i}/syscall"] = syscall
        files[f"/proc/7/task/{7 + i}/schedstat"] = "1000 20 3\n"
    monkeypatch.setattr(threads_idle, "_read", lambda p, kept=None: files.get(p))
    monkeypatch.setattr(threads_idle, "_valgrind_floor", lambda pid, kept=None: floor)
    monkeypatch.setattr("os.listdir", lambda p: [str(7 + i) for i in range(len(threads))])
    found = first_running(threads_idle.Watch(7))
    if running is None:
        assert found is None
    else:
        assert found is not None and f"({running}" in found.describe(), found


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--load", "h2load", "--arrival", "idle"],
         "icount: error: --arrival idle needs the built-in client: h2load sends its requests "
         "itself (use --load builtin, or --arrival closed)"),
        (["--arrival", "open"], "icount: error: --arrival takes idle or closed, got 'open'"),
    ],
)  # fmt: skip
def test_an_arrival_that_cannot_be_is_refused_before_any_server_starts(
    tmp_path: Path, args: list[str], message: str
) -> None:
    done = run_icount_here(["serve", "c-epoll", *args, "-o", str(tmp_path / "r.json")], tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == message
    assert not (tmp_path / "r.json").exists()


def test_an_old_file_resumes_closed_and_a_file_without_provenance_as_its_cells(
    fake: Path,  # noqa: F811 (test_session's fixture)
    tmp_path: Path,
) -> None:
    request = plan_mod.ServeRequest(targets=(str(fake),), backend="fake", runs=1, reps=2,
                                    requests=20, warmup=Warmup(5), idle_seconds=0)  # fmt: skip
    for asked, old in [(Arrival.CLOSED, True), (None, False)]:
        full = tmp_path / f"full-{old}.json"
        res = _session(dataclasses.replace(request, arrival=asked), full)
        kept = next(c for c in res.cells if c.path == "plaintext")
        if old:  # as an earlier version wrote it: no arrival in the cells nor the plan
            params = {k: v for k, v in kept.params.items() if k != "arrival"}
            kept = dataclasses.replace(kept, params=params)
        partial = tmp_path / f"partial-{old}.json"
        results.save(partial, results.Results(res.fingerprint, (kept,)), None, overwrite=False)
        if old:
            doc = json.loads(provenance_path(full).read_text())
            del doc["plan"]["arrival"]
            provenance_path(partial).write_text(json.dumps(doc))
            resumed = plan_mod.resume_request(plan_mod.ServeRequest(), partial, frozenset())
            again = _session(resumed, None, resume=partial)
        else:  # no provenance: targets and options given again, the arrival not
            again = _session(request, None, resume=partial)
        measured = next(c for c in again.cells if c.path == "json")
        assert measured.valid and measured.params["arrival"] == ("closed" if old else "idle")
    # asked for the other one, the file's cells refuse it
    with pytest.raises(UsageError, match=r"other parameters \(arrival 'idle' there, 'closed' now"):
        _session(dataclasses.replace(request, arrival=Arrival.CLOSED), None, resume=partial)


def test_a_wave_goes_out_when_the_connection_answering_last_has_no_request_left(
    c_server: StartServer,
) -> None:
    """Under a keep-alive limit each connection sends a fixed share of a run: the last to
    answer in a wave may have none left while another still has."""
    port = c_server()
    with KeepAliveClient(HOST, port, PLAIN, 2, 5.0, lambda: None) as client:
        client.per_connection = 1000  # a limit far away: the shares only
        for _ in range(20):  # 3 = 2 + 1: whichever answers last in the first wave
            result = client.run(3)
            assert (result.completed, result.ok) == (3, True), result


def test_warm_up_requests_are_not_paced_and_the_next_window_is(c_server: StartServer) -> None:
    """Warm-up requests are not counted: paced, go-http's staggered 60,000 took as long as
    counted ones. The wave after them still waits for an idle server."""
    from icount.serve.window import load, warm

    port = c_server()
    seen: list[int] = []

    def pace() -> str | None:
        seen.append(len(seen))
        return None

    with KeepAliveClient(HOST, port, PLAIN, 1, 5.0, pace) as client:
        assert warm(None, client, 20, "warm-up").completed == 20  # type: ignore[arg-type]
        assert seen == [] and client.pace is pace
        assert load(None, client, 3, "window").completed == 3  # type: ignore[arg-type]
    assert len(seen) == 3
