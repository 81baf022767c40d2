"""Truncated, corrupt and hostile inputs: one line naming the file, exit 6 (2 if missing)."""

from __future__ import annotations

import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from icount.errors import ParseError
from icount.size import load, views
from tests.support.cli import run_icount_here

from .conftest import ROOT, Built

ELF_SHOFF, ELF_SHNUM = 0x28, 0x3C


def _elf(built: Built) -> bytearray:
    return bytearray(built.path("hello_elf").read_bytes())


def _shdr(data: bytearray, i: int) -> int:
    offset: int = struct.unpack_from("<Q", data, ELF_SHOFF)[0]
    return offset + 64 * i


def many_sections(d: bytearray) -> bytes:
    struct.pack_into("<H", d, ELF_SHNUM, 60000)
    return bytes(d)


def millions_of_sections(d: bytearray) -> bytes:
    # extended numbering: e_shnum 0, the count in section 0's sh_size
    struct.pack_into("<H", d, ELF_SHNUM, 0)
    struct.pack_into("<Q", d, _shdr(d, 0) + 32, 5_000_000)
    return bytes(d)


def section_past_end(d: bytearray) -> bytes:
    struct.pack_into("<Q", d, _shdr(d, 5) + 24, 1 << 40)
    return bytes(d)


def huge_section_size(d: bytearray) -> bytes:
    struct.pack_into("<Q", d, _shdr(d, 5) + 32, (1 << 64) - 1)
    return bytes(d)


def symtab_past_end(d: bytearray) -> bytes:
    n = struct.unpack_from("<H", d, ELF_SHNUM)[0]
    for i in range(n):
        if struct.unpack_from("<I", d, _shdr(d, i) + 4)[0] == 2:  # SHT_SYMTAB
            struct.pack_into("<Q", d, _shdr(d, i) + 32, 1 << 36)
    return bytes(d)


def shstrndx_bad(d: bytearray) -> bytes:
    struct.pack_into("<H", d, 0x3E, 999)
    return bytes(d)


ELF_CASES: dict[str, tuple[Callable[[bytearray], bytes], str]] = {
    "truncated header": (lambda d: bytes(d[:40]), "truncated ELF header"),
    "truncated body": (lambda d: bytes(d[:5000]), "runs past the end of the file"),
    "section count": (many_sections, "section header table"),
    "millions of sections": (millions_of_sections, "more than icount accepts"),
    "section past end": (section_past_end, "runs past the end"),
    "huge section size": (huge_section_size, "runs past the end"),
    "symtab past end": (symtab_past_end, ".symtab"),
    "name table index": (shstrndx_bad, "section name table"),
}


@pytest.mark.slow
def test_overlapping_sections_count_once(built: Built, tmp_path: Path) -> None:
    d = _elf(built)
    struct.pack_into("<Q", d, _shdr(d, 10) + 24, struct.unpack_from("<Q", d, _shdr(d, 11) + 24)[0])
    path = tmp_path / "overlap.elf"
    path.write_bytes(bytes(d))
    (image,) = load(path)
    for by in views.VIEWS:
        b = views.view(image, by, 0)
        assert b.file_total == len(d)
    assert any("more than one section" in n for n in views.by_sections(image).notes)


def _macho(built: Built) -> bytearray:
    return bytearray(built.path("hello_arm64").read_bytes())


def unknown_load_command(d: bytearray) -> bytes:
    # the first command (__PAGEZERO) becomes an unknown one: skipped by its size
    struct.pack_into("<I", d, 32, 0x7777)
    return bytes(d)


def _packed(fmt: str, offset: int, value: int) -> Callable[[bytearray], bytes]:
    """A corruption: `value` written at `offset` of the file."""

    def corrupt(d: bytearray) -> bytes:
        struct.pack_into(fmt, d, offset, value)
        return bytes(d)

    return corrupt


