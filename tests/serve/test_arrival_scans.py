"""The idle check's scans (icount/threads_idle.py) against fake /proc trees that change
between scans as a server does: the server is idle only when two scans in a row agree
(the same threads, all waiting, none scheduled in between), and valgrind's lock floor is
read in each scan, never kept from an earlier one."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from icount import threads_idle

# lines as /proc shows them (valgrind 3.19 under callgrind, real soft limit 1036)
STAT = "{tid} (srv) {state} 1 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 3 0 {start}"
EPOLL = "232 0x5 0x1fff000620 0x4 0xffffffff 0x0 0x5a2b6c0 0x1002c8dcf0 0x580c3315"
LOCK = "0 0x402 0x1002ffec9f 0x1 0x0 0x0 0x0 0x1002ffec60 0x58031d79"  # read(1026)
LIMITS = "Max open files            {soft}                 20000                files\n"


@dataclass
class Thread:
    state: str = "S"
    syscall: str = EPOLL
    runs: int = 3  # schedstat's times scheduled: moves each time the thread runs
    children: tuple[int, ...] = ()


@dataclass
class Frame:
    """/proc as one scan reads it: pid -> tid -> thread, and each process's exe."""

    threads: dict[int, dict[int, Thread]]
    exe: dict[int, str] = field(default_factory=dict)
    soft: int = 1036

    def read(self, path: str) -> str | None:
        parts = path.split("/")  # '', 'proc', pid, ...
        pid = int(parts[2])
        if parts[3] == "limits":
            return LIMITS.format(soft=self.soft)
        t = self.threads.get(pid, {}).get(int(parts[4]))
        if t is None:
            return None
        name = parts[5]
        if name == "stat":
            return STAT.format(tid=parts[4], state=t.state, start=100 + pid)
        if name == "syscall":
            return t.syscall
        if name == "schedstat":
            return f"{1000 * t.runs} 20 {t.runs}\n"
        if name == "children":
            return " ".join(map(str, t.children))
        return None


class FakeProc:
    """Frames, one per scan: listing the root's threads starts the next scan (the last
    frame stays)."""

    def __init__(self, root: int, frames: list[Frame]) -> None:
        self.root = root
        self.frames = frames
        self.scans = 0

    @property
    def now(self) -> Frame:
        return self.frames[min(self.scans, len(self.frames)) - 1]

    def listdir(self, path: str) -> list[str]:
        pid = int(path.split("/")[2])
        if pid == self.root:
            self.scans += 1
        if pid not in self.now.threads:
            raise FileNotFoundError(path)
        return [str(t) for t in self.now.threads[pid]]

    def readlink(self, path: str) -> str:
        exe = self.now.exe.get(int(path.split("/")[2]))
        if exe is None:
            raise FileNotFoundError(path)
        return exe


@pytest.fixture
def proc(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[FakeProc]]:
    made: list[FakeProc] = []

    def use(fake: FakeProc) -> None:
        made.append(fake)

    monkeypatch.setattr(threads_idle, "_read", lambda p, kept=None: made[-1].now.read(p))
    monkeypatch.setattr("os.listdir", lambda p: made[-1].listdir(p))
    monkeypatch.setattr("os.readlink", lambda p: made[-1].readlink(p))
    yield made


def frame(*threads: tuple[int, int, Thread], **kw: object) -> Frame:
    tree: dict[int, dict[int, Thread]] = {}
    for pid, tid, t in threads:
        tree.setdefault(pid, {})[tid] = t
    return Frame(tree, **kw)  # type: ignore[arg-type]


def wait(fake: FakeProc, proc: list[FakeProc], timeout_s: float = 5.0) -> str | None:
    proc.append(fake)
    ticks = iter(range(1000))
    return threads_idle.wait_idle(
        threads_idle.Watch(fake.root),
        timeout_s,
        clock=lambda: float(next(ticks)) / 100,
        sleep=no_sleep,
    )


def no_sleep(seconds: float) -> None:
    """The fake clock's ticks stand for the time a real wait would sleep."""


def test_an_idle_server_takes_two_scans_that_agree(proc: list[FakeProc]) -> None:
    still = frame((7, 7, Thread()), (7, 8, Thread(syscall="202 0x1")))
    fake = FakeProc(7, [still])
    assert wait(fake, proc) is None
    assert fake.scans == 2


