"""The CPUID probe agrees with a compiled C program that reads CPUID, run directly, under
valgrind --tool=none (as the probe runs) and under callgrind (as measured programs run);
and the callgrind backend records what it read while perf records none of it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from icount import backends, environment, guest_cpu, procs

pytestmark = pytest.mark.slow

READER = r"""
#include <cpuid.h>
#include <stdio.h>

static const unsigned leaves[][2] = { %s };

int main(void) {
    unsigned a, b, c, d, lo = 0, hi = 0;
    for (unsigned i = 0; i < sizeof leaves / sizeof leaves[0]; i++) {
        __cpuid_count(leaves[i][0], leaves[i][1], a, b, c, d);
        printf("%%x %%x %%x %%x %%x %%x\n", leaves[i][0], leaves[i][1], a, b, c, d);
    }
    __cpuid(1, a, b, c, d);
    if (c & (1u << 27))
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    printf("xcr0 %%x %%x\n", lo, hi);
    return 0;
}
"""


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if guest_cpu.unavailable():
        pytest.skip(guest_cpu.unavailable() or "")
    if shutil.which("gcc") is None or shutil.which("valgrind") is None:
        pytest.skip("needs gcc and valgrind")
    folder = tmp_path_factory.mktemp("cpuid")
    table = ", ".join(f"{{{leaf:#x}, {sub}}}" for leaf, sub in guest_cpu.LEAVES)
    (folder / "cpuid.c").write_text(READER % table)
    exe = folder / "cpuid"
    done = procs.run(["gcc", "-O1", "-o", str(exe), str(folder / "cpuid.c")], timeout=120)
    assert done.ok, done.stderr.decode()
    return exe


def _read(argv: list[str]) -> guest_cpu.GuestCpu:
    done = procs.run(argv, timeout=120)
    assert done.ok, done.stderr.decode()
    regs: dict[tuple[int, int], tuple[int, int, int, int]] = {}
    xcr0 = None
    for line in done.stdout.decode().splitlines():
        words = line.split()
        if words[0] == "xcr0":
            xcr0 = int(words[2], 16) << 32 | int(words[1], 16)
            continue
        leaf, sub, a, b, c, d = (int(w, 16) for w in words)
        regs[(leaf, sub)] = (a, b, c, d)
    assert xcr0 is not None and list(regs) == list(guest_cpu.LEAVES)
    return guest_cpu.GuestCpu(regs, xcr0)


def _same(probed: guest_cpu.GuestCpu | guest_cpu.Unknown, read: guest_cpu.GuestCpu) -> None:
    assert isinstance(probed, guest_cpu.GuestCpu), probed
    assert probed.fingerprint() == read.fingerprint()


def test_run_directly_the_probe_reads_what_a_c_program_reads(reader: Path) -> None:
    _same(guest_cpu.probe(None), _read([str(reader)]))


def test_under_valgrind_the_probe_reads_what_a_c_program_reads(reader: Path) -> None:
    valgrind = procs.require("valgrind", "apt-get install valgrind")
    probed = guest_cpu.probe(valgrind)
    _same(probed, _read([valgrind, "--tool=none", "-q", str(reader)]))
    # what --tool=none presents is what a program measured under callgrind reads
    under_callgrind = _read(
        [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", "-q", str(reader)]
    )
    _same(probed, under_callgrind)


def test_callgrind_records_the_guest_cpu_and_perf_the_host_only(reader: Path) -> None:
    callgrind = backends.fingerprint(backends.create("callgrind"), "command")
    probed = guest_cpu.probe(procs.require("valgrind", "apt-get install valgrind"))
    assert isinstance(probed, guest_cpu.GuestCpu)
    for key, value in probed.fingerprint().items():
        assert callgrind[key] == value
    host = environment.cpu_fingerprint()
    assert {k: callgrind[k] for k in host} == host  # the host's is still recorded
    if shutil.which("perf") is None:
        return
    perf = backends.fingerprint(backends.create("perf"), "command")
    assert not any(k.startswith("guest_cpu") for k in perf)
    assert {k: perf[k] for k in host} == host
