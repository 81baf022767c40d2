"""What works on this machine for icount, and why: the facts behind `icount doctor`.

Each registered backend says what it needs (`icount.backends.checks`); the rest is what
every backend's counts depend on: ASLR, the CPUs and their load, the C library.
"""

from __future__ import annotations

import os

from icount import backends, environment
from icount.backends import Check
from icount.cpus import format_cpu_list

__all__ = ["Check", "auto_backend", "checks"]


def checks() -> list[Check]:
    return [*backends.checks(), *_machine()]


def _machine() -> list[Check]:
    prefix, aslr = environment.aslr_wrapper()
    cpus = sorted(os.sched_getaffinity(0))
    load1, load5, _ = os.getloadavg()
    cpu = environment.cpu_fingerprint()
    return [
        Check("setarch -R (ASLR off)", bool(prefix), aslr),
        Check(
            "CPUs icount may pin to",
            len(cpus) >= 2,
            f"{format_cpu_list(cpus)} ({len(cpus)}; serve wants 2+: server and load apart)",
        ),
        Check("load average", load1 < len(cpus), f"{load1:.2f} (1 min), {load5:.2f} (5 min)"),
        Check("glibc", True, environment.glibc_version()),
        Check(
            "CPU",
            True,
            f"{cpu['cpu_vendor']} {cpu['cpu_model']} (the host's: programs run on it under "
            "perf; under callgrind they see the CPU valgrind presents)",
        ),
    ]


def auto_backend() -> str:
    from icount.errors import IcountError

    try:
        c = backends.choose("auto")
    except IcountError as e:
        return f"none: {e}"
    return f"{c.backend}: {c.why}"