def test_a_thread_that_ran_between_two_scans_asks_for_another(proc: list[FakeProc]) -> None:
    """Each scan reads it asleep, but it woke (a timer) and slept again in between: its
    counters moved, so the server was not idle at one moment; a third scan is taken."""
    frames = [frame((7, 7, Thread()), (7, 8, Thread(runs=r))) for r in (3, 4, 4)]
    fake = FakeProc(7, frames)
    assert wait(fake, proc) is None
    assert fake.scans == 3


def test_a_thread_running_in_between_resets_the_agreement(proc: list[FakeProc]) -> None:
    idle = frame((7, 7, Thread()))
    busy = frame((7, 7, Thread(state="R", syscall="running")))
    fake = FakeProc(7, [idle, busy, idle, idle])
    assert wait(fake, proc) is None
    assert fake.scans == 4  # the scan after the running one is the first of two again


def test_a_process_forked_after_its_parent_was_read_is_seen_by_the_next_scan(
    proc: list[FakeProc],
) -> None:
    """The first scan read the parent's children before the fork: it saw every thread
    waiting. The child, runnable, is seen next."""
    before = frame((7, 7, Thread()))
    parent = Thread(children=(9,), runs=4)  # it ran to fork
    forked = frame((7, 7, parent), (9, 9, Thread(state="R", syscall="running")))
    settled = frame((7, 7, parent), (9, 9, Thread()))
    fake = FakeProc(7, [before, forked, settled, settled])
    assert wait(fake, proc) is None
    assert fake.scans == 4


def test_a_thread_started_between_two_scans_asks_for_another(proc: list[FakeProc]) -> None:
    one = frame((7, 7, Thread()))
    two = frame((7, 7, Thread()), (7, 8, Thread()))
    fake = FakeProc(7, [one, two, two])
    assert wait(fake, proc) is None
    assert fake.scans == 3


def test_a_server_whose_threads_never_keep_still_ends_with_the_reason(
    proc: list[FakeProc],
) -> None:
    """Asleep at every read, but woken between every two (a 1 ms timer): never idle, and
    the wait ends at its timeout with the thread that kept moving."""
    frames = [frame((7, 7, Thread()), (7, 8, Thread(runs=r))) for r in range(3, 1000)]
    why = wait(FakeProc(7, frames), proc, timeout_s=1.0)
    assert why == (
        "the server was never idle within 1 s: pid 7 thread 8 (woke between two scans) kept "
        "it busy (a thread that never sleeps as long as two scans of the server's threads "
        "take: measure it with --arrival closed)"
    )


def test_without_schedstat_the_context_switch_counts_are_compared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    status = iter(["voluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t1\n"] * 2 +
                  ["voluntary_ctxt_switches:\t6\nnonvoluntary_ctxt_switches:\t1\n"])  # fmt: skip
    files = {"/proc/7/task/7/stat": STAT.format(tid=7, state="S", start=1),
             "/proc/7/task/7/syscall": EPOLL}  # fmt: skip

    def read(path: str, kept: object = None) -> str | None:
        return next(status) if path.endswith("/status") else files.get(path)

    monkeypatch.setattr(threads_idle, "_read", read)
    monkeypatch.setattr("os.listdir", lambda p: ["7"])
    watch = threads_idle.Watch(7)
    first, second, third = watch.scan(), watch.scan(), watch.scan()
    assert first == second != third


def test_valgrinds_floor_is_read_again_in_each_scan(proc: list[FakeProc]) -> None:
    """A traced exec runs valgrind again in the same process: the launcher first, then
    the same tool, with the soft limit raised 12 more. A thread reading descriptor 1026
    waits for valgrind's lock under the first limit (1036: floor 1024), and reads the
    guest's own descriptor under the second (1048: floor 1036)."""
    tool = "/usr/libexec/valgrind/callgrind-amd64-linux"
    reading = Thread(syscall=LOCK)
    under_tool = frame((7, 7, reading), exe={7: tool}, soft=1036)
    launcher = frame((7, 7, reading), exe={7: "/usr/bin/valgrind"}, soft=1048)
    exec_d = frame((7, 7, reading), exe={7: tool}, soft=1048)
    fake = FakeProc(7, [under_tool, launcher, exec_d])
    proc.append(fake)
    watch = threads_idle.Watch(7)
    found = watch.scan()
    assert isinstance(found, threads_idle.Running) and found.syscall == "0"
    assert watch.scan() == {(7, 7): "S 3000 20 3"}  # the launcher: not valgrind's tool
    assert watch.scan() == {(7, 7): "S 3000 20 3"}  # the tool again, its floor moved


