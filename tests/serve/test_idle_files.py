"""The idle check keeps its /proc descriptors open between scans (threads_idle `_read`):
what it reads through them is /proc's text now, not a copy; a thread's are closed once a
whole scan no longer finds it, and all of them with the Watch."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

from icount import threads_idle

# a main thread asleep and a second one blocked reading stdin, which ends when stdin closes
CHILD = (
    "import sys, threading, time\n"
    "t = threading.Thread(target=sys.stdin.read)\n"
    "t.start()\n"
    "print('ready', flush=True)\n"
    "t.join()\n"
    "print('gone', flush=True)\n"
    "time.sleep(60)\n"
)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_kept_descriptors_follow_the_threads_and_close_with_the_watch() -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    try:
        assert child.stdout.readline() == "ready\n"
        before = _open_fds()
        watch = threads_idle.Watch(child.pid)
        assert threads_idle.wait_idle(watch, 10.0) is None
        tids = sorted(os.listdir(f"/proc/{child.pid}/task"))
        assert len(tids) == 2
        kept = dict(watch._kept)
        assert {p.split("/")[4] for p in kept if "/task/" in p} == set(tids)
        assert _open_fds() == before + len(kept)
        # read through a kept descriptor: the thread's state as it is now
        stat = next(p for p in kept if p.endswith(f"/task/{tids[0]}/stat"))
        assert threads_idle._read(stat, watch._kept) == open(stat).read()  # noqa: SIM115
        child.stdin.close()
        before -= 1  # the pipe's end this process held
        assert child.stdout.readline() == "gone\n"
        assert threads_idle.wait_idle(watch, 10.0) is None
        (left,) = os.listdir(f"/proc/{child.pid}/task")
        assert {p.split("/")[4] for p in watch._kept if "/task/" in p} == {left}
        assert _open_fds() == before + len(watch._kept)
        del watch
        gc.collect()
        assert _open_fds() == before
    finally:
        child.kill()
        child.wait()


def test_a_kept_descriptor_of_an_ended_thread_reads_as_ended() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    kept: dict[str, int] = {}
    path = f"/proc/{child.pid}/task/{child.pid}/stat"
    try:
        assert threads_idle._read(path, kept) is not None and path in kept
    finally:
        child.kill()
        child.wait()
    assert threads_idle._read(path, kept) is None
    assert path not in kept
