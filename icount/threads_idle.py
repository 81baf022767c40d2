"""Whether every thread of a process tree is blocked waiting in the kernel, read from /proc:
what `--arrival idle` waits for before each request (serve/arrival.py), and what the
callgrind backend waits for before it dumps a window's edge (backends/callgrind_server.py).
A module of its own, below both: backends must not import serve.

How a thread is read (`/proc/PID/task/TID/stat`, `schedstat`, `children`, and `syscall`
in a valgrind process only): it waits when its state is S (interruptible sleep:
epoll_wait, a futex, nanosleep, accept) or t/T (stopped), and it is running when R or D
(in the middle of I/O it will carry on after).
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
import weakref
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
# a Watch's /proc descriptors kept open between scans, at most (four files a thread)
KEPT_FILES = 256


@dataclass(frozen=True)
class Running:
    """A thread of the server that has work to do, as /proc showed it."""

    pid: int
    tid: int
    state: str
    syscall: str  # /proc's first field: a number, "running", or "-1" (in the kernel, no call)
    changed: str | None = None  # asleep in both of two scans, yet not the same thread

    def describe(self) -> str:
        if self.changed is not None:
            return f"pid {self.pid} thread {self.tid} ({self.changed})"
        where = "running" if self.syscall == "running" else f"state {self.state}"
        if self.syscall not in ("running", "-1"):
            where += f", system call {self.syscall}"
        return f"pid {self.pid} thread {self.tid} ({where})"


def _read(path: str, kept: dict[str, int] | None = None) -> str | None:
    """The file's text; None where its thread or process ended (nothing of it runs).
    PermissionError where /proc hides it (another user's process, without the right to
    trace it). `kept`: descriptors left open from earlier reads, by path, where this one's
    is left too (up to KEPT_FILES): /proc makes a file's text afresh for each read from
    its start, so a scan reads each with one system call, not three. A kept descriptor
    stays with the thread it was opened for: once that thread has ended, reading it
    fails, and the path is opened again (a reused pid is a new thread)."""
    if kept is not None and (old := kept.get(path)) is not None:
        try:
            return os.pread(old, 4096, 0).decode("latin-1")
        except OSError:
            del kept[path]
            os.close(old)
    try:
        fd = os.open(path, os.O_RDONLY)
    except PermissionError:
        raise
    except OSError:
        return None
    try:  # os calls, not open(): a check reads several files per thread per request
        text = os.pread(fd, 4096, 0).decode("latin-1")
    except OSError as e:
        os.close(fd)
        if isinstance(e, PermissionError):
            raise
        return None
    if kept is not None and len(kept) < KEPT_FILES:
        kept[path] = fd
    else:
        os.close(fd)
    return text


def _close_all(kept: dict[str, int]) -> None:
    for fd in kept.values():
        os.close(fd)
    kept.clear()


def _valgrind_floor(pid: int, kept: dict[str, int] | None = None) -> int | None:
    """The lowest descriptor valgrind keeps for itself in process `pid`, or None for a
    process not under valgrind."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None
    if "/valgrind/" not in exe:
        return None
    for line in (_read(f"/proc/{pid}/limits", kept) or "").splitlines():
        if line.startswith("Max open files"):
            soft = line.split()[3]
            return int(soft) - VALGRIND_RESERVED_FDS if soft.isdigit() else None
    return None


def _switches(task: str, kept: dict[str, int] | None = None) -> str | None:
    """What changes each time the thread runs: schedstat's time on the CPU, time waiting
    for it and times scheduled; where the kernel keeps no schedstat, its context-switch
    counts. None where the thread ended."""
    text = _read(f"{task}/schedstat", kept)
    if text is not None:
        return text.strip()
    status = _read(f"{task}/status", kept)
    if status is None:
        return None
    return " ".join(line for line in status.splitlines() if "ctxt_switches" in line)


# (pid, tid) of every thread of a scan in which all waited: what shows each one ran since
Scan = dict[tuple[int, int], str]


