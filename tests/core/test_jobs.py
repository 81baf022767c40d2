"""Cells several at a time (icount/jobs.py): slots, results handed back to the calling
thread, and a failure in one cell stopping the others."""

from __future__ import annotations

import threading
import time

import pytest

from icount import jobs


def test_one_job_runs_every_item_in_the_calling_thread_in_order() -> None:
    seen: list[tuple[int, int, bool]] = []
    main = threading.current_thread()

    def work(item: int, job: jobs.Job) -> int:
        seen.append((item, job.slot, threading.current_thread() is main))
        return item * 10

    got: list[tuple[int, int]] = []
    jobs.run_jobs([1, 2, 3], 1, work, lambda item, r: got.append((item, r)))
    assert seen == [(1, 0, True), (2, 0, True), (3, 0, True)]
    assert got == [(1, 10), (2, 20), (3, 30)]


def test_jobs_run_at_once_each_in_a_slot_of_its_own() -> None:
    running: set[int] = set()
    most = [0]
    lock = threading.Lock()
    main = threading.current_thread()
    done_in: list[bool] = []

    def work(item: int, job: jobs.Job) -> int:
        with lock:
            assert job.slot not in running  # no two cells share a slot (their CPUs)
            running.add(job.slot)
            most[0] = max(most[0], len(running))
        time.sleep(0.05)
        with lock:
            running.discard(job.slot)
        return item

    got: list[int] = []

    def done(item: int, r: int) -> None:
        done_in.append(threading.current_thread() is main)
        got.append(r)

    jobs.run_jobs(list(range(8)), 3, work, done)
    assert sorted(got) == list(range(8))
    assert most[0] == 3
    assert all(done_in)  # results are saved by the calling thread alone


def test_a_failing_cell_stops_the_others_and_its_error_goes_on() -> None:
    started: list[int] = []
    stopped: list[int] = []

    def work(item: int, job: jobs.Job) -> int:
        started.append(item)
        if item == 0:
            time.sleep(0.05)
            raise ValueError("cell 0 failed")
        try:
            for _ in range(1000):  # a long cell (10 s), checking between its steps
                job.check()
                time.sleep(0.01)
        except jobs.Stopped:
            stopped.append(item)
            raise
        return item

    got: list[int] = []
    with pytest.raises(ValueError, match="cell 0 failed"):
        jobs.run_jobs([0, 1, 2, 3], 2, work, lambda item, r: got.append(r))
    assert got == []
    # the cell running beside it, and any that took the freed slot before the failure
    # was seen, stopped at their next check instead of running their 10 s
    assert 1 in stopped and sorted(stopped) == sorted(set(started) - {0})
    assert 3 not in started  # both workers were busy until the session stopped
