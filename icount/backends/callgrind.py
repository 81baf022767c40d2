"""The callgrind backend: running commands and servers under valgrind's callgrind.

A whole command is run with `--trace-children=yes` and one profile per process
(`%p`), so a wrapper script or a forked worker is counted too; the command's count
is the sum of the `Ir` totals of every profile it left. Servers are counted in
windows between profile dumps (`callgrind_server.py`). `icount inline` records the
profiles of a command's every process here too (`record_profiles`). The valgrind
arguments are built in `valgrind.py` and recorded in the fingerprint.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icount import environment, procs
from icount.backends.callgrind_reader import read_command
from icount.backends.protocol import (
    INSTRUCTION_FLOOR,
    ArgvKind,
    Check,
    Counted,
    Probe,
    ProcessMode,
    Registration,
    ServeDefaults,
    Server,
    left_running,
)
from icount.backends.valgrind import (
    INSTALL_HINT,
    read_ir,
    require_valgrind,
    valgrind_failure,
    valgrind_options,
    valgrind_path,
    valgrind_problem,
    valgrind_version,
)
from icount.errors import ParseError, RunFailedError, UsageError
from icount.runtimes import check_pattern
from icount.window_profile import PROFILE_TOP

NAME = "callgrind"
SERVE_DEFAULTS = ServeDefaults(
    warmup=100,
    requests=1000,
    client_timeout_s=120.0,
    window="dump",  # as results files name it (results.details.WINDOW_DUMPS)
    window_why="vgdb reaches the idle server (ptrace allowed): windows between dumps",
)
PROFILE_GLOB = "callgrind.out*"
MAX_PROFILE_TOP = 100_000  # a function table that size is a whole program's


def probe() -> Probe:
    if valgrind_path() is None:
        return Probe(False, "valgrind not found on PATH", hint=INSTALL_HINT)
    return Probe(True, f"{valgrind_version()} counts every instruction (slowly)")


@dataclass(frozen=True)
class CallgrindOptions:
    """The settings the callgrind backend takes (`Registration.options`)."""

    thread: int | None = None  # count only this valgrind thread of the started process
    processes: ProcessMode = "all"
    keep_profiles: bool = False  # keep the profile files
    warmup_instrumented: bool = False  # warm up instrumented (the old, slow way)
    # --collector: regular expressions of collector entry points (icount/runtimes.py)
    collector: tuple[str, ...] = ()
    profile_top: int = PROFILE_TOP  # functions each cell's profile keeps (0: no profile)

    def __post_init__(self) -> None:
        if not 0 <= self.profile_top <= MAX_PROFILE_TOP:
            raise UsageError(
                f"--profile-top takes 0 to {MAX_PROFILE_TOP} functions, got {self.profile_top}"
            )
        if self.thread is not None and self.thread < 1:
            raise UsageError(f"--thread takes a valgrind thread number from 1, got {self.thread}")
        for pattern in self.collector:
            why = check_pattern(pattern)
            if why:
                raise UsageError(why)

    @property
    def root_only(self) -> bool:
        """Only the started process counts (a thread of it is in it)."""
        return self.processes == "root" or self.thread is not None


def checks() -> list[Check]:
    """What callgrind needs here: valgrind, vgdb and ptrace (vgdb reaches idle servers)."""
    vg = valgrind_path()
    vgdb = procs.which("vgdb")  # icount serve opens and closes its windows through vgdb
    out = [
        Check(
            "valgrind",
            vg is not None,
            valgrind_version() if vg else f"not installed ({INSTALL_HINT})",
        ),
        Check("vgdb", vgdb is not None, vgdb or "not installed (comes with valgrind)"),
    ]
    if vg is not None:  # what a program reads of the CPU under valgrind: not the host's
        from icount import guest_cpu

        out.append(Check("CPU valgrind presents", True, guest_cpu.describe(guest_cpu.probe(vg))))
    name = "ptrace (vgdb reaches idle servers)"
    try:
        ptrace = Path("/proc/sys/kernel/yama/ptrace_scope").read_text().strip()
    except OSError:
        return [*out, Check(name, True, "no Yama restrictions")]
    ok = ptrace in ("0", "1") or os.geteuid() == 0
    return [*out, Check(name, ok, f"kernel.yama.ptrace_scope={ptrace}")]


class CallgrindBackend:
    """Counts commands and servers (`protocol.Backend`) with its settings."""

    name = NAME
    serve_defaults = SERVE_DEFAULTS
    instrumented = True  # under valgrind's simulator (~50x slower)
    instruction_floor = INSTRUCTION_FLOOR

    def __init__(self, options: CallgrindOptions | None = None) -> None:
        self.options = options or CallgrindOptions()

    def version(self) -> str:
        return valgrind_version()

    def guest_cpu(self) -> dict[str, Any]:
        """The CPU valgrind presents to the program, which it reads in place of the
        host's (`guest_cpu.py`): the fingerprint's guest fields."""
        from icount import guest_cpu

        return guest_cpu.probe(require_valgrind()).fingerprint()

    def fingerprint_argv(self, kind: ArgvKind) -> list[str]:
        if kind == "command":
            opts = valgrind_options(
                Path("<out>/callgrind.out.%p"), Path("<out>/valgrind.log.%p"), trace_children=True
            )
        else:
            opts = valgrind_options(
                Path("<run>/callgrind.out.%p"),
                Path("<run>/valgrind.log.%p"),
                trace_children=True,
                vgdb_prefix=Path("<run>/vgdb"),
                separate_threads=self.options.thread is not None,
                instrumented_at_start=self.options.warmup_instrumented,
            )
        return ["valgrind", *opts]

    def cell_params(self) -> dict[str, object]:
        params: dict[str, object] = {
            "thread": self.options.thread,
            "processes": "root" if self.options.root_only else "all",
        }
        if self.options.collector:  # absent otherwise: cells measured before read the same
            params["collectors"] = list(self.options.collector)
        return params

    def count_command(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        timeout: float | None,
    ) -> Counted:
        """Run `argv` under callgrind once; outputs go to files in `run_dir`."""
        valgrind = require_valgrind()
        run_dir.mkdir(parents=True, exist_ok=True)
        # Profiles an earlier run left here (--keep-profiles, then --force) would be
        # summed with this run's: the directory must hold this run's only.
        for stale in run_dir.glob(PROFILE_GLOB):
            stale.unlink()
        for stale_log in run_dir.glob("valgrind.log*"):
            stale_log.unlink()
        prefix, _ = environment.aslr_wrapper()
        opts = valgrind_options(
            run_dir / "callgrind.out.%p", run_dir / "valgrind.log.%p", trace_children=True
        )
        try:
            done = procs.run(
                [*prefix, valgrind, *opts, *argv],
                env=env,
                cwd=cwd,
                timeout=timeout,
                stdout=run_dir / "stdout",
                stderr=run_dir / "stderr",
            )
            profiles = sorted(run_dir.glob(PROFILE_GLOB))
            total, problem = sum_profiles(profiles)
            # valgrind's own complaint first: it says why a profile is empty or cut short
            logs = sorted(run_dir.glob("valgrind.log.*"))
            said = next((w for log in logs if (w := valgrind_problem(log))), None)
            problem = said or problem or _uncounted(run_dir, profiles)
            profile = None
            top = self.options.profile_top
            if problem is None and top:  # parsed again: rarely worth a second
                profile = read_command(profiles, top)[1]
        finally:
            if not self.options.keep_profiles:
                for f in run_dir.glob(PROFILE_GLOB):
                    f.unlink()
        if done.timed_out:
            problem = f"timed out after {timeout:g} s"
        elif done.leftovers:
            problem = left_running(done.leftovers)
        value = total if problem is None else None
        # callgrind.out.PID and its dumps (callgrind.out.PID.N, made before each fork)
        pids = {p.name.split(".")[2] for p in profiles if p.name.count(".") >= 2}
        return Counted(value, done.returncode, done.timed_out, problem, len(pids), profile)

    def server_problem(self, argv: Sequence[str]) -> str | None:
        # valgrind runs the #! interpreter, and whatever that execs (env, a version
        # manager's shim) runs on unmeasured: the windows would find no valgrind.
        why = procs.launcher_problem(argv)
        return f"cannot measure {argv[0]} under callgrind: {why}" if why else None

    def start_server(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        cpus: Sequence[int],
        whole_life: bool = False,
    ) -> Server:
        from icount.backends.callgrind_server import CallgrindServer

        o = self.options
        return CallgrindServer(
            argv,
            run_dir,
            env=env,
            cwd=cwd,
            cpus=cpus,
            thread=o.thread,
            root_only=o.root_only,
            keep_profiles=o.keep_profiles,
            instrumented=whole_life or o.warmup_instrumented,
            collectors=o.collector,
            profile_top=o.profile_top,
        )


BACKEND = Registration(CallgrindOptions, CallgrindBackend, probe, checks)


def _uncounted(run_dir: Path, profiles: Sequence[Path]) -> str | None:
    """Why the profiles of a command's run are not all of its work, from the one log
    valgrind wrote per process: a tool error, no profile at all, or processes whose
    log has no profile beside it."""
    logs = sorted(run_dir.glob("valgrind.log.*"))
    said = next((w for log in logs if (w := valgrind_problem(log))), None)
    if said:
        return said
    if not profiles:
        launch = next((w for log in logs if (w := valgrind_failure(log))), None)
        return launch or "callgrind wrote no profile"
    pids = [log.name.split(".")[2] for log in logs]
    unprofiled = [pid for pid in pids if not (run_dir / f"callgrind.out.{pid}").exists()]
    if unprofiled:
        return (
            f"{len(pids)} processes ran under callgrind but {len(unprofiled)} (pid "
            f"{', '.join(unprofiled)}) wrote no profile: their instructions are missing"
        )
    return None


def _pid_and_dump(profile: Path) -> tuple[int, int]:
    """callgrind.out.PID.N (its Nth dump, made before a fork) before callgrind.out.PID
    (written at exit), processes by pid."""
    parts = [int(n) if n.isdigit() else -1 for n in profile.name.split(".")[2:4]]
    pid, dump = [*parts, -1][:2]
    return pid, dump if dump >= 0 else sys.maxsize


def _killed_early(profile: Path) -> str:
    # callgrind writes the profile when the process ends; empty means the process was
    # killed first, which happens to a child still running when the command exits.
    return (
        f"{profile.name}: a process the command started was still running when the command "
        "exited, and was stopped before callgrind wrote its profile (wait for children)"
    )


def sum_profiles(profiles: Sequence[Path]) -> tuple[int | None, str | None]:
    """(total Ir of every profile, None) or (None, why not)."""
    total = 0
    for p in profiles:
        if p.stat().st_size == 0:
            return None, _killed_early(p)
        try:
            total += read_ir(p)
        except ParseError as e:
            return None, f"unreadable callgrind profile: {e}"
    return total, None


def record_profiles(
    argv: Sequence[str],
    out_dir: Path,
    *,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
) -> list[Path]:
    """Profile a command and every process it starts, as `count_command` counts them,
    in icount's fixed environment: the profiles it left in `out_dir` (callgrind.out.PID
    per process and the dumps made before each fork), which together are its work.

    Raises LaunchError when the command cannot be launched and RunFailedError when it
    fails or a process's work is missing, with the reason and its exit status.
    """
    valgrind = require_valgrind()
    out_dir.mkdir(parents=True, exist_ok=True)
    workdir = environment.make_workdir()
    exe = procs.resolve_command(argv[0])
    prefix, _ = environment.aslr_wrapper()
    opts = valgrind_options(
        out_dir / "callgrind.out.%p", out_dir / "valgrind.log.%p", trace_children=True
    )
    try:
        exe, *args = environment.fixed_program([exe, *argv[1:]], workdir)
        done = procs.run([*prefix, valgrind, *opts, exe, *args],
                         env=environment.clean_env(workdir, env), cwd=workdir,
                         timeout=timeout)  # fmt: skip
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    profiles = sorted(out_dir.glob(PROFILE_GLOB), key=_pid_and_dump)
    if done.timed_out:
        raise RunFailedError(f"{argv[0]} timed out after {timeout:g} s under callgrind")
    if done.returncode != 0:
        logs = sorted(out_dir.glob("valgrind.log.*"))
        said = next((w for log in logs if (w := valgrind_failure(log))), None)
        raise RunFailedError(
            f"{argv[0]} under callgrind: {said or procs.describe_exit(done.returncode)}",
            returncode=done.returncode,
        )
    empty = next((p for p in profiles if p.stat().st_size == 0), None)
    problem = (
        (left_running(done.leftovers) if done.leftovers else None)
        or (_killed_early(empty) if empty else None)
        or _uncounted(out_dir, profiles)
    )
    if problem:
        raise RunFailedError(f"{argv[0]} under callgrind: {problem}")
    return profiles
