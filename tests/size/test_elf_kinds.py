"""File kinds and compressed sections as readelf names them (issue 16)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from icount.errors import ParseError
from icount.size import load, views

from .conftest import ELF_FILES, Built, run, tool

pytestmark = pytest.mark.slow

_READELF_KIND = {
    "REL (Relocatable file)": "object file",
    "EXEC (Executable file)": "executable",
    "DYN (Shared object file)": "shared object",
    "DYN (Position-Independent Executable file)": "position-independent executable",
}


def readelf_kind(path: str) -> str:
    out = run([tool("readelf"), "-h", "-W", path])
    m = re.search(r"Type:\s+(.+)", out)
    assert m is not None
    return _READELF_KIND[m.group(1).strip()]


def system_files(per_folder: int) -> list[str]:
    """ELF files this test did not build: executables and libraries of the system."""
    out: list[str] = []
    for folder in ("/usr/bin", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu"):
        if not os.path.isdir(folder):
            continue
        found = 0
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if found < per_folder and os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as f:
                    if f.read(4) == b"\x7fELF":
                        out.append(path)
                        found += 1
    return out


@pytest.mark.parametrize("name", ELF_FILES)
def test_kind_equals_readelf_on_fixtures(built: Built, name: str) -> None:
    path = str(built.path(name))
    (image,) = load(path, symbols=False)
    assert image.kind == readelf_kind(path)


def test_kind_equals_readelf_on_system_files() -> None:
    files = system_files(80)
    if not files:
        pytest.skip("no ELF files under /usr/bin or /usr/lib")
    kinds: dict[str, int] = {}
    for path in files:
        try:
            (image,) = load(path, symbols=False)
        except ParseError:
            continue
        assert image.kind == readelf_kind(path), path
        kinds[image.kind] = kinds.get(image.kind, 0) + 1
    # both readelf labels of ET_DYN occur among the system's files
    assert kinds.get("position-independent executable", 0) > 0
    assert kinds.get("shared object", 0) > 0


def readelf_compressed(path: str) -> dict[str, tuple[str, int]]:
    """name -> (algorithm, uncompressed size) from `readelf -t` (section details)."""
    out: dict[str, tuple[str, int]] = {}
    name = ""
    for line in run([tool("readelf"), "-t", "-W", path]).splitlines():
        m = re.match(r"\s+\[\s*\d+\]\s+(\S+)", line)
        if m:
            name = m.group(1)
            continue
        m = re.match(r"\s+(ZLIB|ZSTD), ([0-9a-f]+), ", line)
        if m:
            out[name] = (m.group(1).lower(), int(m.group(2), 16))
    return out


def test_compressed_sections_equal_readelf(built: Built) -> None:
    path = str(built.path("hello_go"))  # Go compresses its DWARF with zlib
    expected = readelf_compressed(path)
    assert expected, "the Go fixture has no compressed sections"
    (image,) = load(path, symbols=False)
    got = {r.label: r.compressed for r in image.sections if r.compressed}
    assert got == expected
    b = views.by_sections(image)
    labels = {r.label for r in b.rows}
    for name in expected:
        assert f"{name} (compressed)" in labels and name not in labels
    (note,) = [n for n in b.notes if n.startswith("(compressed)")]
    for name, (algo, size) in expected.items():
        assert f"{name} " in note and f"-> {size} bytes ({algo})" in note
    assert b.file_total == Path(path).stat().st_size


def test_uncompressed_files_have_no_marker(built: Built) -> None:
    (image,) = load(str(built.path("hello_elf")), symbols=False)
    b = views.by_sections(image)
    assert not any("(compressed)" in r.label for r in b.rows)
    assert not any(n.startswith("(compressed)") for n in b.notes)
