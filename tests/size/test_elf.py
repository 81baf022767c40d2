"""ELF reader against readelf (sections, segments, symbols) on binaries gcc builds here."""

from __future__ import annotations

import re

import pytest

from icount.size import load, views
from icount.size.model import Image

from .conftest import ELF_FILES, Built, run, tool

pytestmark = pytest.mark.slow

_SECTION = re.compile(
    r"^\s*\[\s*(\d+)\]\s+(\S*)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s"
)


def readelf_sections(path: str) -> list[tuple[str, str, int, int, int]]:
    """(name, type, addr, offset, size) of every section but the null one."""
    out = []
    for line in run([tool("readelf"), "-S", "-W", path]).splitlines():
        m = _SECTION.match(line)
        if m and int(m.group(1)) > 0:
            name, typ = m.group(2), m.group(3)
            out.append((name, typ, int(m.group(4), 16), int(m.group(5), 16), int(m.group(6), 16)))
    return out


def only(path: str) -> Image:
    images = load(path)
    assert len(images) == 1
    return images[0]


@pytest.mark.parametrize("name", ELF_FILES)
def test_sections_equal_readelf(built: Built, name: str) -> None:
    path = str(built.path(name))
    image = only(path)
    expected = readelf_sections(path)
    regions = [r for r in image.sections if r.sym_addr is not None]
    assert len(regions) == len(expected)
    is_rel = image.kind == "object file"
    for r, (sname, typ, addr, offset, size) in zip(regions, expected, strict=True):
        assert r.label == sname
        assert r.sym_size == size
        assert r.length == (0 if typ == "NOBITS" else size)
        if r.length:
            assert r.start == offset
        if not is_rel:
            assert r.sym_addr == addr


@pytest.mark.parametrize("name", ELF_FILES)
def test_every_view_sums_to_file_size(built: Built, name: str) -> None:
    path = built.path(name)
    image = only(str(path))
    size = path.stat().st_size
    for by in views.VIEWS:
        b = views.view(image, by, 0)
        assert b.file_total == size, by
        # the VM column adds up to what the LOAD segments map (objects: their sections)
        assert b.vm_total == image.vm_total, by
        # rows are distinct labels with something in them
        assert len({r.label for r in b.rows}) == len(b.rows)
        assert all(r.file or r.vm for r in b.rows)
    # a short view sums the hidden rows into one
    assert views.view(image, "symbols", 5).file_total == size


def test_sections_view_rows(built: Built) -> None:
    path = str(built.path("hello_elf"))
    image = only(path)
    rows = {r.label: r for r in views.by_sections(image).rows}
    expected = {name: (typ, size) for name, typ, _, _, size in readelf_sections(path)}
    assert rows[".text"].file == expected[".text"][1] == rows[".text"].vm
    assert rows[".bss"].file == 0 and rows[".bss"].vm == expected[".bss"][1]  # NOBITS
    assert rows[".symtab"].vm == 0  # not loaded
    # .tbss: per-thread, no file bytes, and its addresses overlap the next section's
    assert expected[".tbss"][0] == "NOBITS" and expected[".tbss"][1] > 0
    assert ".tbss" not in rows
    assert rows["[ELF header]"].file == 64
    header = run([tool("readelf"), "-h", "-W", path])
    shnum = int(re.search(r"Number of section headers:\s+(\d+)", header).group(1))  # type: ignore[union-attr]
    assert rows["[section headers]"].file == 64 * shnum


def test_segments_equal_readelf_loads(built: Built) -> None:
    path = str(built.path("hello_elf"))
    image = only(path)
    loads = []
    for line in run([tool("readelf"), "-l", "-W", path]).splitlines():
        parts = line.split()
        if parts and parts[0] == "LOAD":
            loads.append((int(parts[4], 16), int(parts[5], 16)))  # FileSiz, MemSiz
    segs = [r for r in image.segments if r.label.startswith("LOAD #")]
    assert [(r.length, r.vm) for r in segs] == loads
    b = views.by_segments(image)
    assert b.vm_total == image.vm_total == sum(m for _, m in loads)


def readelf_symbols(path: str) -> list[tuple[int, int, str, int, str]]:
    """(value, size, type, ndx, name) of .symtab entries defined in a section."""
    out = []
    in_symtab = False
    for line in run([tool("readelf"), "-s", "-W", path]).splitlines():
        if line.startswith("Symbol table"):
            in_symtab = "'.symtab'" in line
            continue
        parts = line.split()
        if not in_symtab or len(parts) < 8 or not parts[0].endswith(":"):
            continue
        if not parts[6].isdigit():
            continue
        out.append((int(parts[1], 16), int(parts[2], 0), parts[3], int(parts[6]), parts[7]))
    return out


