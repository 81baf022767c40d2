"""Running commands under valgrind's callgrind and reading what it counted.

A whole command is run with `--trace-children=yes` and one profile per process
(`%p`), so a wrapper script or a forked worker is counted too; the command's count
is the sum of the `Ir` totals of every profile it left.
"""

from __future__ import annotations

import functools
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from icount import environment, procs
from icount.backends import Counted
from icount.errors import ParseError, RunFailedError

INSTALL_HINT = "run scripts/setup.sh or apt-get install valgrind"


def valgrind_path() -> str | None:
    return procs.which("valgrind")


def require_valgrind() -> str:
    return procs.require("valgrind", INSTALL_HINT)


@functools.cache
def valgrind_version() -> str:
    out = procs.capture([require_valgrind(), "--version"]) or ""
    match = re.search(r"valgrind-([\w.\-]+)", out)
    return f"valgrind {match.group(1)}" if match else "valgrind (unknown version)"


def callgrind_args(
    out_file: Path, log_file: Path, *, trace_children: bool = True, extra: Sequence[str] = ()
) -> list[str]:
    """The valgrind options icount runs callgrind with; recorded in the fingerprint."""
    return [
        "--tool=callgrind",
        *(["--trace-children=yes"] if trace_children else []),
        f"--callgrind-out-file={out_file}",
        f"--log-file={log_file}",
        *extra,
    ]


def fingerprint_args(extra: Sequence[str] = ()) -> list[str]:
    """The same options with run-specific paths masked, for the fingerprint."""
    return [
        "valgrind",
        *callgrind_args(Path("<out>/callgrind.out.%p"), Path("<out>/valgrind.log"), extra=extra),
    ]


def count_command(
    argv: Sequence[str],
    run_dir: Path,
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout: float | None,
    extra_args: Sequence[str] = (),
) -> Counted:
    """Run `argv` under callgrind once; outputs go to files in `run_dir`."""
    valgrind = require_valgrind()
    run_dir.mkdir(parents=True, exist_ok=True)
    prefix, _ = environment.aslr_wrapper()
    full = [
        *prefix,
        valgrind,
        *callgrind_args(run_dir / "callgrind.out.%p", run_dir / "valgrind.log", extra=extra_args),
        *argv,
    ]
    done = procs.run(
        full,
        env=env,
        cwd=cwd,
        timeout=timeout,
        stdout=run_dir / "stdout",
        stderr=run_dir / "stderr",
    )
    profiles = sorted(run_dir.glob("callgrind.out.*"))
    total, problem = _sum_profiles(profiles)
    if done.timed_out:
        problem = f"timed out after {timeout:g} s"
    elif not profiles:
        problem = valgrind_failure(run_dir / "valgrind.log") or "callgrind wrote no profile"
    value = total if problem is None else None
    return Counted(value, done.returncode, done.timed_out, problem, {"processes": len(profiles)})


def read_ir(path: Path) -> int:
    """Total `Ir` of one callgrind file (ParseError when it is not a profile)."""
    from icount.callgrind.parser import parse_file

    prof = parse_file(path)
    if "Ir" not in prof.totals:
        raise ParseError("callgrind profile has no Ir event", source=str(path))
    return prof.totals["Ir"]


def _sum_profiles(profiles: Sequence[Path]) -> tuple[int | None, str | None]:

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

    Raises ToolMissingError when the command cannot be launched and RunFailedError
    when it fails, with the reason.
    """
    valgrind = require_valgrind()
    out_file.parent.mkdir(parents=True, exist_ok=True)
    workdir = cwd or environment.make_workdir()
    run_env = environment.clean_env(workdir, env)
    exe = procs.resolve_command(argv[0])
    prefix, _ = environment.aslr_wrapper()
    log = out_file.with_name(out_file.name + ".log")
    full = [
        *prefix,
        valgrind,
        *callgrind_args(out_file, log, trace_children=False, extra=extra_args),
        exe,
        *argv[1:],
    ]
    try:
        done = procs.run(full, env=run_env, cwd=workdir, timeout=timeout)
    finally:
        if cwd is None:
            shutil.rmtree(workdir, ignore_errors=True)
    if done.timed_out:
        raise RunFailedError(f"{argv[0]} timed out after {timeout:g} s under callgrind")
    if done.returncode != 0:
        why = valgrind_failure(log) or procs.describe_exit(done.returncode)
        raise RunFailedError(f"{argv[0]} under callgrind: {why}")
    if not out_file.exists():
        raise RunFailedError(f"callgrind wrote no profile for {argv[0]}")
    return out_file
