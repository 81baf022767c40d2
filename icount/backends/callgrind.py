"""The callgrind backend: running commands and servers under valgrind's callgrind.

A whole command is run with `--trace-children=yes` and one profile per process
(`%p`), so a wrapper script or a forked worker is counted too; the command's count
is the sum of the `Ir` totals of every profile it left. Servers are counted in
windows between profile dumps (`callgrind_server.py`). Every valgrind argument icount
uses is built here, by `valgrind_options`, and recorded in the fingerprint.
"""

from __future__ import annotations

import functools
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from icount import environment, procs
from icount.backends.protocol import (
    ArgvKind,
    BackendOptions,
    Counted,
    Probe,
    ServeDefaults,
    Server,
)
from icount.errors import ParseError, RunFailedError, UsageError
from icount.results.details import WINDOW_DUMPS

NAME = "callgrind"
# The leanest request path measured (c-epoll, C, one read and one write) costs ~850
# instructions; a window that counts under 100 per request counted something else.
INSTRUCTION_FLOOR = 100.0
INSTALL_HINT = "run scripts/setup.sh or apt-get install valgrind"
SERVE_DEFAULTS = ServeDefaults(
    warmup=100,
    requests=1000,
    client_timeout_s=120.0,
    instrumented=True,
    window=WINDOW_DUMPS,
    window_why="vgdb reaches the idle server (ptrace allowed): windows between dumps",
)
PROFILE_GLOB = "callgrind.out*"


def valgrind_path() -> str | None:
    return procs.which("valgrind")


def require_valgrind() -> str:
    return procs.require("valgrind", INSTALL_HINT)


@functools.cache
def valgrind_version() -> str:
    out = procs.capture([require_valgrind(), "--version"]) or ""
    match = re.search(r"valgrind-([\w.\-]+)", out)
    return f"valgrind {match.group(1)}" if match else "valgrind (unknown version)"


# A forked child inherits the profile its parent gathered since its last dump (callgrind's
# manual, "Forking Programs"): summed with the parent's, those instructions would count
# twice. A dump when the parent enters fork() leaves nothing to inherit, and the dump
# is one more file of the parent's. glibc >= 2.34's fork() calls _Fork(); older ones
# name it __libc_fork.
FORK_FUNCTIONS = ("fork", "_Fork", "__libc_fork")


def valgrind_options(
    out_file: Path,
    log_file: Path,
    *,
    trace_children: bool,
    vgdb_prefix: Path | None = None,
    separate_threads: bool = False,
    instrumented_at_start: bool = True,
) -> list[str]:
    """The valgrind options icount runs callgrind with (and records in the fingerprint).

    `out_file` and `log_file` take `%p` for one file per process when `trace_children`;
    `vgdb_prefix` enables vgdb (servers), with its FIFOs under that prefix rather than
    in /tmp; without it vgdb is off, and a killed process leaves no FIFOs behind.
    """
    return [
        "--tool=callgrind",
        *(["--trace-children=yes"] if trace_children else []),
        *([f"--dump-before={f}" for f in FORK_FUNCTIONS] if trace_children else []),
        f"--callgrind-out-file={out_file}",
        f"--log-file={log_file}",
        *([f"--vgdb-prefix={vgdb_prefix}", "--vgdb=yes"] if vgdb_prefix else ["--vgdb=no"]),
        *(["--separate-threads=yes"] if separate_threads else []),
        # off until the first window: vgdb `instrumentation on` switches it (warm-up
        # requests run ~5x faster; the guest executes the same instructions either way)
        *([] if instrumented_at_start else ["--instr-atstart=no"]),
    ]


def probe() -> Probe:
    if valgrind_path() is None:
        return Probe(False, "valgrind not found on PATH", hint=INSTALL_HINT)
    return Probe(True, f"{valgrind_version()} counts every instruction (slowly)")


def create(options: BackendOptions) -> CallgrindBackend:
    if options.event is not None:
        raise UsageError("callgrind counts instructions (Ir) only; events are a perf setting")
    return CallgrindBackend(
        thread=options.thread,
        root_only=options.processes == "root",
        keep_profiles=options.keep_profiles,
        warmup_instrumented=options.warmup_instrumented,
    )


class CallgrindBackend:
    name = NAME
    serve_defaults = SERVE_DEFAULTS
    instruction_floor = INSTRUCTION_FLOOR

    def __init__(
        self,
        *,
        thread: int | None = None,
        root_only: bool = False,
        keep_profiles: bool = False,
        warmup_instrumented: bool = False,
    ) -> None:
        self.warmup_instrumented = warmup_instrumented
        self.thread = thread
        self.root_only = root_only or thread is not None  # a thread of the started process
        self.keep_profiles = keep_profiles

    def probe(self) -> Probe:
        return probe()

    def version(self) -> str:
        return valgrind_version()

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
                separate_threads=self.thread is not None,
                instrumented_at_start=self.warmup_instrumented,
            )
        return ["valgrind", *opts]

    def cell_params(self) -> dict[str, object]:
        return {"thread": self.thread, "processes": "root" if self.root_only else "all"}

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
            problem = problem or _uncounted(run_dir, profiles)
        finally:
            if not self.keep_profiles:
                for f in run_dir.glob(PROFILE_GLOB):
                    f.unlink()
        if done.timed_out:
            problem = f"timed out after {timeout:g} s"
        elif done.leftovers:
            problem = left_running(done.leftovers)
        value = total if problem is None else None
        # callgrind.out.PID and its dumps (callgrind.out.PID.N, made before each fork)
        pids = {p.name.split(".")[2] for p in profiles if p.name.count(".") >= 2}
        return Counted(value, done.returncode, done.timed_out, problem, len(pids))

    def server_problem(self, argv: Sequence[str]) -> str | None:
        if _is_script(argv[0]):
            # valgrind runs the #! interpreter, and whatever that execs (env, a version
            # manager's shim) runs on unmeasured: the windows would find no valgrind.
            return (
                f"cannot measure {argv[0]} under callgrind: it is a #! script; start the "
                "server's binary itself (e.g. the interpreter with the script as argument)"
            )
        return None

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

        return CallgrindServer(
            argv,
            run_dir,
            env=env,
            cwd=cwd,
            cpus=cpus,
            thread=self.thread,
            root_only=self.root_only,
            keep_profiles=self.keep_profiles,
            instrumented=whole_life or self.warmup_instrumented,
        )


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


