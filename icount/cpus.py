"""CPU sets: for `icount serve` the server on some CPUs and the load generator on others,
for `icount run --jobs` the CPUs of each command, and what `doctor` shows of them.

The server and the load generator must not share a CPU: under perf the client's
work would compete with the server's, and under callgrind a shared CPU makes the
server's wall time (and so its time-driven work) depend on the client. Also what
is recorded about the CPUs: isolated CPUs and the frequency governor, where the
kernel exposes them (VMs often do not).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from icount.errors import UsageError
from icount.numparse import NumberError, parse_int

SYS_CPU = Path("/sys/devices/system/cpu")


@dataclass(frozen=True)
class CpuSplit:
    server: tuple[int, ...]
    load: tuple[int, ...]
    why: str  # how the split was chosen, for the provenance

    def to_json(self) -> dict[str, object]:
        return {"server": list(self.server), "load": list(self.load), "why": self.why}


def parse_cpu_list(text: str, flag: str) -> tuple[int, ...]:
    """'0', '0,2' or '0-3,6' -> sorted CPU numbers. UsageError names `flag` on a bad list."""
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:  # ASCII digits only: int() takes '1_0' and Unicode digits
            first = parse_int(lo, flag)
            last = parse_int(hi, flag) if sep else first
        except NumberError:
            raise UsageError(f"{flag} takes CPU numbers like 0 or 0-3,6, got {text!r}") from None
        if first < 0 or last < first or last - first > 4096:
            raise UsageError(f"{flag}: bad CPU range {part!r}")
        cpus.update(range(first, last + 1))
    if not cpus:
        raise UsageError(f"{flag} is empty", hint=f"give CPUs like {flag} 0")
    return tuple(sorted(cpus))


def format_cpu_list(cpus: Sequence[int]) -> str:
    """(0, 1, 2, 5) -> '0-2,5' (the kernel's own notation)."""
    out: list[str] = []
    ordered = sorted(set(cpus))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def allowed_cpus() -> tuple[int, ...]:
    return tuple(sorted(os.sched_getaffinity(0)))


def split(
    server: Sequence[int] | None,
    load: Sequence[int] | None,
    allowed: Sequence[int] | None = None,
) -> CpuSplit:
    """Resolve --server-cpus/--load-cpus against the CPUs this process may use.

    Defaults split the allowed CPUs in two halves (first half for the server); on
    2 CPUs that is 0 for the server and 1 for the load. With a single CPU both share
    it, which is said in `why`. Overlapping explicit sets are refused.
    """
    allow = tuple(sorted(allowed if allowed is not None else allowed_cpus()))
    for flag, chosen in (("--server-cpus", server), ("--load-cpus", load)):
        outside = sorted(set(chosen or ()) - set(allow))
        if outside:
            raise UsageError(
                f"{flag}: CPU {format_cpu_list(outside)} is not available to icount "
                f"(allowed: {format_cpu_list(allow)})"
            )
    if server and load:
        both = sorted(set(server) & set(load))
        if both:
            raise UsageError(
                f"--server-cpus and --load-cpus share CPU {format_cpu_list(both)}",
                hint="give them disjoint sets",
            )
        return CpuSplit(tuple(sorted(server)), tuple(sorted(load)), "given")
    if len(allow) == 1:
        only = allow
        return CpuSplit(only, only, "one CPU allowed: server and load share it")
    if server:
        rest = tuple(c for c in allow if c not in set(server))
        if not rest:
            raise UsageError(
                "--server-cpus takes every allowed CPU", hint="leave one for --load-cpus"
            )
        return CpuSplit(tuple(sorted(server)), rest, "server given; load on the other CPUs")
    if load:
        rest = tuple(c for c in allow if c not in set(load))
        if not rest:
            raise UsageError("--load-cpus takes every allowed CPU", hint="leave one for the server")
        return CpuSplit(rest, tuple(sorted(load)), "load given; server on the other CPUs")
    half = len(allow) // 2
    return CpuSplit(allow[:half], allow[half:], "allowed CPUs split in two halves")


@dataclass(frozen=True)
class JobCpus:
    """The CPUs of each of --jobs N cells measured at once."""

    splits: tuple[CpuSplit, ...]  # one per job
    why: str
    shared: bool  # a CPU serves more than one job

    def to_json(self) -> dict[str, object]:
        return {
            "jobs": len(self.splits),
            "cpus": [s.to_json() for s in self.splits],
            "why": self.why,
            "shared": self.shared,
        }


def _cpus_text(what: str, cpus: Sequence[int]) -> str:
    return f"{what} CPU{'s' if len(cpus) != 1 else ''} {format_cpu_list(cpus)}"


def _chunks(cpus: Sequence[int], n: int) -> list[tuple[int, ...]]:
    """`cpus` in `n` consecutive runs whose sizes differ by at most one."""
    size, extra = divmod(len(cpus), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(tuple(cpus[start:end]))
        start = end
    return out


def split_jobs(
    base: CpuSplit, jobs: int, *, explicit: bool, load_independent: bool, backend: str
) -> JobCpus:
    """CPUs for `jobs` cells at once, each with its own server and load CPUs.

    A clean split gives every job a share of the server CPUs and a share of the load
    CPUs, no CPU serving two jobs. Where there are too few CPUs for that, jobs share
    them: only a backend whose counts do not depend on what else runs (callgrind
    simulates the CPU) may do so, and then the servers are spread first (the server
    under callgrind is the busy side): on two CPUs, job 1's server on 0 and its load
    on 1, job 2's server on 1 and its load on 0. `explicit`: the sets were given
    (--server-cpus/--load-cpus), so servers stay on server CPUs and loads on load CPUs.
    """
    fmt = format_cpu_list
    if jobs == 1:
        return JobCpus((base,), "one job", False)
    server, load = base.server, base.load
    if not set(server) & set(load) and len(server) >= jobs and len(load) >= jobs:
        splits = tuple(
            CpuSplit(s, ld, f"job {j + 1} of {jobs}: a share of the server and load CPUs")
            for j, (s, ld) in enumerate(
                zip(_chunks(server, jobs), _chunks(load, jobs), strict=True)
            )
        )
        why = (
            f"{jobs} jobs on their own CPUs: server CPUs {fmt(server)} and load CPUs "
            f"{fmt(load)} each split {jobs} ways"
        )
        return JobCpus(splits, why, False)
    pool = sorted({*server, *load})
    need = (
        f"{jobs} jobs need {jobs} server and {jobs} load CPUs to have their own, and there "
        f"are {_cpus_text('server', server)} and {_cpus_text('load', load)}"
    )
    if not load_independent:
        raise UsageError(
            f"--jobs {jobs} under {backend}: {need}; {backend} counts on the real CPU, where "
            "jobs sharing a CPU would change each other's counts",
            hint="lower --jobs, or allow more CPUs (--server-cpus, --load-cpus, taskset)",
        )
    if explicit:
        pairs = [(server[j % len(server)], load[j % len(load)]) for j in range(jobs)]
    else:
        n = len(pool)
        pairs = [(pool[j % n], pool[(j + 1) % n]) for j in range(jobs)]
    splits = tuple(
        CpuSplit((s,), (ld,), f"job {j + 1} of {jobs}: CPUs shared with other jobs")
        for j, (s, ld) in enumerate(pairs)
    )
    why = (
        f"{need}: jobs share CPUs; {backend}'s counts do not depend on it, but work a server "
        "does by the clock (timers, polls) grows with the longer wall time"
    )
    return JobCpus(splits, why, True)


def command_cpus(
    allowed: Sequence[int], jobs: int, *, load_independent: bool, backend: str
) -> tuple[tuple[int, ...], ...]:
    """CPUs for `jobs` commands at once (icount run --jobs): the allowed CPUs split
    `jobs` ways, or one CPU each, shared, where there are fewer CPUs than jobs (refused
    for a backend that counts on the real CPU)."""
    allow = sorted(allowed)
    if jobs <= len(allow):
        return tuple(_chunks(allow, jobs))
    if not load_independent:
        raise UsageError(
            f"--jobs {jobs} under {backend}: {jobs} commands at once need {jobs} CPUs, and "
            f"{len(allow)} are allowed ({format_cpu_list(allow)}); {backend} counts on the real "
            "CPU, where commands sharing a CPU would change each other's counts",
            hint=f"use --jobs {len(allow)} or fewer",
        )
    return tuple((allow[j % len(allow)],) for j in range(jobs))


@contextlib.contextmanager
def pinned_self(cpus: Sequence[int]) -> Iterator[None]:
    """Pin the calling thread of icount (the built-in client runs in it; threads and
    processes it starts inherit the set) and restore after."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(cpus))
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def isolated_cpus(sys_cpu: Path = SYS_CPU) -> str | None:
    """The kernel's isolcpus list ('' when none are isolated), None when unreadable."""
    return _read(sys_cpu / "isolated")


def governors(cpus: Sequence[int], sys_cpu: Path = SYS_CPU) -> dict[str, str]:
    """cpu number -> scaling governor, for the CPUs whose cpufreq is exposed."""
    found: dict[str, str] = {}
    for cpu in cpus:
        gov = _read(sys_cpu / f"cpu{cpu}" / "cpufreq" / "scaling_governor")
        if gov is not None:
            found[str(cpu)] = gov
    return found


def provenance(split_: CpuSplit) -> dict[str, object]:
    gov = governors(sorted({*split_.server, *split_.load}))
    return {
        "cpus": split_.to_json(),
        "isolated_cpus": isolated_cpus(),
        "governor": gov or "not exposed (no cpufreq in /sys)",
    }
