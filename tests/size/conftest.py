"""Fixtures for the size tests: real binaries built once per session by fixtures/size/build.sh."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "fixtures" / "size" / "build.sh"
LD64 = shutil.which("ld64.lld") or "/usr/lib/llvm-14/bin/ld64.lld"

ELF_FILES = (
    "hello_elf",
    "hello_elf.o",
    "libsize.so",
    "hello_elf_stripped",
    "hello_static",
    "shapes_elf.o",
    "elf_mips.o",
    "elf_mips.so",
    "elf_i386.o",
    "elf_i386.so",
    "elf_powerpc64.o",
    "elf_powerpc64.so",
    "hello_go",
)
MACHO_THIN = (
    "hello_arm64.o",
    "hello_x86_64.o",
    "hello_arm64",
    "hello_x86_64",
    "libmac_arm64.dylib",
    "libmac_x86_64.dylib",
    "hello_arm64_32.o",
    "hello_arm64_32",
    "shapes_arm64.o",
)
MACHO_FAT = ("hello_fat", "libmac_fat.dylib", "hello_fat64")


class Built:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.names = set((root / "built.txt").read_text().split())

    def path(self, name: str) -> Path:
        if name not in self.names:
            pytest.skip(f"{name} was not built: {_why(name)}")
        return self.root / name


def _why(name: str) -> str:
    if name.startswith(("hello_arm64", "hello_x86_64", "libmac", "shapes_arm64", "hello_fat")):
        if not shutil.which("clang"):
            return "clang is not installed"
        if not Path(LD64).exists():
            return "ld64.lld is not installed"
        return "llvm-lipo is not installed" if "fat" in name else "the Mach-O build failed"
    if name.startswith("elf_"):
        return "clang (and ld.lld for the .so) is not installed"
    if name == "hello_static":
        return "no static C library (libc.a) for gcc -static"
    if name == "hello_rust":
        return "rustc is not installed"
    if name == "hello_go":
        return "go is not installed (scripts/setup.sh installs golang-go)"
    return "gcc/g++ is not installed"


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    out = tmp_path_factory.mktemp("size-fixtures")
    subprocess.run(["bash", str(BUILD), str(out)], check=True, capture_output=True, timeout=300)
    return Built(out)


def tool(name: str, *fallbacks: str) -> str:
    for n in (name, *fallbacks):
        found = shutil.which(n)
        if found:
            return found
    pytest.skip(f"{name} is not installed")


def run(argv: list[str]) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=120).stdout
