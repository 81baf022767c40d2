"""Whether every thread of a process tree is blocked waiting in the kernel, read from /proc:
what `--arrival idle` waits for before each request (serve/arrival.py), and what the
callgrind backend waits for before it dumps a window's edge (backends/callgrind_server.py).
A module of its own, below both: backends must not import serve.

How a thread is read (`/proc/PID/task/TID/stat` and `.../syscall`): it waits when its
state is S (interruptible sleep: epoll_wait, a futex, nanosleep, accept) or t/T
(stopped), and it is running when R or D (in the middle of I/O it will carry on after).
Under valgrind one guest thread runs at a time and the others, runnable, sleep reading a
pipe of valgrind's own (its "big lock", default --fair-sched=no): asleep in the kernel,
yet with work to do. valgrind keeps its own file descriptors above the guest's limit:
it raises the real soft RLIMIT_NOFILE by 12 (N_RESERVED_FDS in coregrind/m_main.c,
valgrind 3.19) and shows the guest the old one, so a thread of a valgrind process
blocked in read() on a descriptor at or above the real soft limit minus 12 waits for
valgrind's lock, and counts as running. (With --fair-sched=yes valgrind's lock is a
futex in its own memory, which this does not tell apart; icount does not use it.)
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass

# valgrind's own file descriptors: the top N_RESERVED_FDS below its raised soft limit
VALGRIND_RESERVED_FDS = 12
# read(2)'s number, where valgrind's lock is a read of a pipe
_READ_SYSCALL = {"x86_64": 0, "aarch64": 63}.get(platform.machine())
# how long the client checks without sleeping, then the sleep between checks: a
# request under callgrind takes a millisecond or more, natively tens of microseconds
SPIN_S = 0.001
POLL_S = 0.0002


@dataclass(frozen=True)
class Running:
    """A thread of the server that has work to do, as /proc showed it."""

    pid: int
    tid: int
    state: str
    syscall: str  # /proc's first field: a number, "running", or "-1" (in the kernel, no call)

    def describe(self) -> str:
        where = "running" if self.syscall == "running" else f"state {self.state}"
        if self.syscall not in ("running", "-1"):
            where += f", system call {self.syscall}"
        return f"pid {self.pid} thread {self.tid} ({where})"


def _read(path: str) -> str | None:
    """The file's text; None where its thread or process ended (nothing of it runs).
    PermissionError where /proc hides it (another user's process, without the right to
    trace it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except PermissionError:
        raise
    except OSError:
        return None
    try:  # os calls, not open(): a check reads several files per thread per request
        return os.read(fd, 4096).decode("latin-1")
    except PermissionError:
        raise
    except OSError:
        return None
    finally:
        os.close(fd)


def _valgrind_floor(pid: int) -> int | None:
    """The lowest descriptor valgrind keeps for itself in process `pid`, or None for a
    process not under valgrind."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None
    if "/valgrind/" not in exe:
        return None
    for line in (_read(f"/proc/{pid}/limits") or "").splitlines():
        if line.startswith("Max open files"):
            soft = line.split()[3]
            return int(soft) - VALGRIND_RESERVED_FDS if soft.isdigit() else None
    return None


class Watch:
    """The threads of a server's processes (the started one and its descendants)."""

    def __init__(self, root: int) -> None:
        self.root = root
        self._floors: dict[int, int | None] = {}

    def _floor(self, pid: int) -> int | None:
        if pid not in self._floors:
            self._floors[pid] = _valgrind_floor(pid)
        return self._floors[pid]

    def running(self) -> Running | None:
        """The first thread found with work to do; None when every thread waits."""
        todo = [self.root]
        while todo:
            pid = todo.pop()
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                task = f"/proc/{pid}/task/{tid}"
                found = self._thread(pid, int(tid), task)
                if found is not None:
                    return found
                kids = _read(f"{task}/children")
                if kids:
                    todo.extend(int(k) for k in kids.split())
        return None

    def _thread(self, pid: int, tid: int, task: str) -> Running | None:
        stat = _read(f"{task}/stat")
        if stat is None:
            return None
        state = stat[stat.rfind(")") + 2 : stat.rfind(")") + 3]
        if state in "ZXI":  # a zombie, a dead thread, an idle kernel thread
            return None
        # read after the state: a thread that woke in between shows "running" here
        call = (_read(f"{task}/syscall") or "").split()
        nr = call[0] if call else "running"
        if state not in "StT" or nr == "running":
            return Running(pid, tid, state, nr)
        floor = self._floor(pid)
        if floor is not None and len(call) > 1 and nr == str(_READ_SYSCALL):
            fd = int(call[1], 16)
            if fd >= floor:  # waiting for valgrind's lock: runnable
                return Running(pid, tid, state, nr)
        return None


def wait_idle(
    watch: Watch, timeout_s: float, clock: Callable[[], float] = time.monotonic
) -> str | None:
    """Wait until every thread of the server waits; None then, else (after `timeout_s`)
    which thread never did."""
    start = clock()
    while True:
        try:
            found = watch.running()
        except PermissionError as e:
            return (
                f"cannot tell whether the server is idle: {e.filename}: {e.strerror} "
                "(measure it with --arrival closed)"
            )
        if found is None:
            return None
        waited = clock() - start
        if waited > timeout_s:
            return (
                f"the server was never idle within {timeout_s:g} s: {found.describe()} kept "
                "running (a thread that never sleeps: measure it with --arrival closed)"
            )
        if waited > SPIN_S:
            time.sleep(POLL_S)
