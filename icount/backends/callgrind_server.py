"""Exact counting windows on a server under callgrind: every process of it, summed.

The server runs with `--trace-children=yes` and one profile per process (`%p`), so a
forked worker writes its own profile and an exec'd child runs under callgrind too
(with child tracing, valgrind also gives every forked child its own gdbserver, which
vgdb needs). A window is opened by dumping every live process of the server's tree
(the dumps are discarded: they hold start-up, readiness and warm-up) and closed by
dumping every live process again. The window's count is the sum of every profile
file written in between: the closing dumps, the final profiles of processes that
exited inside the window, and the dumps callgrind makes before each fork
(`--dump-before=fork`): without those, a child forked inside a window would inherit
its parent's costs since the last dump, and they would be counted twice (callgrind's
manual: "the child will inherit all the profiling data that has been gathered for the
parent"). A process born inside the window is counted from its birth, one that exits
inside it up to its end, none twice. What a forked child runs between fork and exec
(a few hundred instructions in the C library) is not counted: callgrind starts a
fresh profile at exec and writes none for the image it replaces.

Dumps are asked for with `vgdb --pid=P dump`, not `callgrind_control`: vgdb exits 1
when the command did not reach the process. callgrind acts on a command only while the
guest runs; a process idle in `epoll_wait` is reached through vgdb's ptrace fallback
after `--max-invoke-ms` (10 ms here: each forced command costs ~0.12 s and +27 guest
instructions, 0.027 per request per process in a 1000-request window). Where ptrace
is not permitted `preflight()` says so and the caller falls back to the differential
method over two lifetimes (`lifetime_count`). Measured alternatives and why they are
not used: `--zero` biases the first window (+1.6 instructions per request);
`--collect-atstart=no` plus `-i on` measures nothing.

With a thread number the server runs with `--separate-threads=yes` and only that
valgrind thread of the started process counts; with `root_only`, only the started
process. SIGKILL leaves no profile, so servers are stopped with SIGTERM and a long
grace. Servers started as root that drop privileges in their workers (nginx runs
them as `nobody`) must still be able to write their profiles and open their vgdb
FIFOs: valgrind's files go to a fresh folder under /tmp of mode 1777 (the run folder
may lie under one no other user can enter, as pytest's do), and move to the run folder
when the server is done.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import psutil

from icount import environment, procs, threads_idle
from icount.backends.callgrind_reader import read_self_costs
from icount.backends.callgrind_reader import read_window as read_profiled
from icount.backends.protocol import ProcessCount, WindowCount
from icount.backends.valgrind import (
    INSTALL_HINT,
    guest_crash,
    require_valgrind,
    valgrind_options,
    valgrind_problem,
)
from icount.errors import ParseError, RunFailedError
from icount.runtimes import RuntimeWork
from icount.window_profile import WindowProfile, sum_windows

OUT_STEM = "callgrind.out"
LOG_STEM = "valgrind.log"
VGDB_STEM = "vgdb"
MAX_INVOKE_MS = 10
VGDB_TIMEOUT_S = 60.0  # a dump of a large profile (node) takes seconds under load
PREFLIGHT_TIMEOUT_S = 10.0
IDLE_TIMEOUT_S = 2.0  # a server busy beyond this (timers, GC threads) is dumped anyway
STOP_GRACE_S = 60.0  # valgrind writes the final profile on SIGTERM; never cut it short
# where the server was counted in windows nothing reads its final profile, and one that
# does not exit on SIGTERM under valgrind (nginx did, now and then) is killed sooner
WINDOWS_STOP_GRACE_S = 15.0
FINAL_WAIT_S = 10.0  # how long a process that is exiting may take to write its profile
# vgdb waits --max-invoke-ms before it forces an idle process, after it started (~5 ms);
# once dumps were timed, the median time a dump took stands for it (the dump happens
# near the end of vgdb's call)
CLOSE_LATENCY_S = MAX_INVOKE_MS / 1000 + 0.005

# callgrind.out.PID, callgrind.out.PID.3 (dump 3), callgrind.out.PID-02 (thread 2), ...
_PROFILE_NAME = re.compile(re.escape(OUT_STEM) + r"\.(\d+)(?:\.(\d+))?(?:-(\d+))?")
_LOG_NAME = re.compile(re.escape(LOG_STEM) + r"\.(\d+)")


@dataclass(frozen=True)
class ProfileFile:
    name: str
    pid: int
    dump: int | None  # None: the profile written when the process ended
    thread: int | None  # valgrind's thread number, with --separate-threads


def profile_files(run_dir: Path) -> list[ProfileFile]:
    """Every callgrind file in `run_dir`, by pid, dump and thread number."""
    found = []
    for p in run_dir.iterdir():
        m = _PROFILE_NAME.fullmatch(p.name)
        if m:
            found.append(
                ProfileFile(
                    p.name,
                    int(m.group(1)),
                    int(m.group(2)) if m.group(2) else None,
                    int(m.group(3)) if m.group(3) else None,
                )
            )
    return sorted(found, key=lambda f: (f.pid, f.dump or 0, f.thread or 0))


def _logged_pids(run_dir: Path) -> set[int]:
    """Every process valgrind ran for this server: each leaves valgrind.log.PID."""
    return {int(m.group(1)) for p in run_dir.iterdir() if (m := _LOG_NAME.fullmatch(p.name))}


def under_callgrind(proc: psutil.Process) -> bool:
    """True for a process running under callgrind (its executable is valgrind's tool)."""
    try:
        return Path(proc.exe()).name.startswith("callgrind-")
    except psutil.Error:
        return False


class CallgrindServer:
    """A server under callgrind, with counting windows opened by dumps of all its processes."""

    def __init__(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        cpus: Sequence[int],
        thread: int | None = None,
        root_only: bool = False,
        keep_profiles: bool = False,
        instrumented: bool = False,
        collectors: Sequence[str] = (),
        profile_top: int = 0,
    ) -> None:
        self.run_dir = run_dir
        self.profile_top = profile_top  # functions a cell keeps: 0, no window profile
        self._profiles: list[WindowProfile] = []  # each file's functions since the last window
        # valgrind's own files go to a scratch folder under /tmp that any user can reach
        # (see the module docstring), and are moved to run_dir when the server is done
        self.out = Path(tempfile.mkdtemp(prefix="icount-cg-", dir="/tmp"))
        os.chmod(self.out, 0o1777)  # workers that drop privileges write here too
        self.thread = thread
        self.root_only = root_only or thread is not None
        self.keep_profiles = keep_profiles
        self.vgdb = procs.require("vgdb", INSTALL_HINT)
        valgrind = require_valgrind()
        run_dir.mkdir(parents=True, exist_ok=True)
        for stale in run_dir.iterdir():  # kept by an earlier session (--keep-profiles)
            if _PROFILE_NAME.fullmatch(stale.name) or _LOG_NAME.fullmatch(stale.name):
                stale.unlink()
        self.vgdb_prefix = self.out / VGDB_STEM
        prefix, _ = environment.aslr_wrapper()
        args = valgrind_options(
            self.out / f"{OUT_STEM}.%p",
            self.out / f"{LOG_STEM}.%p",
            trace_children=True,
            vgdb_prefix=self.vgdb_prefix,
            separate_threads=thread is not None,
            instrumented_at_start=instrumented,
        )
        try:
            self.child = procs.spawn(
                [*prefix, valgrind, *args, *argv],
                env=env,
                cwd=cwd,
                cpus=cpus,
                stdout=run_dir / "server.stdout",
                stderr=run_dir / "server.stderr",
            )
        except BaseException:
            shutil.rmtree(self.out, ignore_errors=True)
            raise
        self.pid = self.child.pid  # setarch and valgrind exec: the pid is the server's
        self._seen: set[str] = set()  # profile files already read
        self._ended: set[int] = set()  # processes whose final profile was read
        self._order: dict[int, int] = {self.pid: 0}  # processes in the order first seen
        self._threads: set[int] = set()  # valgrind thread numbers of the started process
        self._dumps = 0
        self._instrumented = instrumented
        self._functions: dict[str, float] = {}  # self Ir by function since the last window
        self.collectors = tuple(collectors)  # --collector patterns (icount/runtimes.py)
        # runtime -> [collector, compiler, calls, scheduler] since the last window
        self._runtime: dict[str | None, list[int]] = {}
        self._starts_instrumented = instrumented  # a process exec'd later does too
        self._at_open: set[int] = set()  # processes live when the current window opened
        self.opened_at = 0.0
        self._dump_times: list[float] = []  # seconds each vgdb dump of the root took
        self._unsettled: list[str] = []  # the current window's edges dumped while busy

    # ------------------------------------------------------------ processes

    def processes(self) -> list[psutil.Process]:
        """The live processes of the server under callgrind, the started one first."""
        try:
            root = psutil.Process(self.pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            return []
        live = []
        for p in tree:
            try:
                if p.status() == psutil.STATUS_ZOMBIE or not under_callgrind(p):
                    continue
            except psutil.Error:
                continue
            self._order.setdefault(p.pid, len(self._order))
            live.append(p)
        return sorted(live, key=lambda p: self._order[p.pid])

    def uncounted(self) -> list[str]:
        """Live processes of the server's tree that do not run under callgrind (a setuid
        program, one valgrind cannot run), described."""
        try:
            tree = psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            return []
        out = []
        for p in tree:
            with contextlib.suppress(psutil.Error):
                if p.status() != psutil.STATUS_ZOMBIE and not under_callgrind(p):
                    out.append(p)
        return [procs.describe([p]) for p in out]

    # ------------------------------------------------------------ control

    def _vgdb(self, pid: int, command: str, timeout: float) -> procs.Completed:
        # A process that exits while vgdb talks to it (a daemonizing server's started
        # process, a worker that ends) never answers: vgdb would wait out its timeout,
        # 60 s, which a CI run once spent in one window.
        return procs.run(
            [self.vgdb, f"--vgdb-prefix={self.vgdb_prefix}", f"--pid={pid}",
             f"--max-invoke-ms={MAX_INVOKE_MS}", *command.split()],
            timeout=timeout,
            real_uid=self._share_fifos(pid),
            abandon=lambda: not _alive(pid),
            leaf=True,  # a daemon the server leaves while vgdb runs is the server's
        )  # fmt: skip

    def _share_fifos(self, pid: int) -> int | None:
        """A worker that changed its user (nginx's run as `nobody`) cannot open the vgdb
        FIFOs valgrind made for it as root, nor see that a root vgdb is alive (its
        kill(vgdb, 0) fails with EPERM), so it never answers. Give it its FIFOs, and
        run vgdb with the worker's real uid and root's effective uid (which keeps the
        right to ptrace a process that is no longer dumpable). Returns that uid, or
        None where nothing differs."""
        if os.geteuid() != 0:
            return None
        try:
            uid = psutil.Process(pid).uids().real
            gid = psutil.Process(pid).gids().real
        except psutil.Error:
            return None
        if uid == 0:
            return None
        for fifo in self.out.glob(f"{VGDB_STEM}-*-{pid}-by-*"):
            with contextlib.suppress(OSError):
                os.chown(fifo, uid, gid)
        return uid

    def preflight(self) -> str | None:
        """None when vgdb reaches every idle process of the server (ptrace allowed),
        else why not."""
        for p in self.processes():
            done = self._vgdb(p.pid, "status", PREFLIGHT_TIMEOUT_S)
            if done.ok or not _alive(p.pid):
                continue
            if done.timed_out:
                return (
                    f"vgdb could not reach the idle server (pid {p.pid}) within "
                    f"{PREFLIGHT_TIMEOUT_S:g} s (ptrace not permitted?)"
                )
            return f"vgdb status failed on pid {p.pid}: {_last_line(done)}"
        return None

    def _dump_all(self, edge: str) -> set[int]:
        """Dump every live process at the window's `edge` (open, close); returns the pids
        that were dumped."""
        self._dumps += 1
        dumped: set[int] = set()
        # The client has its last response as soon as the server's write() returns, while
        # the server still runs the rest of its loop: a dump that arrived then would be
        # taken at valgrind's next poll point, in the middle of that code, instead of
        # through ptrace in epoll_wait like every other window's edge. A server busy
        # beyond IDLE_TIMEOUT_S is dumped anyway, and the window says why (a closed loop
        # or an external load generator never lets it idle; under --arrival idle the
        # client has waited for it before each edge, serve/arrival.settle).
        busy = threads_idle.wait_idle(threads_idle.Watch(self.pid), IDLE_TIMEOUT_S)
        if busy is not None:
            self._unsettled.append(f"{edge}: {busy}")
        live = self.processes()
        for p in live:
            t0 = time.monotonic()
            done = self._vgdb(p.pid, f"dump icount-{edge}-{self._dumps}", VGDB_TIMEOUT_S)
            if done.ok:
                dumped.add(p.pid)
                if p.pid == self.pid:
                    self._dump_times.append(time.monotonic() - t0)
            elif _alive(p.pid):
                why = (
                    f"timed out after {VGDB_TIMEOUT_S:g} s" if done.timed_out else _last_line(done)
                )
                raise RunFailedError(f"callgrind dump of pid {p.pid} through vgdb failed: {why}")
            # else: it exited meanwhile; its final profile is read like any other
        return dumped

    def _collect(self, read: bool = True) -> tuple[dict[int, float], set[int]]:
        """Instructions of every profile file not read yet, by pid, and every pid that
        wrote one. A process's final profile is read only once it has ended. Files of
        processes or threads not counted (root_only, --thread) are read and dropped, so
        they never reach a later window. With `read` off the files are only dropped:
        what came before a window is never parsed (nor are the call costs that
        callgrind wraps below zero in the dump after instrumentation was switched off
        and on again, for calls that were open across the switch)."""
        counts: dict[int, float] = {}
        wrote: set[int] = set()
        for f in profile_files(self.out):
            if f.name in self._seen:
                continue
            if f.dump is None and _alive(f.pid):
                continue  # written at exit: not complete while the process lives
            ir = 0
            by_function: Mapping[str, float] = {}
            if read and self._counts(f):
                try:
                    if self.profile_top:
                        ir, profile, work = read_profiled(
                            self.out / f.name, self.collectors, self.profile_top
                        )
                        by_function = profile
                        self._profiles.append(profile)
                    else:
                        ir, by_function, work = read_self_costs(self.out / f.name, self.collectors)
                    self._add_runtime(work)
                except ParseError as e:
                    raise RunFailedError(f"unreadable callgrind profile: {e}") from None
            self._seen.add(f.name)
            wrote.add(f.pid)
            if f.dump is None:
                self._ended.add(f.pid)
            if f.pid == self.pid and f.thread is not None:
                self._threads.add(f.thread)
            if not self.keep_profiles:
                (self.out / f.name).unlink(missing_ok=True)
            if self._counts(f):
                for name, cost in by_function.items():
                    self._functions[name] = self._functions.get(name, 0) + cost
                self._order.setdefault(f.pid, len(self._order))
                counts[f.pid] = counts.get(f.pid, 0) + ir
        return counts, wrote

    def _add_runtime(self, work: RuntimeWork) -> None:
        if work.runtime is not None:
            parts = self._runtime.setdefault(work.runtime, [0, 0, 0, 0])
            parts[0] += work.collector
            parts[1] += work.compiler
            parts[2] += work.calls
            parts[3] += work.scheduler

    def _counts(self, f: ProfileFile) -> bool:
        if self.root_only and f.pid != self.pid:
            return False
        return self.thread is None or f.thread == self.thread

    def _lost(self) -> str | None:
        """A process of the server that ended without a profile: its work is lost."""
        for pid in sorted(_logged_pids(self.out) - self._ended):
            if _alive(pid):
                continue
            if not procs.wait_until(functools.partial(self._final_exists, pid), FINAL_WAIT_S):
                log = self.out / f"{LOG_STEM}.{pid}"
                why = valgrind_problem(log) or "killed before it could write it?"
                return f"process {pid} of the server ended without writing its profile ({why})"
        return None

    def _final_exists(self, pid: int) -> bool:
        return any(f.pid == pid and f.dump is None for f in profile_files(self.out))

    def _window_count(self, counts: Mapping[int, float]) -> WindowCount:
        ordered = sorted(counts, key=lambda pid: self._order[pid])
        parts = tuple(
            ProcessCount(pid, "root" if pid == self.pid else "child", counts[pid])
            for pid in ordered
        )
        functions: Mapping[str, float] = self._functions
        if self._profiles:  # the same self costs, with inclusive costs and calls
            functions = sum_windows(self._profiles)
        self._functions, self._profiles = {}, []
        found, self._runtime = self._runtime, {}
        named = sorted(k for k in found if k is not None)
        runtime = None
        if named:  # processes of one server run one runtime; several: their names joined
            runtime = RuntimeWork("+".join(named), *(sum(found[k][i] for k in named)
                                                     for i in (0, 1, 2, 3)))  # fmt: skip
        return WindowCount(sum(counts.values()), parts, functions, runtime)

    @property
    def close_latency_s(self) -> float:
        if not self._dump_times:
            return CLOSE_LATENCY_S
        return float(statistics.median(self._dump_times[-8:]))

    def instrument(self, on: bool) -> None:
        """vgdb `instrumentation on|off` on every live process (a child forked later
        inherits the state; one exec'd later starts uninstrumented: see close_window)."""
        if on == self._instrumented:
            return
        word = "on" if on else "off"
        for p in self.processes():
            done = self._vgdb(p.pid, f"instrumentation {word}", VGDB_TIMEOUT_S)
            if not done.ok and _alive(p.pid):
                why = _last_line(done)
                raise RunFailedError(f"callgrind instrumentation {word} on pid {p.pid}: {why}")
        self._instrumented = on

    def open_window(self) -> None:
        self.instrument(True)
        self._unsettled = []
        self._dump_all("open")
        self.opened_at = time.monotonic()
        self._collect(read=False)  # start-up, readiness, warm-up, the opening dumps
        self._functions = {}
        self._profiles = []
        self._runtime = {}
        self._at_open = {p.pid for p in self.processes()}

    def close_window(self) -> WindowCount:
        dumped = self._dump_all("close")
        counts, wrote = self._collect()
        lost = self._lost()
        if lost:
            raise RunFailedError(lost)
        missing = sorted(dumped - wrote)
        if missing:
            raise RunFailedError(
                f"vgdb dumped pid {missing[0]} but callgrind wrote no profile for it"
            )
        unseen = [pid for pid, n in counts.items() if pid not in self._at_open and n == 0]
        if unseen and not self._starts_instrumented:
            raise RunFailedError(
                f"process {unseen[0]} started inside the window and executed nothing under "
                "callgrind: it was exec'd while instrumentation starts off (the warm-up "
                "runs uninstrumented); measure this server with --warmup-instrumented"
            )
        if self.thread is not None and self.pid not in counts:
            seen = ", ".join(map(str, sorted(self._threads))) or "none"
            raise RunFailedError(
                f"--thread {self.thread}: the server has no such valgrind thread "
                f"(threads seen: {seen})"
            )
        return replace(self._window_count(counts), unsettled=tuple(self._unsettled))

    # ------------------------------------------------------------ lifetime

    def alive(self) -> bool:
        return self.child.poll() is None

    def left_behind(self) -> str | None:
        return self.child.left_behind

    def stop(self) -> int:
        # a whole life (or a warm-up counted from exec) is read from the final profile
        whole = self._starts_instrumented
        return self.child.stop(grace_s=STOP_GRACE_S if whole else WINDOWS_STOP_GRACE_S)

    def lifetime_count(self) -> WindowCount:
        """After `stop()`: the instructions of the whole life of every process."""
        counts, _ = self._collect()
        if not counts:
            why = self.failure() or "callgrind wrote no profile"
            raise RunFailedError(why)
        lost = self._lost()
        if lost:
            raise RunFailedError(lost)
        return self._window_count(counts)

    def failure(self) -> str | None:
        """valgrind's own complaint in any process's log (an assertion, a tool error, a
        profile it could not write), with the remedy where one is known; else the crash
        of a process of the server, quoted from its log."""
        logs = sorted(self.out.glob(f"{LOG_STEM}.*"))
        for log in logs:
            why = valgrind_problem(log)
            if why:
                return why
        # else a process's own crash under valgrind, with where it happened
        return next((why for log in logs if (why := guest_crash(log))), None)

    def cleanup(self) -> None:
        """valgrind's logs (and with --keep-profiles the profiles) move to run_dir; the
        scratch folder goes, FIFOs of processes killed hard with it."""
        if not self.out.exists():
            return
        for f in self.out.iterdir():
            keep = _LOG_NAME.fullmatch(f.name) or (
                self.keep_profiles and _PROFILE_NAME.fullmatch(f.name)
            )
            if keep:
                with contextlib.suppress(OSError):
                    shutil.move(str(f), self.run_dir / f.name)
        shutil.rmtree(self.out, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Running: not exited, and not a zombie that has not been reaped yet."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _last_line(done: procs.Completed) -> str:
    text = (done.stderr + done.stdout).decode("utf-8", "replace").strip().splitlines()
    lines = [t for t in text if not t.startswith("sending command")]
    return lines[-1][:200] if lines else procs.describe_exit(done.returncode)