MACHO_CASES: dict[str, tuple[Callable[[bytearray], bytes], str]] = {
    "load command count": (
        _packed("<I", 16, 10**7),
        "load commands",
    ),
    "sizeofcmds": (
        _packed("<I", 20, 1 << 31),
        "load commands",
    ),
    "cmdsize 0": (_packed("<I", 36, 0), "invalid size 0"),
    "truncated": (lambda d: bytes(d[:3000]), "runs past the end"),
    "segment past end": (
        _packed("<Q", 32 + 72 + 40, 1 << 40),
        "segment __TEXT",
    ),
    "nsects": (
        _packed("<I", 32 + 72 + 64, 10**6),
        "sections do not fit",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize(
    "case", [f"elf: {c}" for c in ELF_CASES] + [f"macho: {c}" for c in MACHO_CASES]
)
def test_corrupt_file(built: Built, case: str, tmp_path: Path) -> None:
    kind, name = case.split(": ", 1)
    make, message = (ELF_CASES if kind == "elf" else MACHO_CASES)[name]
    path = tmp_path / f"bad.{kind}"
    path.write_bytes(make(_elf(built) if kind == "elf" else _macho(built)))
    with pytest.raises(ParseError) as err:
        load(path)
    assert str(path) in str(err.value) and message in str(err.value)
    _cli_fails(path, message, 6)


@pytest.mark.slow
def test_unknown_load_command_is_skipped(built: Built, tmp_path: Path) -> None:
    path = tmp_path / "unknown.macho"
    path.write_bytes(unknown_load_command(_macho(built)))
    (image,) = load(path)
    b = views.by_sections(image)
    assert b.file_total == path.stat().st_size
    assert "__PAGEZERO" not in {r.label for r in b.rows}


@pytest.mark.slow
def test_corrupt_fat(built: Built, tmp_path: Path) -> None:
    fat = bytearray(built.path("hello_fat").read_bytes())
    bad = bytearray(fat)
    struct.pack_into(">I", bad, 8 + 8, 1 << 31)  # slice 0 offset
    path = tmp_path / "fat"
    path.write_bytes(bytes(bad))
    _cli_fails(path, "fat slice 0", 6)
    bad = bytearray(fat)
    struct.pack_into(">I", bad, 4, 42)  # 42 architectures: still fat (< 43), header garbage
    path.write_bytes(bytes(bad))
    _cli_fails(path, "fat slice", 6)


def test_java_class_file(tmp_path: Path) -> None:
    # 0xcafebabe, minor 0, major 65 (Java 21): byte 7 >= 43 means not a fat file
    path = tmp_path / "Hello.class"
    path.write_bytes(b"\xca\xfe\xba\xbe\x00\x00\x00\x41" + bytes(64))
    _cli_fails(path, "Java class file", 6)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty", b"", "empty file"),
        ("pe.exe", b"MZ" + bytes(200), "not an ELF or Mach-O file"),
        ("text.txt", b"hello\n", "not an ELF or Mach-O file"),
        ("tiny", b"\x7fELF", "truncated ELF header"),
        ("macho3", b"\xcf\xfa\xed", "not an ELF or Mach-O file"),
        ("macho_hdr", b"\xcf\xfa\xed\xfe" + bytes(8), "Mach-O header"),
        ("fat_hdr", b"\xca\xfe\xba\xbe\x00\x00\x00\x02", "fat header"),
        ("fat_zero", b"\xca\xfe\xba\xbe\x00\x00\x00\x00", "no architectures"),
        # byte 7 < 43: fat by LLVM's rule, but 65538 architectures is no real header
        ("fat_many", b"\xca\xfe\xba\xbe\x00\x01\x00\x02" + bytes(64), "65538 architectures"),
    ],
)
def test_small_bad_files(tmp_path: Path, name: str, content: bytes, message: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    _cli_fails(path, message, 6)


def test_directory_device_and_missing(tmp_path: Path) -> None:
    _cli_fails(tmp_path, "is a directory", 6)
    _cli_fails(Path("/dev/zero"), "not a regular file", 6, alone=True)
    _cli_fails(tmp_path / "nope", "no such file", 6)


def _cli_fails(path: Path, message: str, code: int, alone: bool = False) -> None:
    """`icount size PATH` fails in one line: in-process, or `alone` in a process of its
    own where a bug could read without end (/dev/zero)."""
    if alone:
        proc = subprocess.run(
            [sys.executable, "-m", "icount", "size", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
    else:
        proc = run_icount_here(["size", str(path)], ROOT)
    assert proc.returncode == code, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(path) in lines[0] and message in lines[0], lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""
