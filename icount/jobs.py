"""Cells measured several at a time on one host (--jobs N).

Each cell runs in a worker thread with a job slot (0 to N-1) of its own, which names
its CPUs; finished cells are handed back to the calling thread, which alone saves the
results file. A cell's work is mostly waiting on its server and its load generator,
so threads are enough. When anything goes wrong (Ctrl-C, an error in one cell) every
other cell is stopped: its processes are killed and the next `check()` in it raises
`Stopped`, then the error goes on as in a session of one job.

With one job every cell runs in the calling thread, one after the other, exactly as
before --jobs existed.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TypeVar

from icount import procs

T = TypeVar("T")
R = TypeVar("R")


class Stopped(BaseException):
    """Ends a cell because the session is stopping (not an Exception: nothing on the
    way catches it as a failed run)."""


@dataclass(frozen=True)
class Job:
    slot: int  # 0 .. jobs-1: which CPUs the cell uses
    stopping: threading.Event

    def check(self) -> None:
        if self.stopping.is_set():
            raise Stopped


@dataclass
class Tally:
    """Runs done in a session, for its progress, counted by the cells running at once."""

    total: int
    done: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, n: int) -> None:
        with self.lock:
            self.done += n


def run_jobs(
    items: Sequence[T],
    jobs: int,
    work: Callable[[T, Job], R],
    done: Callable[[T, R], None],
) -> None:
    """`work(item, job)` for every item, `jobs` at a time; `done(item, result)` in the
    calling thread as each finishes (in the order they finish)."""
    stopping = threading.Event()
    if jobs <= 1 or len(items) <= 1:
        for item in items:
            done(item, work(item, Job(0, stopping)))
        return
    slots: queue.SimpleQueue[int] = queue.SimpleQueue()
    for slot in range(jobs):
        slots.put(slot)

    def task(item: T) -> R:
        slot = slots.get()
        try:
            job = Job(slot, stopping)
            job.check()
            return work(item, job)
        finally:
            slots.put(slot)

    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="icount-job")
    pending: dict[Future[R], int] = {pool.submit(task, item): i for i, item in enumerate(items)}
    try:
        while pending:
            # a timeout, so that Ctrl-C reaches this thread promptly
            finished, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in sorted(finished, key=lambda f: pending[f]):
                i = pending.pop(fut)
                done(items[i], fut.result())
    except BaseException:
        stopping.set()
        for fut in pending:
            fut.cancel()
        procs.kill_all(grace_s=1.0)  # the other cells' servers: their threads end soon after
        pool.shutdown(wait=True)
        raise
    pool.shutdown(wait=True)