def left_running(leftovers: str) -> str:
    return (
        f"the command left processes running when it exited: {leftovers}; icount stopped "
        "them, and a count that misses their work is no count (wait for children)"
    )


def _is_script(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


def read_ir(path: Path) -> int:
    """Total `Ir` of one callgrind file (ParseError when it is not a profile)."""
    return read_functions(path)[0]


def read_functions(path: Path) -> tuple[int, dict[str, int]]:
    """(total `Ir`, self `Ir` by function name) of one callgrind file."""
    from icount.callgrind.parser import parse_file

    prof = parse_file(path)
    if "Ir" not in prof.totals:
        raise ParseError("callgrind profile has no Ir event", source=str(path))
    column = prof.self_cost[:, prof.event_index("Ir")]
    by_name: dict[str, int] = {}
    for fn, cost in zip(prof.functions, column.tolist(), strict=True):
        if cost:
            by_name[fn.name] = by_name.get(fn.name, 0) + int(cost)
    return prof.totals["Ir"], by_name


def sum_profiles(profiles: Sequence[Path]) -> tuple[int | None, str | None]:
    """(total Ir of every profile, None) or (None, why not)."""
    total = 0
    for p in profiles:
        if p.stat().st_size == 0:
            # callgrind writes the profile when the process ends; empty means the process
            # was killed first, which happens to a child still running when the command exits.
            return None, (
                f"{p.name}: a process the command started was still running when the command "
                "exited, and was stopped before callgrind wrote its profile (wait for children)"
            )
        try:
            total += read_ir(p)
        except ParseError as e:
            return None, f"unreadable callgrind profile: {e}"
    return total, None


# valgrind's own failures, from its log: (what it says, what is wrong, the remedy or None)
_PROBLEMS = (
    (
        re.compile(r"callgrind: threads\.c:\d+ .*Assertion.*failed"),
        "callgrind asserted while handling a signal",
        "Go programs need GODEBUG=asyncpreemptoff=1 under valgrind: add it to the "
        "adapter's [env] or pass --env GODEBUG=asyncpreemptoff=1",
    ),
    (re.compile(r"Assertion .* failed"), "valgrind asserted", None),
    (re.compile(r"the 'impossible' happened"), "valgrind crashed", None),
    (
        re.compile(r"can ?not open cache simulation output file"),
        "a process could not write its callgrind profile",
        "a process that changed its user cannot write into the run folder",
    ),
    (re.compile(r"out of memory", re.IGNORECASE), "valgrind ran out of memory", None),
    (re.compile(r"Fatal error at startup"), "valgrind could not start the program", None),
)


def valgrind_problem(log: Path) -> str | None:
    """An assertion, a crash or a tool error in one valgrind log, quoted, with the
    remedy where one is known; None when the log shows none."""
    try:
        with open(log, "rb") as f:
            text = f.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return None
    for line in text.splitlines():
        said = re.sub(r"^==\d+==\s*", "", line).strip()
        for pattern, what, remedy in _PROBLEMS:
            if pattern.search(said):
                quoted = said if len(said) <= 160 else said[:157] + "..."
                tail = f"; {remedy}" if remedy else ""
                return f"{what} ({log.name}: {quoted!r}){tail}"
    return None


def valgrind_failure(log: Path) -> str | None:
    """valgrind's own complaint (e.g. a missing command), from its log."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        text = re.sub(r"^==\d+==\s*", "", line).strip()
        if text.startswith("valgrind:") or "cannot execute" in text or "No such file" in text:
            return text
    return None


def record_profile(
    argv: Sequence[str],
    out_file: Path,
    *,
    cwd: Path | None = None,
    extra_args: Sequence[str] = (),
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
) -> Path:
    """Profile one process (no child tracing) into `out_file`, in icount's fixed environment.

    Raises LaunchError when the command cannot be launched and RunFailedError when it
    fails, with the reason, its exit status and valgrind's log.
    """
    valgrind = require_valgrind()
    out_file.parent.mkdir(parents=True, exist_ok=True)
    workdir = cwd or environment.make_workdir()
    run_env = environment.clean_env(workdir, env)
    exe = procs.resolve_command(argv[0])
    prefix, _ = environment.aslr_wrapper()
    log = out_file.with_name(out_file.name + ".log")
    opts = valgrind_options(out_file, log, trace_children=False)
    try:
        done = procs.run([*prefix, valgrind, *opts, *extra_args, exe, *argv[1:]],
                         env=run_env, cwd=workdir, timeout=timeout)  # fmt: skip
    finally:
        if cwd is None:
            shutil.rmtree(workdir, ignore_errors=True)
    if done.timed_out:
        raise RunFailedError(
            f"{argv[0]} timed out after {timeout:g} s under callgrind", log=str(log)
        )
    if done.returncode != 0:
        why = valgrind_failure(log) or procs.describe_exit(done.returncode)
        raise RunFailedError(
            f"{argv[0]} under callgrind: {why}", returncode=done.returncode, log=str(log)
        )
    if not out_file.exists():
        raise RunFailedError(f"callgrind wrote no profile for {argv[0]}", log=str(log))
    return out_file