class Watch:
    """The threads of a server's processes (the started one and its descendants).

    One scan reads the threads one after another, so it is not a snapshot: a thread read
    asleep may wake before the last is read, and a process forked after its parent's
    children were read is not seen. The server is idle only when two scans in a row
    agree (`wait_idle`): the same threads, every one waiting in both, none scheduled in
    between; each was then asleep from its first read to its second, and so all of them
    at once between the two scans.
    """

    def __init__(self, root: int) -> None:
        self.root = root
        self._kids: dict[tuple[int, int], str | None] = {}  # each thread's, at the last scan
        self._steady = False  # the last scan saw the threads the one before it saw
        self._kept: dict[str, int] = {}  # /proc descriptors left open (`_read`)
        # closed with the Watch: the client's pacer and the backend's edges drop theirs
        weakref.finalize(self, _close_all, self._kept)

    def scan(self, before: Scan | None = None) -> Running | Scan:
        """The first thread found with work to do, else every thread with its counters.
        `before`: the scan just taken, where every thread waited; a thread that has not
        run since (the same state and counters) still waits in the same call, and has
        forked nothing: its system call (read in valgrind processes only, where it
        serves the lock test) is not read again, nor its children while the threads
        stay the same. A thread's children change without it running when a thread or
        process exits (the kernel hands its children to another thread of the process,
        or to a subreaper): that thread is then missing from the scan after, which so
        differs, and the next one reads every thread's children again."""
        seen: Scan = {}
        kids_now: dict[tuple[int, int], str | None] = {}
        steady = before is not None and self._steady
        todo = [self.root]
        while todo:
            pid = todo.pop()
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            # valgrind's floor is read again each scan, not kept: a traced exec runs
            # valgrind again in the same process (the same tool's path, the same start
            # time) with a soft limit raised once more, and a pid may be reused
            floor = _valgrind_floor(pid, self._kept)
            for tid in tids:
                key = (pid, int(tid))
                task = f"/proc/{pid}/task/{tid}"
                known = before.get(key) if before else None
                found = self._thread(pid, int(tid), task, floor, known)
                if isinstance(found, Running):
                    return found
                if found is not None:
                    seen[key] = found
                if steady and found is not None and found == known and key in self._kids:
                    kids = self._kids[key]
                else:
                    kids = _read(f"{task}/children", self._kept)
                kids_now[key] = kids
                if kids:
                    todo.extend(int(k) for k in kids.split())
        self._kids = kids_now
        self._forget_ended({f"/proc/{pid}/task/{tid}/" for pid, tid in kids_now})
        self._steady = before is None or seen.keys() == before.keys()
        return seen

    def _forget_ended(self, tasks: set[str]) -> None:
        """Close the kept descriptors of threads a whole scan no longer found (a
        process's limits are kept while one of its threads is)."""
        pids = {t.split("/")[2] for t in tasks}
        for path in list(self._kept):
            task = path[: path.rfind("/") + 1]
            if task not in tasks and not (path.endswith("/limits") and path.split("/")[2] in pids):
                os.close(self._kept.pop(path))

    def _thread(
        self, pid: int, tid: int, task: str, floor: int | None, known: str | None = None
    ) -> Running | str | None:
        """Running, or the state and counters of a thread that waits; None for one that
        ended. `floor`: valgrind's lowest descriptor in its process, None for a process
        not under valgrind. `known`: what the last scan read of it, where it waited."""
        # the counters first: a thread that runs after they were read and is asleep
        # again by the state's read has new ones by the next scan
        switches = _switches(task, self._kept)
        stat = _read(f"{task}/stat", self._kept)
        if stat is None or switches is None:
            return None
        state = stat[stat.rfind(")") + 2 : stat.rfind(")") + 3]
        if state in "ZXI":  # a zombie, a dead thread, an idle kernel thread
            return None
        if state not in "StT":
            return Running(pid, tid, state, "-1")
        waits = f"{state} {switches}"
        if floor is None or waits == known:
            # natively the system call tells nothing the two scans' counters do not;
            # under valgrind, a thread that has not run since it was read waiting
            return waits
        # read after the state: a thread that woke in between shows "running" here
        call = (_read(f"{task}/syscall", self._kept) or "").split()
        nr = call[0] if call else "running"
        if nr == "running":
            return Running(pid, tid, state, nr)
        if len(call) > 1 and nr == str(_READ_SYSCALL) and int(call[1], 16) >= floor:
            return Running(pid, tid, state, nr)  # waiting for valgrind's lock: runnable
        return waits


def _moved(before: Scan, after: Scan) -> Running:
    """A thread that shows the server did not wait between two scans."""
    for key in sorted(before.keys() ^ after.keys()):
        return Running(*key, "S", "-1", "started or ended between two scans")
    for key in sorted(after):
        if before[key] != after[key]:
            return Running(*key, after[key][:1], "-1", "woke between two scans")
    raise ValueError("the scans agree")


def wait_idle(
    watch: Watch,
    timeout_s: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> str | None:
    """Wait until two scans in a row find every thread of the server waiting, the same
    threads, none of which ran in between (Watch says why two); None then, else (after
    `timeout_s`) a thread that kept the server from it."""
    start = clock()
    before: Scan | None = None
    while True:
        try:
            found = watch.scan(before)
        except PermissionError as e:
            return (
                f"cannot tell whether the server is idle: {e.filename}: {e.strerror} "
                "(measure it with --arrival closed)"
            )
        if isinstance(found, Running):
            before = None
        elif found == before:
            return None
        else:
            last = None if before is None else _moved(before, found)
            before = found
            if last is None:
                continue  # the first of two: the second at once
            found = last
        waited = clock() - start
        if waited > timeout_s:
            return (
                f"the server was never idle within {timeout_s:g} s: {found.describe()} kept "
                "it busy (a thread that never sleeps as long as two scans of the server's "
                "threads take: measure it with --arrival closed)"
            )
        if waited > SPIN_S:
            sleep(POLL_S)