@pytest.mark.parametrize(
    "name",
    ["hello_elf", "libsize.so", "hello_static", "hello_elf.o", "elf_mips.so", "elf_powerpc64.so"],
)
def test_symbol_bytes_per_section_equal_union_of_readelf_symbols(built: Built, name: str) -> None:
    """Independent check: per section, the bytes charged to symbols equal the union of the
    [value, value+size) ranges readelf lists, clipped to the section (aliases, overlaps once)."""
    from icount.size import symbols

    path = str(built.path(name))
    image = only(path)
    assert image.symbols is not None and image.symbols.source == ".symtab"
    sections = readelf_sections(path)
    is_rel = image.kind == "object file"
    expected: dict[int, int] = {}
    ranges: dict[int, list[tuple[int, int]]] = {}
    for value, size, typ, ndx, _ in readelf_symbols(path):
        if typ in ("SECTION", "FILE") or size == 0:
            continue
        _, _, addr, _, ssize = sections[ndx - 1]
        lo = 0 if is_rel else addr
        if typ == "TLS" and not is_rel:
            continue  # offsets into the TLS template; checked below through the rows
        start, end = max(value, lo), min(value + size, lo + ssize)
        if value < lo or value >= lo + ssize or end <= start:
            continue
        ranges.setdefault(ndx - 1, []).append((start, end))
    for sec, rs in ranges.items():
        total, cursor = 0, -1
        for a, b in sorted(rs):
            a = max(a, cursor)
            if b > a:
                total += b - a
                cursor = b
        expected[sec] = total
    charged = symbols.charge(image.symbols, image.sections)
    got = symbols.per_region(charged, len(image.sections))
    regions = [i for i, r in enumerate(image.sections) if r.sym_addr is not None]
    tls = {
        i
        for i, (_, _, _, _, _) in enumerate(sections)
        if sections[i][0].startswith((".tdata", ".tbss"))
    }
    for k, region_index in enumerate(regions):
        if k in tls and not is_rel:
            continue
        assert int(got[region_index]) == expected.get(k, 0), sections[k][0]
    assert sum(expected.values()) > 0


def test_aliases_count_once(built: Built) -> None:
    path = str(built.path("libsize.so"))
    b = views.by_symbols(only(path), 0)
    labels = {r.label: r for r in b.rows}
    # lib_add and lib_add_alias share address and size: one row keeps the bytes
    assert ("lib_add" in labels) != ("lib_add_alias" in labels)
    kept = labels.get("lib_add") or labels["lib_add_alias"]
    sizes = {name: size for _, size, _, _, name in readelf_symbols(path)}
    assert kept.file == sizes["lib_add"] == sizes["lib_add_alias"]
    assert b.file_total == built.path("libsize.so").stat().st_size


def test_stripped_binary_uses_dynsym(built: Built) -> None:
    image = only(str(built.path("hello_elf_stripped")))
    assert image.symbols is not None and image.symbols.source == ".dynsym"
    b = views.by_symbols(image, 0)
    assert b.file_total == built.path("hello_elf_stripped").stat().st_size
    assert not any(r.label == "main" for r in b.rows)  # main is not exported


def test_summarize(built: Built) -> None:
    from icount.size import summarize

    path = built.path("hello_static")
    s = summarize(path)
    text = 0
    for line in run([tool("readelf"), "-S", "-W", str(path)]).splitlines():
        m = _SECTION.match(line)
        rest = line[m.end() :].split() if m else []
        if m and rest and not rest[0].isdigit() and {"A", "X"} <= set(rest[0]):
            text += int(m.group(6), 16)
    assert s["file_bytes"] == path.stat().st_size
    assert s["text_bytes"] == text > 0
    assert s["vm_bytes"] > s["text_bytes"]


def test_header_names_are_pyelftools_names() -> None:
    from elftools.elf.enums import ENUM_E_MACHINE, ENUM_E_TYPE

    from icount.size import elf

    for number, name in elf.MACHINE_NAMES.items():
        assert ENUM_E_MACHINE[name] == number
    for number, name in elf._TYPE_NAMES.items():
        assert ENUM_E_TYPE[name] == number


@pytest.mark.parametrize("name", ELF_FILES)
def test_header_equals_pyelftools(built: Built, name: str) -> None:
    """The struct reader of the common header gives what pyelftools gives (both byte
    orders, both classes); a machine it does not name goes to pyelftools."""
    import struct

    from icount.size import elf
    from icount.size.source import Blob

    data = built.path(name).read_bytes()
    blob = Blob(name, data)
    plain = elf._plain_header(blob)
    assert plain is not None and plain == elf._header_by_pyelftools(blob)
    odd = bytearray(data)
    struct.pack_into("<H" if data[5] == 1 else ">H", odd, 18, 0x1234)
    odd_blob = Blob(name, bytes(odd))
    assert elf._plain_header(odd_blob) is None
    assert elf._header(odd_blob) == elf._header_by_pyelftools(odd_blob)
    assert elf._header(odd_blob)["machine"] == 0x1234
