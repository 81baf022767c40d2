"""The deterministic environment measured programs run in, the fingerprint of what
moves instruction counts, and the provenance kept apart from the numbers.

Counts move with: the backend and its version, the CPU the program sees (glibc picks
memcpy/strlen variants by CPU flags through ifunc, a JIT its instructions), glibc, the
CPUs and memory a runtime sizes its threads and heaps by, ASLR, the size of the
environment and the working directory (stack alignment), and hash seeds. The first group
is recorded in the fingerprint and checked by `icount compare`; the rest is pinned here.

Under perf the program runs on the host's CPU. Under valgrind it sees the CPU valgrind
presents (`guest_cpu.py` reads it), so two hosts with other CPU models that present the
same guest CPU count alike: there the guest's fields are checked, not the host's.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import os
import platform
import socket
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from icount import __version__, procs
from icount.errors import UsageError
from icount.text import printable

# Fields of every fingerprint that change instruction counts: compare refuses to
# compare results that differ in any of them (the host's CPU fields unless both
# fingerprints hold the guest's: `cpu_fields`).
COUNT_MOVING_FIELDS = (
    "backend",
    "tool_version",
    "arch",
    "cpu_vendor",
    "cpu_model",
    "cpu_flags",
    "glibc",
)
HOST_CPU_FIELDS = ("cpu_vendor", "cpu_model", "cpu_flags")
# the CPU valgrind presents (guest_cpu.GuestCpu.fingerprint), checked in place of the host's
GUEST_CPU_FIELDS = ("guest_cpu_vendor", "guest_cpu_model", "guest_cpu_flags", "guest_cpuid")
# Backends whose program sees the CPU the tool presents, not the host's.
GUEST_CPU_BACKENDS = frozenset({"callgrind"})
# What a runtime may size itself by, as icount saw it (not the CPU set a server or a
# job was pinned to): information, not checked. A C program's counts do not follow
# it, and GitHub's runners of one label differ in it (4 vCPU public, 2 private); a
# difference is a warning (machine_warnings).
MACHINE_FIELDS = ("cpus", "memory_gib")

# Why a field that differs moves counts: compare says so beside each difference.
_GUEST_WHY = "glibc's string functions and a JIT's code follow the CPU valgrind presents"
_HOST_WHY = (
    "the program runs on the host's CPU: glibc's string functions and a JIT's code follow it"
)
# a callgrind file without the guest's CPU: what the host's stood for
_HOST_UNDER_VALGRIND = (
    "valgrind presents a CPU it chooses by the host's, and glibc's string functions and a "
    "JIT's code follow that"
)
FIELD_WHY = {
    "backend": "callgrind and perf count differently (valgrind replaces the mem* routines)",
    "tool_version": "another version instruments differently and, for valgrind, may "
    "present another CPU",
    "arch": "another instruction set runs other code",
    "cpu_vendor": _HOST_WHY,
    "cpu_model": _HOST_WHY,
    "cpu_flags": _HOST_WHY,
    "guest_cpu_vendor": _GUEST_WHY,
    "guest_cpu_model": _GUEST_WHY,
    "guest_cpu_flags": _GUEST_WHY,
    "guest_cpuid": _GUEST_WHY,
    "glibc": "the C library's own code is counted and picks the variants",
    "cpus": "a runtime sizes its threads by the CPUs it may use (Go's GOMAXPROCS, the "
    "JVM's GC threads)",
    "memory_gib": "a runtime sizes its heap by the memory it sees (the JVM's default "
    "heap is a quarter of it)",
    "backend_argv": "the backend ran with other arguments",
}

# CPU flags glibc's ifunc resolvers and the dynamic loader look at (string, memory
# and math routines). Other flags do not change which code runs in libc.
IFUNC_FLAGS = frozenset(
    {
        "sse2",
        "ssse3",
        "sse4_1",
        "sse4_2",
        "avx",
        "avx2",
        "avx512f",
        "avx512bw",
        "avx512cd",
        "avx512dq",
        "avx512er",
        "avx512vl",
        "avx512_vbmi2",
        "avx_vnni",
        "bmi1",
        "bmi2",
        "lzcnt",
        "popcnt",
        "movbe",
        "erms",
        "fsrm",
        "fma",
        "fma4",
        "rtm",
        "xsave",
        "xsavec",
        "f16c",
        "cmov",
        "sha_ni",
    }
)

FIXED_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
WORKDIR_PREFIX = "icount-"  # then 8 characters: every work dir has the same length
# what the work dirs made in this thread are named after (session/scheduler.py: the cell)
_WORK_DIR_KEY: contextvars.ContextVar[str] = contextvars.ContextVar("work_dir_key", default="")


def parse_env_assignments(items: Sequence[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--env takes KEY=VALUE, got {item!r}")
        env[key] = value
    problem = exec_problem((), env)
    if problem is not None:
        raise UsageError(f"--env: {problem}")
    return env


def exec_problem(argv: Sequence[str], env: Mapping[str, str]) -> str | None:
    """Why the kernel cannot be given this command line and environment (a NUL byte
    ends a C string; an environment name holding '=' cannot be told from its value),
    or None. Asked before launching, so the mistake is one line naming the item, not
    a ValueError from exec."""
    for i, arg in enumerate(argv):
        if "\0" in arg:
            return f"argument {i} {arg!r} holds a NUL byte"
    for key, value in env.items():
        if not key or "=" in key or "\0" in key:
            return f"environment name {key!r} is empty or holds '=' or a NUL byte"
        if "\0" in value:
            return f"environment variable {key!r} has a value holding a NUL byte"
    return None


def absolute_file_args(args: Sequence[str], base: Path) -> list[str]:
    """Arguments naming existing files relative to `base`, made absolute.

    Measured programs run in another directory, so a relative file argument is
    resolved where the user typed it. Options and absolute paths are left alone.
    """
    return [
        str(base / a)
        if a and not a.startswith("-") and not Path(a).is_absolute() and (base / a).exists()
        else a
        for a in args
    ]


FIXED_BIN = "bin"  # WORKDIR/bin/NAME: where a build's program runs from


def fixed_program(argv: Sequence[str], workdir: Path) -> list[str]:
    """`argv` with its program run as WORKDIR/bin/NAME, a symbolic link to it, so that two
    builds in two folders differ only in their code: the program's path is in its argv
    and its auxv (AT_EXECFN), and the same C binary from a 24-letter-longer folder
    counted 21 instructions more under callgrind. A link, not a copy: the kernel maps the
    file itself, so /proc/self/exe, $ORIGIN and the object names in profiles still name
    the build. A program that is itself a link (a venv's python, /usr/bin/java) runs as
    given: its link's place is how it finds its prefix or environment."""
    program = Path(argv[0])
    if not program.is_absolute() or program.is_symlink() or not program.is_file():
        return list(argv)
    link = workdir / FIXED_BIN / program.name  # the work dir is fresh: nothing there yet
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(program)
    return [str(link), *argv[1:]]


def clean_env(workdir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A fixed, minimal environment; `extra` (from --env) is added last."""
    env = {
        "PATH": FIXED_PATH,
        "HOME": str(workdir),
        "LANG": "C",
        "LC_ALL": "C",
        "PYTHONHASHSEED": "0",
        "TZ": "UTC",
    }
    if extra:
        env.update(extra)
    return env


MAX_NAME_CHARS = 128
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")


def safe_name(name: str) -> str:
    """A command's, target's or path's name as one directory name inside an artifacts
    folder, one-to-one: `a b`, `a_b`, `x+y` and `x_y` get folders of their own, or their
    profiles and builds would mix. ASCII letters, digits, `-`, `_` and `.` stay; every
    other byte of the UTF-8 name becomes `+XX` (hex), `+` included, and so does a leading
    `.` (no `.`, `..` or hidden folder). Not `%`: valgrind expands `%p` in file names."""
    out = []
    for i, ch in enumerate(name):
        if ch in _NAME_CHARS and not (i == 0 and ch == "."):
            out.append(ch)
        else:
            out.extend(f"+{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
    text = "".join(out) or "+"  # the empty name, which no caller lets through
    if len(text) > MAX_NAME_CHARS:  # a folder name has at most 255 bytes
        # `+-` follows no escape, so a shortened name is never another's full one
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
        text = f"{text[: MAX_NAME_CHARS - 66]}+-{digest}"
    return text


@contextlib.contextmanager
def work_dirs_named(key: str) -> Iterator[None]:
    """Work dirs made in this thread meanwhile are named after `key` (a cell)."""
    token = _WORK_DIR_KEY.set(key)
    try:
        yield
    finally:
        _WORK_DIR_KEY.reset(token)


def work_dir_name(key: str, attempt: int = 0) -> str:
    """`icount-` and 8 hex digits from `key`: one name, one length, for every run of a
    cell whichever job runs it; `attempt` 1, 2... when that name is taken."""
    text = key if attempt == 0 else f"{key}\0{attempt}"
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{WORKDIR_PREFIX}{digest[:8]}"


def make_workdir(key: str | None = None) -> Path:
    """A fresh, empty working directory whose path is the same from run to run where it
    can be: /tmp/icount-XXXXXXXX named after `key` (by default what `work_dirs_named`
    set: the cell being measured), the next name when another process holds it (mkdir
    is atomic). Its length never changes (stack alignment), and nor, mostly, does its
    name: Python hashes it (it is HOME, and on sys.path for `python -c`), and with
    random names its counts moved by up to ~900 instructions from run to run; with
    names by job slot, --jobs 2 counted differently from --jobs 1."""
    key = _WORK_DIR_KEY.get() if key is None else key
    for attempt in range(10_000):
        path = Path("/tmp") / work_dir_name(key, attempt)
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue
        return path
    return Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX, dir="/tmp"))  # 10,000 taken


@functools.cache
def aslr_wrapper() -> tuple[list[str], str]:
    """(argv prefix that turns ASLR off, what was recorded about ASLR)."""
    setarch = procs.which("setarch")
    if setarch is None:
        return [], "on (setarch not installed)"
    done = procs.run([setarch, "-R", "true"], timeout=10)
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return (
            [],
            f"on (setarch -R not permitted: {why[-1] if why else 'exit ' + str(done.returncode)})",
        )
    return [setarch, "-R"], "off (setarch -R)"


def _cpuinfo() -> dict[str, str]:
    info: dict[str, str] = {}
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return info
    for line in text.splitlines():
        if not line.strip():
            break  # the first processor is enough
        k, _, v = line.partition(":")
        info[k.strip()] = v.strip()
    return info


@functools.cache
def glibc_version() -> str:
    name, version = platform.libc_ver()
    return f"{name} {version}".strip() or "unknown"


def cpu_fingerprint() -> dict[str, Any]:
    info = _cpuinfo()
    flags = sorted(set(info.get("flags", "").split()) & IFUNC_FLAGS)
    return {
        "cpu_vendor": info.get("vendor_id", platform.processor() or "unknown"),
        "cpu_model": " ".join(
            [
                info.get("model name", "unknown"),
                f"family {info.get('cpu family', '?')}",
                f"model {info.get('model', '?')}",
            ]
        ),
        "cpu_flags": flags,
    }


GIB = 1 << 30


def _cgroup_dir() -> Path | None:
    """This process's cgroup v2 folder, where its CPU and memory limits are."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            return Path("/sys/fs/cgroup") / line[3:].lstrip("/")
    return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _meminfo_total() -> int | None:
    for line in (_read(Path("/proc/meminfo")) or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def machine_fingerprint() -> dict[str, Any]:
    """The CPUs and memory a runtime sizes its threads and heaps by, as a program started
    here sees them: the CPUs it may run on, and the memory, each within this cgroup's
    limits (the JVM and Go read both). Memory in whole GiB: MemTotal moves by a few MiB
    between machines of one size, and a runtime's sizes do not follow that."""
    cgroup = _cgroup_dir()
    cpus = len(os.sched_getaffinity(0))
    memory = _meminfo_total()
    if cgroup is not None:
        quota, _, period = (_read(cgroup / "cpu.max") or "max").partition(" ")
        if quota.isdigit() and period.isdigit() and int(period):
            cpus = min(cpus, max(1, -(-int(quota) // int(period))))
        limit = _read(cgroup / "memory.max") or "max"
        if limit.isdigit() and (memory is None or int(limit) < memory):
            memory = int(limit)
    return {"cpus": cpus, "memory_gib": None if memory is None else round(memory / GIB)}


def fingerprint(
    backend: str,
    tool_version: str,
    backend_argv: Sequence[str],
    guest: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What moves counts on this machine. No timestamps, no host names. `guest`: the
    CPU the backend presents to the program, where it is not the host's (callgrind)."""
    _, aslr = aslr_wrapper()
    return {
        "backend": backend,
        "tool_version": tool_version,
        "backend_argv": list(backend_argv),
        "arch": platform.machine(),
        **cpu_fingerprint(),
        **(guest or {}),
        "glibc": glibc_version(),
        **machine_fingerprint(),
        "kernel": platform.release(),
        "aslr": aslr,
        "env_policy": f"cleared; PATH={FIXED_PATH}; LC_ALL=C; PYTHONHASHSEED=0; TZ=UTC",
        "icount_version": __version__,
    }


def has_guest_cpu(fp: Mapping[str, Any]) -> bool:
    return all(f in fp for f in GUEST_CPU_FIELDS)


def cpu_fields(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[str, ...]:
    """The fields that say which CPU two fingerprints' programs ran on: the guest's
    where both were measured by one backend whose program sees the CPU it presents
    (callgrind) and both hold it; else the host's (perf, and files older than the
    guest fingerprint). Compare, --resume, history noise and shard merging use it."""
    backend = a.get("backend")
    guest = (
        backend == b.get("backend")
        and backend in GUEST_CPU_BACKENDS
        and has_guest_cpu(a)
        and has_guest_cpu(b)
    )
    return GUEST_CPU_FIELDS if guest else HOST_CPU_FIELDS


def checked_fields(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[str, ...]:
    """The fields compare checks between two fingerprints (cpu_fields for the CPU)."""
    return ("backend", "tool_version", "arch", *cpu_fields(a, b), "glibc")


def machine_warnings(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """One line per MACHINE_FIELDS field both fingerprints hold and differ in: what a
    runtime that sizes itself by it (Go, the JVM) may count differently."""
    return [
        f"{f}: base {a[f]!r} vs new {b[f]!r} — {FIELD_WHY[f]}; compared anyway: a C "
        "program's counts do not follow it"
        for f in MACHINE_FIELDS
        if f in a and f in b and a[f] != b[f]
    ]


def fingerprint_differences(
    a: Mapping[str, Any], b: Mapping[str, Any], *, same_method: bool = False
) -> list[str]:
    """The count-moving fields in which two fingerprints differ. `same_method` also
    requires the same backend arguments: cells that share one file or table must have
    been measured the same way (compare only needs comparable counts)."""
    fields = checked_fields(a, b)
    fields = (*fields, "backend_argv") if same_method else fields
    return [f for f in fields if a.get(f) != b.get(f)]


def why_differs(field: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    """Why a difference in `field` between fingerprints `a` (base) and `b` (new) moves
    counts; for the host's CPU under callgrind, also why the host's was checked."""
    why = FIELD_WHY.get(field, "it moves counts")
    if field not in HOST_CPU_FIELDS:
        return why
    older = [side for side, fp in (("base", a), ("new", b)) if _predates_guest(fp)]
    notes = [
        f"the {side} file's guest CPU is {fp['guest_cpu']}"
        for side, fp in (("base", a), ("new", b))
        if fp.get("backend") == "callgrind" and "guest_cpu" in fp
    ]
    if len(older) == 2:
        notes.insert(0, "both files predate the guest CPU fingerprint")
    elif older:
        notes.insert(0, f"the {older[0]} file predates the guest CPU fingerprint")
    if not notes:
        return why
    return f"{_HOST_UNDER_VALGRIND} ({' and '.join(notes)}, so the host's CPU is checked)"


def _predates_guest(fp: Mapping[str, Any]) -> bool:
    """A callgrind fingerprint written before the guest's CPU was recorded."""
    return fp.get("backend") == "callgrind" and not has_guest_cpu(fp) and "guest_cpu" not in fp


# ---------------------------------------------------------------- provenance


def _cpu_times() -> tuple[int, int] | None:
    """(total jiffies, steal jiffies) from /proc/stat."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if first[0] != "cpu":
        return None
    values = [int(v) for v in first[1:]]
    steal = values[7] if len(values) > 7 else 0
    return sum(values[:8]), steal


class ProvenanceRecorder:
    """Load before and after, steal during: the machine's state over a measurement."""

    def __init__(self, argv: Sequence[str], measured_dir: Path | None = None) -> None:
        self.argv = list(argv)
        self.measured_dir = measured_dir
        self.started = datetime.now(UTC)
        self.load_before = os.getloadavg()[0]
        self._cpu0 = _cpu_times()
        self._t0 = time.monotonic()

    def finish(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        cpu1 = _cpu_times()
        steal_pct: float | None = None
        if self._cpu0 and cpu1 and cpu1[0] > self._cpu0[0]:
            steal_pct = round(100.0 * (cpu1[1] - self._cpu0[1]) / (cpu1[0] - self._cpu0[0]), 3)
        prov: dict[str, Any] = {
            "format": "icount-provenance",
            "version": 1,
            "icount_argv": self.argv,
            "icount_version": __version__,
            "started_utc": self.started.isoformat(timespec="seconds"),
            "wall_s": round(time.monotonic() - self._t0, 3),
            "host": socket.gethostname(),
            "kernel": platform.release(),
            "load1_before": round(self.load_before, 2),
            "load1_after": round(os.getloadavg()[0], 2),
            "steal_pct": steal_pct,
            "cpus_allowed": sorted(os.sched_getaffinity(0)),
            **git_state(self.measured_dir or Path.cwd()),
        }
        prov.update(extra or {})
        return prov


# The modified files a provenance names: enough to say why a tree was dirty.
DIRTY_RECORDED = 10
GIT_TIMEOUT_S = 10


def git_state(directory: Path) -> dict[str, Any]:
    """The provenance's `commit`: HEAD, `-dirty` added when a tracked file differs from
    it (staged or not), None outside a checkout; when dirty, `dirty`: how many files and
    the first few by name. Untracked files mark nothing: they are in no commit, and a CI
    workspace always holds some (icount's own checkout, a restored cache, the results
    being written). When `git status` fails or times out the commit is `-dirty` too,
    `dirty` saying why (`count` None)."""
    if procs.which("git") is None:
        return {"commit": None}
    done = procs.run(["git", "-C", str(directory), "rev-parse", "HEAD"], timeout=GIT_TIMEOUT_S)
    if done.returncode != 0:
        return {"commit": None}
    commit = done.stdout.decode().strip()
    status = procs.run(
        ["git", "-C", str(directory), "status", "--porcelain", "-z", "--untracked-files=no"],
        timeout=GIT_TIMEOUT_S,
    )
    if not status.ok:  # a tree git could not read may hold changes: never the clean commit
        return {"commit": commit + "-dirty", "dirty": {"count": None, "error": _failed(status)}}
    files = _porcelain_paths(status.stdout)
    if not files:
        return {"commit": commit}
    return {
        "commit": commit + "-dirty",
        "dirty": {"count": len(files), "files": sorted(files)[:DIRTY_RECORDED]},
    }


def _porcelain_paths(out: bytes) -> list[str]:
    """The paths of `git status --porcelain -z`: `XY PATH`, a rename's or copy's
    source following it as a field of its own."""
    fields = iter(out.split(b"\0"))
    paths = []
    for field in fields:
        if len(field) < 4:
            continue
        paths.append(field[3:].decode(errors="replace"))
        if field[:1] in (b"R", b"C") or field[1:2] in (b"R", b"C"):  # staged or in the tree
            next(fields, None)
    return paths


def _failed(done: procs.Completed) -> str:
    """Why `git status` gave no answer: 'git status timed out after 10 s', or its exit
    status and last stderr line."""
    if done.timed_out:
        return f"git status timed out after {GIT_TIMEOUT_S} s"
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    last = f": {printable(lines[-1][:200])}" if lines else ""
    return f"git status exited {done.returncode}{last}"
