"""CPU sets for `icount serve`: the server on some CPUs, the load generator on others.

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
        try:
            first = int(lo)
            last = int(hi) if sep else first
        except ValueError:
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


@contextlib.contextmanager
def pinned_self(cpus: Sequence[int]) -> Iterator[None]:
    """Pin icount's own process (the built-in client runs in it) and restore after."""
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
