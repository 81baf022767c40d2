"""Mach-O reader against llvm-size -m, llvm-objdump -h, llvm-nm and macholib, on files
clang and ld64.lld build here (arm64, x86_64, arm64_32; objects, executables, dylibs, fat)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from icount.size import load, views
from icount.size.model import Image, Region

from .conftest import MACHO_FAT, MACHO_THIN, Built, run, tool

pytestmark = pytest.mark.slow

_SEG = re.compile(r"^Segment (\S*): (\d+) \(vmaddr 0x([0-9a-f]+) fileoff (\d+)\)")
# executables: "Section __text: ..."; object files: "Section (__TEXT, __text): ..."
_SECT = re.compile(
    r"^\s+Section (?:\((\S+), (\S+)\)|(\S+)): (\d+) \(addr 0x([0-9a-f]+) offset (\d+)\)"
)


def llvm_size(
    path: str, arch: str | None = None
) -> tuple[list[tuple[str, int]], list[tuple[str, int, int, int]]]:
    """Segments (name, vmsize), sections (label, size, addr, offset): llvm-size -m -l."""
    argv = [tool("llvm-size", "llvm-size-14"), "-m", "-l", path]
    if arch:
        argv += ["-arch", arch]
    segs, sects, seg = [], [], ""
    for line in run(argv).splitlines():
        if m := _SEG.match(line):
            seg = m.group(1)
            segs.append((seg, int(m.group(2))))
        elif m := _SECT.match(line):
            label = f"{m.group(1)},{m.group(2)}" if m.group(1) else f"{seg},{m.group(3)}"
            sects.append((label, int(m.group(4)), int(m.group(5), 16), int(m.group(6))))
    return segs, sects


def objdump_sections(path: str, arch: str | None = None) -> list[tuple[str, int, int]]:
    argv = [tool("llvm-objdump", "llvm-objdump-14"), "-h", path]
    if arch:
        argv.append(f"--arch-name={arch}")
    out = []
    for line in run(argv).splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0].isdigit():
            out.append((parts[1], int(parts[2], 16), int(parts[3], 16)))
    return out


def sections(image: Image) -> list[Region]:  # the section regions, in ordinal order
    return [r for r in image.sections if r.sym_addr is not None]


@pytest.mark.parametrize("name", MACHO_THIN)
def test_thin_sections_equal_llvm_size_and_objdump(built: Built, name: str) -> None:
    path = str(built.path(name))
    (image,) = load(path)
    segs, expected = llvm_size(path)
    got = sections(image)
    # object files: each section names its own segment, as llvm-size shows
    assert [(r.label, r.sym_size, r.sym_addr) for r in got] == [e[:3] for e in expected]
    for r, e in zip(got, expected, strict=True):
        if r.length:
            assert r.start == e[3]
    assert [(n.lstrip("_").lstrip(), s, a) for n, s, a in objdump_sections(path)] == [
        (r.label.split(",")[1].lstrip("_"), r.sym_size, r.sym_addr) for r in got
    ]
    assert image.vm_total == sum(v for _, v in segs)


@pytest.mark.parametrize("name", MACHO_THIN + MACHO_FAT)
def test_every_view_sums_to_file_size(built: Built, name: str) -> None:
    path = built.path(name)
    images = load(path)
    for image in images:
        for by in views.VIEWS:
            b = views.view(image, by, 0)
            assert b.file_total == path.stat().st_size, (image.arch, by)
            assert b.vm_total == image.vm_total, (image.arch, by)  # the segments' vmsize
            assert all(r.file or r.vm for r in b.rows)


def test_zerofill_and_pagezero(built: Built) -> None:
    (image,) = load(built.path("hello_arm64"))
    rows = {r.label: r for r in views.by_sections(image).rows}
    assert rows["__PAGEZERO"].file == 0 and rows["__PAGEZERO"].vm == 1 << 32
    zerofill = [r for r in sections(image) if r.label.endswith(("__bss", "__common"))]
    assert zerofill and all(r.length == 0 and r.vm > 0 for r in zerofill)
    for r in zerofill:
        assert rows[r.label].file == 0 and rows[r.label].vm == r.vm
    segs, _ = llvm_size(str(built.path("hello_arm64")))
    assert views.by_sections(image).vm_total == image.vm_total == sum(v for _, v in segs)


def test_linkedit_is_split_into_its_parts(built: Built) -> None:
    from macholib.MachO import MachO

    path = built.path("hello_arm64")
    (image,) = load(path)
    rows = {r.label: r for r in views.by_sections(image).rows}
    parts = {k: v for k, v in rows.items() if k.startswith("__LINKEDIT: ")}
    assert {
        "__LINKEDIT: symbol table",
        "__LINKEDIT: string table",
        "__LINKEDIT: code signature",
        "__LINKEDIT: function starts",
    } <= set(parts)
    m = MachO(str(path))
    (linkedit,) = [
        c
        for _, c, _ in m.headers[0].commands
        if getattr(c, "segname", b"").startswith(b"__LINKEDIT")
    ]
    assert sum(r.file for r in parts.values()) == linkedit.filesize
    symtab = next(c for lc, c, _ in m.headers[0].commands if lc.cmd == 0x2)
    assert parts["__LINKEDIT: symbol table"].file == symtab.nsyms * 16
    assert parts["__LINKEDIT: string table"].file == symtab.strsize


@pytest.mark.parametrize("fat", MACHO_FAT)
def test_fat_slices_are_reported_apart(built: Built, fat: str) -> None:
    from macholib.MachO import MachO

    path = built.path(fat)
    images = load(path)
    headers = MachO(str(path)).headers
    assert sorted(i.arch for i in images) == ["arm64", "x86_64"]
    thin_name = {
        "hello_fat": "hello_{}",
        "hello_fat64": "hello_{}",
        "libmac_fat.dylib": "libmac_{}.dylib",
    }[fat]
    for image, header in zip(images, headers, strict=True):
        (thin,) = load(built.path(thin_name.format(image.arch)))
        # each slice on its own: its VM is the thin file's, never the sum of the slices
        assert image.vm_total == thin.vm_total
        assert [(r.label, r.start - header.offset, r.length, r.vm) for r in sections(image)] == [
            (r.label, r.start, r.length, r.vm) for r in sections(thin)
        ]
        _, sects = llvm_size(str(path), image.arch)
        assert [(r.label, r.sym_size) for r in sections(image)] == [(s[0], s[1]) for s in sects]
        rows = {r.label: r for r in views.by_sections(image).rows}
        assert rows["[other architectures]"].file == sum(h.size for h in headers if h is not header)
        assert rows["[other architectures]"].vm == 0


def test_fat64_matches_fat(built: Built) -> None:
    a, b = load(built.path("hello_fat")), load(built.path("hello_fat64"))
    for x, y in zip(a, b, strict=True):
        assert views.by_sections(x).rows != []
        assert {r.label: r for r in views.by_segments(x).rows}.keys() == {
            r.label: r for r in views.by_segments(y).rows
        }.keys()
        assert [(r.label, r.length, r.vm) for r in sections(x)] == [
            (r.label, r.length, r.vm) for r in sections(y)
        ]


def test_arm64_32_is_a_32_bit_file(built: Built) -> None:
    (image,) = load(built.path("hello_arm64_32"))
    assert image.arch == "arm64_32" and image.fmt == "Mach-O 32-bit"
    assert image.symbols is not None
    labels = {r.label for r in views.by_symbols(image, 0).rows}
    assert {"main", "mac_add", "initialised"} <= labels


@pytest.mark.parametrize(
    "name", ["hello_arm64", "hello_x86_64.o", "hello_arm64_32", "libmac_arm64.dylib"]
)
def test_symbols_run_to_the_next_symbol(built: Built, name: str) -> None:
    """Charged symbols = llvm-nm's distinct defined addresses inside sections; each runs to
    the next address of its section or the section's end."""
    from icount.size import symbols

    path = str(built.path(name))
    (image,) = load(path)
    assert image.symbols is not None
    secs = sections(image)
    addrs = set()
    for line in run([tool("llvm-nm", "llvm-nm-14"), "-n", "--defined-only", path]).splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1].lower() in "tdbs":
            a = int(parts[0], 16)
            if any(
                r.sym_addr <= a < r.sym_addr + r.sym_size for r in secs if r.sym_addr is not None
            ):
                addrs.add(a)
    charged = symbols.charge(image.symbols, image.sections)
    got = sorted(int(image.symbols.addr[i]) for i in charged.index)
    assert got == sorted(addrs) and got
    for i, region, size in zip(charged.index, charged.region, charged.size, strict=True):
        a = int(image.symbols.addr[i])
        r = image.sections[region]
        later = [b for b in addrs if a < b < r.sym_addr + r.sym_size]
        assert size == (min(later) if later else r.sym_addr + r.sym_size) - a


def test_summarize_fat_picks_host(built: Built) -> None:
    from icount.size import host_arch, summarize

    path = built.path("hello_fat")
    s = summarize(path)
    arch = host_arch() if host_arch() in ("arm64", "x86_64") else "x86_64"
    (thin,) = load(built.path(f"hello_{arch}"))
    assert s["vm_bytes"] == thin.vm_total
    assert s["file_bytes"] == Path(path).stat().st_size
    assert s["text_bytes"] == sum(r.vm for r in thin.sections if r.executable) > 0
