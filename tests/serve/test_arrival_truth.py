"""Ground truth for the arrival discipline (serve/arrival.py): wakeup_server.c (built here
with cc) spends a known amount each time epoll_wait returns, drains its socket, and runs
a tail of known cost after each answer. With each request sent only when the server is
idle, every request wakes it once, so under callgrind a request reads exactly the
per-wake-up work more than the same server without it, with the machine idle and with
every CPU busy (busy loops this test starts), and with a client that pauses 0, 1 or 5 ms
before each request: the pause must not change the count. The profile says it directly
too: wakeup_work's instructions in a window are one call's per request."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from icount import cpus as cpus_mod
from icount import procs, threads_idle
from icount.serve import arrival
from icount.serve.runs import RunOutcome
from icount.session.options import Arrival, Warmup

from .conftest import measure_c_server
from .test_arrival import first_running

SOURCE = Path(__file__).with_name("wakeup_server.c")
WAKEUP_LOOP = 5000  # 10,000 instructions of spin() each time epoll_wait returns
WAKEUP = 2 * WAKEUP_LOOP
# after each answer, ~1 ms of callgrind's time: a client that does not wait for the server
# to be idle sends its next request well inside it
TAIL_LOOP = 20_000
REQUESTS = 300
# wakeup_work's own instructions a call beside its loop (the counter's increment, the
# call's prologue and return): a handful; a window that woke the server once less per
# 300 requests would read 33 less a request
CALL_SLACK = 10
# Off by at most this per request between two servers that differ only by the per-wake-up
# work (exactly 10,000.0 measured, idle and busy), where a closed-loop client, sending into
# the tail, woke the server for about one request in five (+2,000 per request, not +10,000).
BOUND = 1.0


@pytest.fixture(scope="module")
def wakeup_server(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("cc") is None:
        pytest.skip("cc is not installed (scripts/setup.sh installs gcc)")
    out = tmp_path_factory.mktemp("wakeup-server") / "wakeup_server"
    subprocess.run(["cc", "-O2", "-o", str(out), str(SOURCE)], check=True, timeout=120)
    return out


def measure(server: Path, folder: Path, name: str, wakeup_loop: int) -> RunOutcome:
    argv = [str(server), "--port", "{port}", "--wakeup-loop", str(wakeup_loop),
            "--tail-loop", str(TAIL_LOOP)]  # fmt: skip
    return measure_c_server(argv, folder, name, reps=2, requests=REQUESTS,
                            warmup=Warmup(50), idle_seconds=0, arrival=Arrival.IDLE)  # fmt: skip


@contextmanager
def busy(on: bool) -> Iterator[None]:
    """A busy loop on every CPU this process may use, at the server's priority."""
    loops: list[procs.Child] = []
    try:
        for cpu in cpus_mod.allowed_cpus() if on else ():
            loops.append(procs.spawn([sys.executable, "-c", "while True: pass"], cpus=(cpu,),
                                     leaf=True))  # fmt: skip
        yield
    finally:
        for child in loops:
            child.stop(grace_s=1.0)


@contextmanager
def pausing(monkeypatch: pytest.MonkeyPatch, ms: int) -> Iterator[None]:
    """The client sleeps `ms` before each request, then waits for the server as ever."""
    real = arrival.pacer

    def pacer(discipline: Arrival, pid: int, timeout_s: float) -> arrival.Pace | None:
        pace = real(discipline, pid, timeout_s)

        def paused() -> str | None:
            time.sleep(ms / 1000)
            return pace() if pace is not None else None

        return paused if ms else pace

    with monkeypatch.context() as m:
        m.setattr(arrival, "pacer", pacer)
        yield


def wakeup_per_request(o: RunOutcome) -> list[float]:
    """wakeup_work's own instructions per request, in each window."""
    assert o.detail is not None
    out = []
    for rep, functions in zip(o.detail.reps, o.functions, strict=True):
        assert functions is not None
        out.append(sum(v for k, v in functions.items() if k.startswith("wakeup_work")) /
                   rep.requests)  # fmt: skip
    return out


@pytest.fixture(scope="module")
def base(wakeup_server: Path, tmp_path_factory: pytest.TempPathFactory) -> float:
    """The same server without the per-wake-up work, the machine idle."""
    o = measure(wakeup_server, tmp_path_factory.mktemp("base"), "no-wakeup-work", 0)
    assert o.reason is None and o.value is not None, o.reason
    return o.value


@pytest.mark.slow
@pytest.mark.parametrize(
    ("loaded", "pause_ms"),
    [(False, 0), (True, 0), (False, 1), (False, 5), (True, 5)],
    ids=["idle", "busy", "idle-pause-1ms", "idle-pause-5ms", "busy-pause-5ms"],
)
def test_each_request_wakes_the_idle_server_once(
    need_valgrind: None,
    wakeup_server: Path,
    base: float,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    loaded: bool,
    pause_ms: int,
) -> None:
    with busy(loaded), pausing(monkeypatch, pause_ms):
        o = measure(wakeup_server, tmp_path, "wakeup-work", WAKEUP_LOOP)
    assert o.reason is None and o.value is not None and o.detail is not None, o.reason
    for rep in o.detail.reps:
        assert rep.requests == REQUESTS
        # window total = requests x (the request's cost + one wake-up's)
        assert abs(rep.per_request - base - WAKEUP) <= BOUND, (rep.per_request, base)
    for share in wakeup_per_request(o):
        assert WAKEUP <= share <= WAKEUP + CALL_SLACK, share


SPINNERS_C = r"""
#include <pthread.h>
#include <unistd.h>
static void *spin(void *a) { for (volatile long x = 0;; x++) ; return a; }
int main(void) {
    pthread_t t;
    pthread_create(&t, 0, spin, 0);
    pthread_create(&t, 0, spin, 0);
    for (;;) pause();
}
"""


@pytest.mark.slow
def test_threads_waiting_for_valgrinds_lock_are_running(
    need_valgrind: None, tmp_path: Path
) -> None:
    """Two spinning threads under callgrind: one runs, the other sleeps in the kernel
    waiting for valgrind's lock. The server is never idle, and the sleeper is seen as
    running by the system call it sleeps in."""
    source = tmp_path / "spinners.c"
    source.write_text(SPINNERS_C)
    program = tmp_path / "spinners"
    subprocess.run(["cc", "-O2", "-pthread", "-o", str(program), str(source)], check=True,
                   timeout=120)  # fmt: skip
    valgrind = procs.require("valgrind", "apt-get install valgrind")
    child = procs.spawn([valgrind, "--tool=callgrind", f"--callgrind-out-file={tmp_path}/cg.out",
                         str(program)], leaf=True)  # fmt: skip
    try:
        task = Path(f"/proc/{child.pid}/task")
        assert procs.wait_until(lambda: len(list(task.iterdir())) == 3, 60)
        watch = threads_idle.Watch(child.pid)
        floor = threads_idle._valgrind_floor(child.pid)
        assert floor is not None
        tids = [int(t.name) for t in task.iterdir()]
        waiting: list[threads_idle.Running] = []
        deadline = time.monotonic() + 10
        while not waiting and time.monotonic() < deadline:  # valgrind's time slices
            assert first_running(watch) is not None
            for tid in tids:
                r = watch._thread(child.pid, tid, f"{task}/{tid}", floor)
                if isinstance(r, threads_idle.Running) and r.state == "S" and r.syscall == "0":
                    waiting.append(r)  # read() on valgrind's pipe: asleep, yet runnable
        assert waiting
    finally:
        child.stop(grace_s=5.0)