def test_a_pid_reused_by_a_process_not_under_valgrind_is_read_as_such(
    proc: list[FakeProc],
) -> None:
    tool = "/usr/libexec/valgrind/callgrind-amd64-linux"
    reading = Thread(syscall=LOCK)
    fake = FakeProc(7, [frame((7, 7, reading), exe={7: tool}),
                        frame((7, 7, reading), exe={7: "/usr/bin/python3.11"})])  # fmt: skip
    proc.append(fake)
    watch = threads_idle.Watch(7)
    assert isinstance(watch.scan(), threads_idle.Running)
    assert watch.scan() == {(7, 7): "S 3000 20 3"}


def test_a_root_gone_reads_idle(proc: list[FakeProc]) -> None:
    assert wait(FakeProc(7, [frame()]), proc) is None


VALGRIND = "/usr/libexec/valgrind/callgrind-amd64-linux"


@pytest.mark.parametrize(("exe", "syscalls"), [(None, 0), (VALGRIND, 2)])
def test_syscall_is_read_only_under_valgrind_and_once_for_a_thread_that_has_not_run(
    proc: list[FakeProc], monkeypatch: pytest.MonkeyPatch, exe: str | None, syscalls: int
) -> None:
    """A native thread's system call tells nothing its counters across two scans do not,
    so it is not read; under valgrind it serves the lock test, and a thread that has not
    run since the first scan is not read again (reading syscall waits for the thread to
    leave its CPU), nor its children, the threads being the same. State and counters are
    read in both scans."""
    fake = FakeProc(
        7, [frame((7, 7, Thread()), (7, 8, Thread()), exe={} if exe is None else {7: exe})]
    )
    proc.append(fake)
    read: list[str] = []

    def reading(path: str, kept: object = None) -> str | None:
        read.append(path)
        return fake.now.read(path)

    monkeypatch.setattr(threads_idle, "_read", reading)
    assert threads_idle.wait_idle(threads_idle.Watch(7), 5.0, sleep=no_sleep) is None
    names = [p.rsplit("/", 1)[1] for p in read]
    assert names.count("syscall") == syscalls
    assert names.count("stat") == names.count("schedstat") == 4
    assert names.count("children") == 2  # the first scan's


def test_an_orphan_handed_to_a_thread_that_has_not_run_is_seen(proc: list[FakeProc]) -> None:
    """Thread 8 forked process 20 and exits between two scans: the kernel hands 20 to
    thread 7, whose children list changes although thread 7 never ran. Process 20 runs
    from the second scan on, and the server is never idle."""
    first = frame((7, 7, Thread()), (7, 8, Thread(children=(20,))), (20, 20, Thread()))
    later = frame(
        (7, 7, Thread(children=(20,))), (20, 20, Thread(state="R", syscall="running", runs=9))
    )
    fake = FakeProc(7, [first, later])
    why = wait(fake, proc, timeout_s=0.5)
    assert why is not None and "pid 20 thread 20 (state R)" in why, why


def test_an_orphan_handed_to_a_subreaper_that_has_not_run_is_seen(proc: list[FakeProc]) -> None:
    """The server (a subreaper) forked process 10, which forked 20; 10 exits between two
    scans and the kernel hands 20 to the server's thread, which never ran. 20 runs."""
    first = frame(
        (7, 7, Thread(children=(10,))), (10, 10, Thread(children=(20,))), (20, 20, Thread())
    )
    later = frame(
        (7, 7, Thread(children=(20,))), (20, 20, Thread(state="R", syscall="running", runs=9))
    )
    why = wait(FakeProc(7, [first, later]), proc, timeout_s=0.5)
    assert why is not None and "pid 20 thread 20 (state R)" in why, why
