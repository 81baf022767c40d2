"""The CPUID probe: the ELF it writes, what it decodes, and what it reads natively.

The .hex fixtures are the probe's real output on this project's AMD EPYC VM, run
directly and under valgrind 3.19.0 (fixtures/guest_cpu/README.md)."""

from __future__ import annotations

import platform
import struct
import tempfile
from pathlib import Path

import pytest

from icount import environment, guest_cpu

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "guest_cpu"


def _recorded(name: str) -> guest_cpu.GuestCpu:
    return guest_cpu.decode(bytes.fromhex((FIXTURES / name).read_text()))


def test_the_probe_is_a_static_x86_64_executable_of_one_segment() -> None:
    exe = guest_cpu.program()
    assert exe[:4] == b"\x7fELF" and exe[4] == 2 and exe[5] == 1  # 64-bit, little-endian
    e_type, machine = struct.unpack_from("<HH", exe, 16)
    entry, phoff = struct.unpack_from("<QQ", exe, 24)
    assert (e_type, machine, phoff) == (2, 0x3E, 64)  # ET_EXEC, x86-64
    p_type, p_flags, offset, vaddr, _, filesz, memsz = struct.unpack_from("<IIQQQQQ", exe, 64)
    assert (p_type, p_flags, offset, filesz, memsz) == (1, 5, 0, len(exe), len(exe))
    assert entry == vaddr + 120  # the code follows the two headers
    # the leaf table closes the file, and the code's first lea points at it
    table = b"".join(struct.pack("<II", *key) for key in guest_cpu.LEAVES)
    assert exe.endswith(table)
    (disp,) = struct.unpack_from("<i", exe, 120 + 3)
    assert 120 + 7 + disp == len(exe) - len(table)


def test_valgrind_presents_an_intel_cpu_on_an_amd_host() -> None:
    guest = _recorded("valgrind-3.19.0-on-amd-epyc.hex")
    host = _recorded("amd-epyc-native.hex")
    assert host.vendor == "AuthenticAMD"
    assert host.model == "AMD EPYC family 25 model 17"
    assert guest.vendor == "GenuineIntel"
    assert guest.model == "Intel(R) Core(TM) i7-4910MQ CPU @ 2.90GHz family 6 model 60"
    assert guest.reg(7, 0, "ebx") == 0x000427AA
    assert "7.0 eax=00000000 ebx=000427aa ecx=00000000 edx=00000000" in guest.words
    # glibc would pick AVX2 string functions in both, but no AVX-512 ones under valgrind
    assert "avx2" in guest.flags and "avx512f" not in guest.flags
    assert "avx512f" in host.flags
    assert set(guest.flags) <= environment.IFUNC_FLAGS
    assert guest.xcr0 == 0x7  # x87, SSE, AVX state: no AVX-512 state under valgrind
    fp = guest.fingerprint()
    assert set(fp) == set(environment.GUEST_CPU_FIELDS)
    assert fp["guest_cpu_flags"] == sorted(fp["guest_cpu_flags"])


def test_leaves_beyond_the_highest_read_as_zero() -> None:
    guest = _recorded("valgrind-3.19.0-on-amd-epyc.hex")
    assert guest.registers[(0, 0)][0] == 0xD  # valgrind's CPU stops at leaf 0xd
    raw = dict(guest.registers)
    raw[(0, 0)] = (0x4, *raw[(0, 0)][1:])  # a CPU whose highest leaf is 4: no leaf 7
    lower = guest_cpu.GuestCpu(raw, guest.xcr0)
    assert lower.reg(7, 0, "ebx") == 0 and "avx2" not in lower.flags
    assert lower.vendor == guest.vendor  # leaf 0 itself is always there


def test_the_apic_id_is_masked_out() -> None:
    # two CPUs of one machine differ in leaf 1 ebx's top byte only: one fingerprint
    host = _recorded("amd-epyc-native.hex")
    raw = dict(host.registers)
    a, b, c, d = raw[(1, 0)]
    raw[(1, 0)] = (a, b ^ 0x05000000, c, d)
    assert guest_cpu.GuestCpu(raw, host.xcr0).words == host.words


def test_output_of_another_length_is_refused() -> None:
    out = bytes.fromhex((FIXTURES / "amd-epyc-native.hex").read_text())
    with pytest.raises(ValueError, match="wrote 100 bytes, not 280"):
        guest_cpu.decode(out[:100])


