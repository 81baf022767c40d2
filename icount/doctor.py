"""What works on this machine for icount, and why: the facts behind `icount doctor`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from icount import environment, procs
from icount.cpus import format_cpu_list


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def checks() -> list[Check]:
    from icount.backends import callgrind, perf

    out: list[Check] = []
    vg = callgrind.valgrind_path()
    out.append(
        Check(
            "valgrind",
            vg is not None,
            callgrind.valgrind_version() if vg else f"not installed ({callgrind.INSTALL_HINT})",
        )
    )
    vgdb = procs.which("vgdb")  # icount serve opens and closes its windows through vgdb
    out.append(Check("vgdb", vgdb is not None, vgdb or "not installed (comes with valgrind)"))
    p = perf.counter_probe()
    pv = perf.perf_version() if perf.perf_path() else "not installed"
    out.append(Check("perf stat instructions:u", p.usable, f"{pv}: {p.why}"))
    paranoid = perf.paranoid_level()
    out.append(
        Check(
            "perf_event_paranoid",
            paranoid is not None and (paranoid <= 2 or os.geteuid() == 0),
            f"{paranoid} (running as {'root' if os.geteuid() == 0 else 'uid ' + str(os.geteuid())})"
            if paranoid is not None
            else "unreadable",
        )
    )
    prefix, aslr = environment.aslr_wrapper()
    out.append(Check("setarch -R (ASLR off)", bool(prefix), aslr))
    try:
        ptrace = Path("/proc/sys/kernel/yama/ptrace_scope").read_text().strip()
        out.append(
            Check(
                "ptrace (vgdb reaches idle servers)",
                ptrace in ("0", "1") or os.geteuid() == 0,
                f"kernel.yama.ptrace_scope={ptrace}",
            )
        )
    except OSError:
        out.append(Check("ptrace (vgdb reaches idle servers)", True, "no Yama restrictions"))
    cpus = sorted(os.sched_getaffinity(0))
    out.append(
        Check(
            "CPUs icount may pin to",
            len(cpus) >= 2,
            f"{format_cpu_list(cpus)} ({len(cpus)}; serve wants 2+: server and load apart)",
        )
    )
    load1, load5, _ = os.getloadavg()
    out.append(
        Check("load average", load1 < len(cpus), f"{load1:.2f} (1 min), {load5:.2f} (5 min)")
    )
    out.append(Check("glibc", True, environment.glibc_version()))
    cpu = environment.cpu_fingerprint()
    out.append(Check("CPU", True, f"{cpu['cpu_vendor']} {cpu['cpu_model']}"))
    return out


def auto_backend() -> str:
    from icount.backends import choose
    from icount.errors import IcountError

    try:
        c = choose("auto")
    except IcountError as e:
        return f"none: {e}"
    return f"{c.backend}: {c.why}"
