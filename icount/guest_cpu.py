"""The CPU a measured program sees, read by a tiny program that executes CPUID.

Under valgrind the program never sees the host's CPU: VEX answers CPUID with a CPU of
its own (on an AMD EPYC host, valgrind 3.19 presents an "Intel(R) Core(TM) i7-4910MQ"),
so glibc's ifunc resolvers and a JIT pick their code by that CPU, not by the host's.
What the program sees is therefore read the way the program reads it: a static x86-64
ELF, written here from bytes (no compiler needed), executes CPUID for the leaves glibc
reads (and XGETBV when the OS enables it), writes the registers to stdout and exits.
Run under `valgrind --tool=none` it reports the guest's CPU; run directly, the host's.

Only x86-64 has the probe: elsewhere the answer is `Unknown`, with the reason.
"""

from __future__ import annotations

import functools
import os
import platform
import struct
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icount import procs
from icount.errors import LaunchError

# (leaf, subleaf) in the order the probe asks them. 0: vendor and the highest basic leaf;
# 1, 7, 0xd, 0x80000001: the feature bits glibc's ifunc resolvers and a JIT test; 2, 4,
# 0x80000006: the caches glibc sizes memcpy's thresholds by; 0x80000002-4: the brand.
LEAVES: tuple[tuple[int, int], ...] = (
    (0x0, 0),
    (0x1, 0),
    (0x2, 0),
    (0x4, 0),
    (0x4, 1),
    (0x4, 2),
    (0x4, 3),
    (0x7, 0),
    (0x7, 1),
    (0xD, 0),
    (0xD, 1),
    (0x80000000, 0),
    (0x80000001, 0),
    (0x80000002, 0),
    (0x80000003, 0),
    (0x80000004, 0),
    (0x80000006, 0),
)
_BRAND = ((0x80000002, 0), (0x80000003, 0), (0x80000004, 0))
_REGS = ("eax", "ebx", "ecx", "edx")

# The flags of environment.IFUNC_FLAGS, as Linux names them in /proc/cpuinfo:
# (leaf, subleaf, register, bit). `lzcnt` is AMD's ABM bit.
FLAG_BITS: dict[str, tuple[int, int, str, int]] = {
    "cmov": (0x1, 0, "edx", 15),
    "sse2": (0x1, 0, "edx", 26),
    "ssse3": (0x1, 0, "ecx", 9),
    "fma": (0x1, 0, "ecx", 12),
    "sse4_1": (0x1, 0, "ecx", 19),
    "sse4_2": (0x1, 0, "ecx", 20),
    "movbe": (0x1, 0, "ecx", 22),
    "popcnt": (0x1, 0, "ecx", 23),
    "xsave": (0x1, 0, "ecx", 26),
    "avx": (0x1, 0, "ecx", 28),
    "f16c": (0x1, 0, "ecx", 29),
    "bmi1": (0x7, 0, "ebx", 3),
    "avx2": (0x7, 0, "ebx", 5),
    "bmi2": (0x7, 0, "ebx", 8),
    "erms": (0x7, 0, "ebx", 9),
    "rtm": (0x7, 0, "ebx", 11),
    "avx512f": (0x7, 0, "ebx", 16),
    "avx512dq": (0x7, 0, "ebx", 17),
    "avx512er": (0x7, 0, "ebx", 27),
    "avx512cd": (0x7, 0, "ebx", 28),
    "sha_ni": (0x7, 0, "ebx", 29),
    "avx512bw": (0x7, 0, "ebx", 30),
    "avx512vl": (0x7, 0, "ebx", 31),
    "avx512_vbmi2": (0x7, 0, "ecx", 6),
    "fsrm": (0x7, 0, "edx", 4),
    "avx_vnni": (0x7, 1, "eax", 4),
    "xsavec": (0xD, 1, "eax", 1),
    "lzcnt": (0x80000001, 0, "ecx", 5),
    "fma4": (0x80000001, 0, "ecx", 16),
}

_BASE = 0x400000  # where the probe's one segment is loaded
_HEADERS = 64 + 56  # the ELF header and its one program header
_OSXSAVE_BIT = 27  # leaf 1 ecx: the OS enabled XSAVE, so XGETBV may run
_APIC_ID_MASK = 0x00FFFFFF  # leaf 1 ebx bits 31-24: the CPU the probe ran on