def test_other_architectures_say_the_probe_is_not_available(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    found = guest_cpu.probe("/usr/bin/valgrind")
    assert found == guest_cpu.Unknown(
        "the CPU probe is not available on aarch64 (it runs CPUID, an x86-64 instruction)"
    )
    assert found.fingerprint() == {"guest_cpu": f"unknown: {found.why}"}


def test_a_valgrind_that_is_not_there_is_unknown(tmp_path: Path) -> None:
    if guest_cpu.unavailable():
        pytest.skip(guest_cpu.unavailable() or "")
    found = guest_cpu.probe(str(tmp_path / "valgrind"))
    assert isinstance(found, guest_cpu.Unknown) and "No such file" in found.why


def test_a_valgrind_that_fails_is_unknown_with_its_words(tmp_path: Path) -> None:
    if guest_cpu.unavailable():
        pytest.skip(guest_cpu.unavailable() or "")
    fake = tmp_path / "valgrind"
    fake.write_text("#!/bin/sh\necho 'valgrind: fatal: cannot run here' >&2\nexit 1\n")
    fake.chmod(0o755)
    found = guest_cpu.probe(str(fake))
    assert found == guest_cpu.Unknown(
        "the CPUID probe exited with status 1: valgrind: fatal: cannot run here"
    )


def test_a_reason_names_the_probe_not_its_random_temporary_path(tmp_path: Path) -> None:
    fake = tmp_path / "valgrind"
    fake.write_text('#!/bin/sh\necho "valgrind: cannot run $3" >&2\nexit 1\n')
    fake.chmod(0o755)
    found = guest_cpu._probe(str(fake), "stamp")
    assert found == guest_cpu.Unknown(
        "the CPUID probe exited with status 1: valgrind: cannot run cpuid"
    )


def test_valgrind_lib_is_not_part_of_the_probes_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe runs valgrind in a cleared environment, as a measurement does: the
    variable reaches neither, so it must not key the probe either."""
    if guest_cpu.unavailable():
        pytest.skip(guest_cpu.unavailable() or "")
    keys: list[object] = []
    monkeypatch.setattr(guest_cpu, "_probe", lambda valgrind, stamp: keys.append(stamp))
    fake = tmp_path / "valgrind"
    fake.write_text("")
    for lib in ("/opt/a", "/opt/b"):
        monkeypatch.setenv("VALGRIND_LIB", lib)
        guest_cpu.probe(str(fake))
    assert len(keys) == 2 and keys[0] == keys[1]


def test_run_directly_the_probe_reads_the_host_cpu_linux_shows() -> None:
    if guest_cpu.unavailable():
        pytest.skip(guest_cpu.unavailable() or "")
    found = guest_cpu.probe(None)
    assert isinstance(found, guest_cpu.GuestCpu)
    host = environment.cpu_fingerprint()
    assert found.vendor == host["cpu_vendor"]
    # /proc/cpuinfo's model name is the brand string; family and model as Linux counts
    assert found.model == host["cpu_model"]


def test_doctor_shows_the_cpu_valgrind_presents(monkeypatch: pytest.MonkeyPatch) -> None:
    from icount import doctor
    from icount.backends import callgrind

    guest = _recorded("valgrind-3.19.0-on-amd-epyc.hex")
    monkeypatch.setattr(callgrind, "valgrind_path", lambda: "/usr/bin/valgrind")
    monkeypatch.setattr(guest_cpu, "probe", lambda valgrind: guest)
    shown = {c.name: c.detail for c in doctor.checks()}
    assert shown["CPU valgrind presents"] == (
        "GenuineIntel Intel(R) Core(TM) i7-4910MQ CPU @ 2.90GHz family 6 model 60; flags avx "
        "avx2 bmi1 bmi2 cmov erms f16c fma lzcnt movbe popcnt sse2 sse4_1 sse4_2 ssse3 xsave"
    )
    assert shown["CPU"].endswith(
        "(the host's: programs run on it under perf; under callgrind "
        "they see the CPU valgrind presents)"
    )
    unknown = guest_cpu.Unknown(
        "the CPU probe is not available on aarch64 (it runs CPUID, an x86-64 instruction)"
    )
    monkeypatch.setattr(guest_cpu, "probe", lambda valgrind: unknown)
    shown = {c.name: c.detail for c in doctor.checks()}
    assert shown["CPU valgrind presents"] == f"unknown: {unknown.why}"


def test_no_folder_to_write_the_probe_in_is_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if guest_cpu.unavailable():
        pytest.skip(guest_cpu.unavailable() or "")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "absent"))
    guest_cpu._probe.cache_clear()
    found = guest_cpu.probe(None)
    guest_cpu._probe.cache_clear()
    assert isinstance(found, guest_cpu.Unknown)
    assert found.why.startswith("the CPUID probe could not be written: ")
