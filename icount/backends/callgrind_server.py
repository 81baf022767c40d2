"""Exact counting windows on a server running under callgrind.

A window is opened by a callgrind dump (whose file is discarded: it holds start-up,
readiness and warm-up) and closed by another dump, whose `Ir` total is the window's
count. Dumps are asked for with `vgdb --pid=P dump`, not `callgrind_control`: vgdb
exits 1 when the command did not reach the process, while callgrind_control exits 0
whatever happened. Measured alternatives and why they are not used: `--zero` biases
the first window (+1.6 instructions per request); `--collect-atstart=no` plus `-i on`
measures nothing.

callgrind acts on a command only while the guest runs. A server idle in
`epoll_wait` is reached through vgdb's ptrace fallback after `--max-invoke-ms`
(10 ms here: each forced command costs ~0.12 s and +27 guest instructions, i.e.
0.027 per request in a 1000-request window). Where ptrace is not permitted
`preflight()` says so and the caller falls back to the differential method over
two lifetimes (`lifetime_count`).

The whole process (all threads) is counted by default; with a thread number the
server runs with `--separate-threads=yes` and only that thread's file counts.
SIGKILL leaves no profile, so servers are stopped with SIGTERM and a long grace.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from icount import environment, procs
from icount.backends import callgrind
from icount.backends.protocol import ProcessCount, WindowCount
from icount.errors import RunFailedError

OUT_NAME = "callgrind.out"
MAX_INVOKE_MS = 10
VGDB_TIMEOUT_S = 60.0  # a dump of a large profile (node) takes seconds under load
PREFLIGHT_TIMEOUT_S = 10.0
IDLE_TIMEOUT_S = 2.0  # a server busy beyond this (timers, GC threads) is dumped anyway
STOP_GRACE_S = 60.0  # valgrind writes the final profile on SIGTERM; never cut it short

# callgrind.out, callgrind.out.3 (dump 3), callgrind.out-02, callgrind.out.3-02 (thread 2)
_PROFILE_NAME = re.compile(re.escape(OUT_NAME) + r"(?:\.(\d+))?(?:-(\d+))?")


def profile_files(run_dir: Path) -> dict[str, tuple[int | None, int | None]]:
    """name -> (dump number, thread number) of every callgrind file in `run_dir`."""
    found: dict[str, tuple[int | None, int | None]] = {}
    for p in run_dir.iterdir():
        m = _PROFILE_NAME.fullmatch(p.name)
        if m:
            found[p.name] = (
                int(m.group(1)) if m.group(1) else None,
                int(m.group(2)) if m.group(2) else None,
            )
    return found


class CallgrindServer:
    """A server process under callgrind, with counting windows opened by dumps."""

    def __init__(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        cpus: Sequence[int],
        thread: int | None = None,
        keep_profiles: bool = False,
    ) -> None:
        self.run_dir = run_dir
        self.thread = thread
        self.keep_profiles = keep_profiles
        self.vgdb = procs.require("vgdb", callgrind.INSTALL_HINT)
        valgrind = callgrind.require_valgrind()
        run_dir.mkdir(parents=True, exist_ok=True)
        for stale in profile_files(run_dir):  # kept by an earlier session (--keep-profiles)
            (run_dir / stale).unlink()
        self.log_file = run_dir / "valgrind.log"
        prefix, _ = environment.aslr_wrapper()
        args = callgrind.valgrind_options(
            run_dir / OUT_NAME,
            self.log_file,
            trace_children=False,
            vgdb=True,
            separate_threads=thread is not None,
        )
        self.child = procs.spawn(
            [*prefix, valgrind, *args, *argv],
            env=env,
            cwd=cwd,
            cpus=cpus,
            stdout=run_dir / "server.stdout",
            stderr=run_dir / "server.stderr",
        )
        self.pid = self.child.pid  # setarch and valgrind exec: the pid is the server's
        self._seen: set[str] = set()
        self._dumps = 0

    # ------------------------------------------------------------ control

    def _vgdb(self, command: str, timeout: float) -> procs.Completed:
        return procs.run(
            [self.vgdb, f"--pid={self.pid}", f"--max-invoke-ms={MAX_INVOKE_MS}", *command.split()],
            timeout=timeout,
        )

    def preflight(self) -> str | None:
        """None when vgdb reaches the idle server (ptrace allowed), else why not."""
        done = self._vgdb("status", PREFLIGHT_TIMEOUT_S)
        if done.ok:
            return None
        if done.timed_out:
            return (
                f"vgdb could not reach the idle server within {PREFLIGHT_TIMEOUT_S:g} s "
                "(ptrace not permitted?)"
            )
        return f"vgdb status failed: {_last_line(done)}"

    def _dump(self, label: str) -> list[str]:
        """Dump and return the names of the new profile files."""
        self._dumps += 1
        wait_idle(self.pid)
        done = self._vgdb(f"dump {label}", VGDB_TIMEOUT_S)
        if not done.ok:
            why = f"timed out after {VGDB_TIMEOUT_S:g} s" if done.timed_out else _last_line(done)
            raise RunFailedError(f"callgrind dump through vgdb failed: {why}")
        names = profile_files(self.run_dir)
        new = sorted(
            n for n, (dump, _) in names.items() if dump is not None and n not in self._seen
        )
        self._seen.update(new)
        if not new:
            raise RunFailedError("vgdb dump answered but callgrind wrote no profile file")
        return new

    def open_window(self) -> None:
        for name in self._dump(f"icount-open-{self._dumps + 1}"):
            if not self.keep_profiles:
                (self.run_dir / name).unlink(missing_ok=True)

    def close_window(self) -> WindowCount:
        names = self._dump(f"icount-close-{self._dumps + 1}")
        chosen = self._select(names, {n: profile_files(self.run_dir)[n][1] for n in names})
        total = sum(callgrind.read_ir(self.run_dir / n) for n in chosen)
        if not self.keep_profiles:
            for name in names:
                (self.run_dir / name).unlink(missing_ok=True)
        return self._count(total)

    def _count(self, total: int) -> WindowCount:
        return WindowCount(total, (ProcessCount(self.pid, "root", total),))

    def _select(self, names: Sequence[str], threads: Mapping[str, int | None]) -> list[str]:
        if self.thread is None:
            return list(names)
        chosen = [n for n in names if threads[n] == self.thread]
        if not chosen:
            have = sorted({t for t in threads.values() if t is not None})
            raise RunFailedError(
                f"--thread {self.thread}: the server has no such valgrind thread "
                f"(threads seen: {', '.join(map(str, have)) or 'none'})"
            )
        return chosen

    # ------------------------------------------------------------ lifetime

    def alive(self) -> bool:
        return self.child.poll() is None

    def stop(self) -> int:
        return self.child.stop(grace_s=STOP_GRACE_S)

    def lifetime_count(self) -> WindowCount:
        """After `stop()`: the Ir of the whole life (every file this process left)."""
        files = profile_files(self.run_dir)
        names = [n for n in sorted(files) if (self.run_dir / n).stat().st_size > 0]
        if not names:
            why = callgrind.valgrind_failure(self.log_file) or "callgrind wrote no profile"
            raise RunFailedError(why)
        chosen = self._select(names, {n: files[n][1] for n in names})
        return self._count(sum(callgrind.read_ir(self.run_dir / n) for n in chosen))

    def cleanup(self) -> None:
        if self.keep_profiles:
            return
        for name in profile_files(self.run_dir):
            (self.run_dir / name).unlink(missing_ok=True)


def _task_states(pid: int) -> list[str] | None:
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None
    states = []
    for task in tasks:
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # the thread ended
        states.append(stat[stat.rfind(")") + 2 :][:1])
    return states


def wait_idle(pid: int, timeout: float = IDLE_TIMEOUT_S) -> bool:
    """Wait until every thread of `pid` sleeps (the server is back in epoll_wait).

    The client has its last response as soon as the server's write() returns, while
    the server still runs the rest of its loop. A dump that arrived then would be taken
    at valgrind's next poll point, in the middle of that code, instead of through
    ptrace in epoll_wait like every other window's edge.
    """
    deadline = time.monotonic() + timeout
    while True:
        states = _task_states(pid)
        if states is None or all(s in "SDtTZX" for s in states):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)


def _last_line(done: procs.Completed) -> str:
    text = (done.stderr + done.stdout).decode("utf-8", "replace").strip().splitlines()
    lines = [t for t in text if not t.startswith("sending command")]
    return lines[-1][:200] if lines else procs.describe_exit(done.returncode)