def _code(entries: int, table_at: int) -> bytes:
    """The probe's instructions; `table_at` is the table's offset from the code's start.
    Each register store is 16 bytes per leaf on the stack, then XCR0 (8 bytes), then one
    write(1, ...) and exit(0). Encodings checked with objdump."""
    parts = [
        b"\x4c\x8d\x0d" + struct.pack("<i", table_at - 7),  # lea r9, [rip+table]
        b"\x41\xba" + struct.pack("<I", entries),  # mov r10d, entries
        b"\x48\x81\xec\x00\x10\x00\x00",  # sub rsp, 0x1000
        b"\x49\x89\xe0",  # mov r8, rsp          (the buffer)
        b"\x4d\x89\xc3",  # mov r11, r8          (where the next store goes)
        # loop:
        b"\x41\x8b\x01",  # mov eax, [r9]
        b"\x41\x8b\x49\x04",  # mov ecx, [r9+4]
        b"\x0f\xa2",  # cpuid
        b"\x41\x89\x03",  # mov [r11], eax
        b"\x41\x89\x5b\x04",  # mov [r11+4], ebx
        b"\x41\x89\x4b\x08",  # mov [r11+8], ecx
        b"\x41\x89\x53\x0c",  # mov [r11+12], edx
        b"\x49\x83\xc1\x08",  # add r9, 8
        b"\x49\x83\xc3\x10",  # add r11, 16
        b"\x41\xff\xca",  # dec r10d
        b"\x75\xdb",  # jnz loop
        b"\xb8\x01\x00\x00\x00",  # mov eax, 1
        b"\x31\xc9",  # xor ecx, ecx
        b"\x0f\xa2",  # cpuid
        b"\x31\xc0",  # xor eax, eax
        b"\x31\xd2",  # xor edx, edx
        b"\x0f\xba\xe1" + bytes([_OSXSAVE_BIT]),  # bt ecx, 27
        b"\x73\x05",  # jnc store (XGETBV faults where the OS has not enabled XSAVE)
        b"\x31\xc9",  # xor ecx, ecx
        b"\x0f\x01\xd0",  # xgetbv
        # store:
        b"\x41\x89\x03",  # mov [r11], eax
        b"\x41\x89\x53\x04",  # mov [r11+4], edx
        b"\x49\x83\xc3\x08",  # add r11, 8
        b"\xb8\x01\x00\x00\x00",  # mov eax, 1 (write)
        b"\xbf\x01\x00\x00\x00",  # mov edi, 1
        b"\x4c\x89\xc6",  # mov rsi, r8
        b"\x4c\x89\xda",  # mov rdx, r11
        b"\x4c\x29\xc2",  # sub rdx, r8
        b"\x0f\x05",  # syscall
        b"\xb8\x3c\x00\x00\x00",  # mov eax, 60 (exit)
        b"\x31\xff",  # xor edi, edi
        b"\x0f\x05",  # syscall
    ]
    return b"".join(parts)


CODE_BYTES = len(_code(0, 0))


def program(leaves: Sequence[tuple[int, int]] = LEAVES) -> bytes:
    """The probe: a static x86-64 ELF executable of one read-and-execute segment."""
    table = b"".join(struct.pack("<II", leaf, sub) for leaf, sub in leaves)
    code = _code(len(leaves), CODE_BYTES)
    size = _HEADERS + len(code) + len(table)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)  # 64-bit, little-endian, SysV
    header = ident + struct.pack(
        "<HHIQQQIHHHHHH",
        2,  # ET_EXEC
        0x3E,  # EM_X86_64
        1,
        _BASE + _HEADERS,  # entry: the code follows the headers
        64,  # program headers follow the ELF header
        0,  # no section headers
        0,
        64,
        56,
        1,
        64,
        0,
        0,
    )
    segment = struct.pack(
        "<IIQQQQQQ", 1, 5, 0, _BASE, _BASE, size, size, 0x1000
    )  # PT_LOAD, R+X, the whole file at _BASE
    return header + segment + code + table


@dataclass(frozen=True)
class GuestCpu:
    """What CPUID told the probe: each leaf's registers, and XCR0 (0: no XGETBV)."""

    registers: dict[tuple[int, int], tuple[int, int, int, int]]
    xcr0: int

    def reg(self, leaf: int, sub: int, name: str) -> int:
        """A register of a leaf the CPU has (0 for a leaf beyond its highest)."""
        highest = self.registers[(leaf & 0x80000000, 0)][0]
        if leaf > highest:
            return 0
        return self.registers[(leaf, sub)][_REGS.index(name)]

    @property
    def vendor(self) -> str:
        _, b, c, d = self.registers[(0, 0)]
        return _text(struct.pack("<III", b, d, c))

    @property
    def brand(self) -> str:
        words = [self.reg(leaf, sub, r) for leaf, sub in _BRAND for r in _REGS]
        return " ".join(_text(struct.pack("<12I", *words)).split())

    @property
    def family_model(self) -> tuple[int, int]:
        """Family and model as Linux computes them for /proc/cpuinfo."""
        sig = self.reg(1, 0, "eax")
        family, model = (sig >> 8) & 0xF, (sig >> 4) & 0xF
        if family == 0xF:
            family += (sig >> 20) & 0xFF
        if family >= 6:
            model += ((sig >> 16) & 0xF) << 4
        return family, model

    @property
    def model(self) -> str:
        """As environment.cpu_fingerprint names the host's: brand, family, model."""
        family, model = self.family_model
        return f"{self.brand or 'unknown'} family {family} model {model}"

    @property
    def flags(self) -> list[str]:
        return sorted(
            name
            for name, (leaf, sub, r, bit) in FLAG_BITS.items()
            if self.reg(leaf, sub, r) >> bit & 1
        )

    @property
    def words(self) -> list[str]:
        """Every leaf that says what the CPU does (the vendor's and the brand's aside),
        one `LEAF.SUB eax=.. ebx=.. ecx=.. edx=..` each, with the APIC ID, which says only
        where the probe ran, masked out; then XCR0 and the highest leaves."""
        out = []
        for leaf, sub in LEAVES:
            if (leaf, sub) == (0, 0) or (leaf, sub) in _BRAND:
                continue
            values = [self.reg(leaf, sub, r) for r in _REGS]
            if leaf == 1:
                values[1] &= _APIC_ID_MASK
            regs = " ".join(f"{r}={v:08x}" for r, v in zip(_REGS, values, strict=True))
            out.append(f"{leaf:x}.{sub} {regs}")
        highest = (self.registers[(0, 0)][0], self.registers[(0x80000000, 0)][0])
        return [*out, f"xcr0={self.xcr0:016x}", f"highest={highest[0]:x},{highest[1]:x}"]

    def fingerprint(self) -> dict[str, Any]:
        return {
            "guest_cpu_vendor": self.vendor,
            "guest_cpu_model": self.model,
            "guest_cpu_flags": self.flags,
            "guest_cpuid": self.words,
        }


@dataclass(frozen=True)
class Unknown:
    """The probe could not say: why (another architecture, valgrind refused, ...)."""

    why: str

    def fingerprint(self) -> dict[str, Any]:
        return {"guest_cpu": f"unknown: {self.why}"}


def describe(found: GuestCpu | Unknown) -> str:
    """One line for `icount doctor`: the CPU and the ifunc flags glibc would see."""
    if isinstance(found, Unknown):
        return f"unknown: {found.why}"
    return f"{found.vendor} {found.model}; flags {' '.join(found.flags) or 'none'}"


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("ascii", "replace").strip()


def decode(out: bytes, leaves: Sequence[tuple[int, int]] = LEAVES) -> GuestCpu:
    """The probe's output read back; ValueError when it is not the probe's."""
    want = 16 * len(leaves) + 8
    if len(out) != want:
        raise ValueError(f"the probe wrote {len(out)} bytes, not {want}")
    regs = {key: struct.unpack_from("<IIII", out, 16 * i) for i, key in enumerate(leaves)}
    lo, hi = struct.unpack_from("<II", out, 16 * len(leaves))
    return GuestCpu(regs, hi << 32 | lo)


PROBE_TIMEOUT_S = 60.0


def unavailable() -> str | None:
    """Why the probe cannot run on this machine, or None."""
    arch = platform.machine()
    if arch not in ("x86_64", "AMD64"):
        return f"the CPU probe is not available on {arch} (it runs CPUID, an x86-64 instruction)"
    return None


def probe(valgrind: str | None) -> GuestCpu | Unknown:
    """The CPU a program sees under `valgrind --tool=none` (None: run directly, the
    host's as a program reads it). Once per valgrind binary and host in a process:
    valgrind's CPU follows its version and the host's CPU (it passes some host bits on)."""
    why = unavailable()
    if why is not None:
        return Unknown(why)
    if valgrind is None:
        return _probe(None, None)
    real = os.path.realpath(valgrind)
    try:
        st = os.stat(real)
    except OSError as e:
        return Unknown(f"{valgrind}: {e.strerror}")
    # The probe runs valgrind as a measurement does, in a cleared environment (no
    # VALGRIND_LIB: a measurement gets one only through --env), so the binary alone keys it
    return _probe(real, (st.st_mtime_ns, st.st_size))


@functools.cache
def _probe(valgrind: str | None, _stamp: object) -> GuestCpu | Unknown:
    exe = Path("cpuid")
    try:
        with tempfile.TemporaryDirectory(prefix="icount-cpuid-") as tmp:
            exe = Path(tmp) / "cpuid"
            exe.write_bytes(program())
            exe.chmod(0o700)
            argv = [str(exe)] if valgrind is None else [valgrind, "--tool=none", "-q", str(exe)]
            done = procs.run(argv, timeout=PROBE_TIMEOUT_S, env={"PATH": "/usr/bin:/bin"})
    except LaunchError as e:
        return Unknown(f"the CPUID probe could not start: {_without(str(e), exe)}")
    except OSError as e:  # no temporary folder to write it in
        return Unknown(f"the CPUID probe could not be written: {e}")
    if not done.ok:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        how = "timed out" if done.timed_out else procs.describe_exit(done.returncode)
        last = f": {_without(said[-1], exe)}" if said else ""
        return Unknown(f"the CPUID probe {how}{last}")
    try:
        return decode(done.stdout)
    except ValueError as e:
        return Unknown(str(e))


def _without(text: str, exe: Path) -> str:
    """`text` with the probe's random temporary path as `cpuid`: a reason that repeats."""
    return text.replace(str(exe), exe.name)
