"""The compileunits and files views against llvm-dwarfdump and readelf, on programs of
two compile units built with -g by gcc and by clang (issue 15 item 2)."""

from __future__ import annotations

import io
import itertools
import re
from pathlib import Path
from typing import cast

import pytest
from elftools.dwarf.dwarfinfo import DebugSectionDescriptor

from icount.size import load, units, views
from icount.size.model import Image

from .conftest import Built, run, tool

pytestmark = pytest.mark.slow

BUILDS = ("units_gcc", "units_clang")


def dwarfdump(path: Path, what: str) -> str:
    return run([tool("llvm-dwarfdump", "llvm-dwarfdump-14"), what, str(path)])


def _dies(unit: str) -> list[str]:
    """The DIEs of one unit's dump, each its tag line and attribute lines."""
    return re.split(r"\n(?=0x[0-9a-f]+:\s+(?:DW_TAG|NULL))", unit)


def dumped_units(path: Path) -> list[dict[str, object]]:
    """Per compile unit: name, [lo, hi) ranges, names of variables with an address."""
    out = []
    for unit in dwarfdump(path, "--debug-info").split("DW_TAG_compile_unit")[1:]:
        dies = _dies(unit)
        top = dies[0]
        name = re.search(r'DW_AT_name\s+\("([^"]*)"\)', top)
        assert name is not None
        ranges: list[tuple[int, int]] = []
        low = re.search(r"DW_AT_low_pc\s+\((0x[0-9a-f]+)\)", top)
        high = re.search(r"DW_AT_high_pc\s+\((0x[0-9a-f]+)\)", top)
        if "DW_AT_ranges" in top:
            ranges = [
                (int(a, 16), int(b, 16))
                for a, b in re.findall(r"\[(0x[0-9a-f]+), (0x[0-9a-f]+)\)", top)
            ]
        elif low and high:
            ranges = [(int(low.group(1), 16), int(high.group(1), 16))]
        variables = []
        for die in dies[1:]:
            if "DW_TAG_variable" in die and re.search(r"DW_AT_location\s+\(DW_OP_addrx? ", die):
                v = re.search(r'DW_AT_name\s+\("([^"]*)"\)', die)
                if v:
                    variables.append(v.group(1))
        out.append({"name": name.group(1), "ranges": ranges, "variables": variables})
    return out


def readelf_symbols(path: Path) -> dict[str, tuple[int, int, int]]:
    """name -> (value, size, section index) of the sized symbols in .symtab."""
    out = {}
    for line in run([tool("readelf"), "-s", "-W", str(path)]).splitlines():
        p = line.split()
        if len(p) >= 8 and p[0].endswith(":") and p[6].isdigit() and int(p[2], 0) > 0:
            out[p[7]] = (int(p[1], 16), int(p[2], 0), int(p[6]))
    return out


def image_of(built: Built, name: str, by: str) -> Image:
    (image,) = load(built.path(name), dwarf=by)
    assert image.dwarf is not None
    return image


def _union(ranges: list[tuple[int, int]], lo: int, hi: int) -> int:
    total, cursor = 0, lo
    for a, b in sorted(ranges):
        a, b = max(a, cursor), min(b, hi)
        if b > a:
            total += b - a
            cursor = b
    return total


@pytest.mark.parametrize("name", BUILDS)
def test_unit_ranges_equal_llvm_dwarfdump(built: Built, name: str) -> None:
    image = image_of(built, name, "compileunits")
    assert image.dwarf is not None
    mine = sorted((lo, hi, unit) for lo, hi, unit, _ in image.dwarf.unit_ranges)
    expected = sorted(
        (lo, hi, str(u["name"]))
        for u in dumped_units(built.path(name))
        for lo, hi in u["ranges"]  # type: ignore[attr-defined]
    )
    assert mine == expected and len({u for _, _, u in mine}) == 2


def _contents(section: DebugSectionDescriptor | None) -> bytes:
    """A DWARF section's bytes as pyelftools read them (into memory: a BytesIO)."""
    assert section is not None and isinstance(section.stream, io.BytesIO)
    return section.stream.getvalue()


@pytest.mark.parametrize("name", BUILDS)
def test_code_and_data_per_unit(built: Built, name: str) -> None:
    """Code: each unit's ranges within each section (llvm-dwarfdump). Data: the sizes
    readelf gives the variables llvm-dwarfdump lists in each unit. Every section's
    bytes split exactly: the units' share plus [no debug info]."""
    path = built.path(name)
    image = image_of(built, name, "compileunits")
    parts = units.attribute(image, False, units.sized_symbols(image))
    syms = readelf_symbols(path)
    dumped = dumped_units(path)
    checked_code = checked_data = 0
    for i, r in enumerate(image.sections):
        if r.sym_addr is None or r.vm == 0:
            continue
        lo, hi = r.sym_addr, r.sym_addr + r.sym_size
        got = parts.get(i, {})
        assert sum(got.values()) <= r.sym_size
        for u in dumped:
            unit = str(u["name"])
            if r.executable:
                want = _union(cast(list[tuple[int, int]], u["ranges"]), lo, hi)
                checked_code += want
            else:
                variables = cast(list[str], u["variables"])
                want = sum(syms[v][1] for v in variables if v in syms and lo <= syms[v][0] < hi)
                checked_data += want
            assert got.get(unit, 0) == want, (r.label, unit)
    assert checked_code > 100 and checked_data >= 4096 + 1024 + 512
    b = views.view(image, "compileunits", 0)
    assert b.file_total == path.stat().st_size and b.vm_total == image.vm_total
    rest = {row.label: row for row in b.rows}[units.NO_DEBUG_INFO]
    reached = [i for i in parts if image.sections[i].vm]
    assert rest.vm == sum(image.sections[i].vm - sum(parts[i].values()) for i in reached)


def dumped_lines(path: Path) -> list[tuple[int, int, str]]:
    """[lo, hi) -> file of every row of every sequence, from llvm-dwarfdump --debug-line."""
    out = []
    for table in dwarfdump(path, "--debug-line").split("Line table prologue:")[1:]:
        dirs = dict(re.findall(r'include_directories\[\s*(\d+)\] = "([^"]*)"', table))
        files = {}
        for index, fname, d in re.findall(
            r'file_names\[\s*(\d+)\]:\s+name: "([^"]*)"\s+dir_index: (\d+)', table
        ):
            version5 = "version: 5" in table
            directory = dirs.get(str(int(d) - (0 if version5 else 1)), "")
            keep = fname.startswith("/") or int(d) == 0
            files[int(index)] = fname if keep else f"{directory}/{fname}"
        rows = re.findall(
            r"^0x([0-9a-f]{16})\s+\d+\s+\d+\s+(\d+)\s.*?(end_sequence)?$", table, re.M
        )
        for (a, f, end), (b, _, _) in itertools.pairwise(rows):
            if not end and int(b, 16) > int(a, 16):
                out.append((int(a, 16), int(b, 16), files[int(f)]))
    return out


@pytest.mark.parametrize("name", BUILDS)
def test_files_equal_the_line_table(built: Built, name: str) -> None:
    path = built.path(name)
    image = image_of(built, name, "files")
    parts = units.attribute(image, True, units.sized_symbols(image))
    lines = dumped_lines(path)
    text = next(i for i, r in enumerate(image.sections) if r.label == ".text")
    r = image.sections[text]
    assert r.sym_addr is not None
    lo, hi = r.sym_addr, r.sym_addr + r.sym_size
    expected: dict[str, int] = {}
    for a, b, f in lines:
        expected[f] = expected.get(f, 0) + _union([(a, b)], lo, hi)
    # unit addresses the line table leaves out go to the unit's own file
    for u in dumped_units(path):
        ranges: list[tuple[int, int]] = u["ranges"]  # type: ignore[assignment]
        covered = sum(
            _union([(max(a, x), min(b, y))], lo, hi)
            for a, b, _ in lines
            for x, y in ranges
            if a < y and b > x
        )
        left = _union(ranges, lo, hi) - covered
        if left:
            expected[str(u["name"])] = expected.get(str(u["name"]), 0) + left
    assert {k: v for k, v in expected.items() if v} == parts[text]
    assert any(f.endswith("units.h") for f in parts[text])  # the inline helper is the header's
    breakdown = views.view(image, "files", 0)
    assert breakdown.file_total == path.stat().st_size


def test_without_dwarf_the_sections_stay_whole(built: Built) -> None:
    for name in ("hello_elf", "hello_elf.o", "hello_arm64", "libmac_fat.dylib"):
        path = built.path(name)
        for image in load(path, dwarf="compileunits"):
            assert image.dwarf is None
            b = views.view(image, "compileunits", 0)
            assert b.file_total == path.stat().st_size
            assert units.NO_DEBUG_INFO not in {r.label for r in b.rows}
            assert any(n.startswith("no DWARF") for n in b.notes)


def test_go_dwarf_is_compressed_and_read(built: Built) -> None:
    path = built.path("hello_go")
    (image,) = load(path, dwarf="compileunits")
    assert image.dwarf is not None and image.dwarf.units > 10
    rows = {r.label: r for r in views.view(image, "compileunits", 0).rows}
    assert rows["runtime"].vm > rows["main"].vm > 0
    assert sum(r.file for r in rows.values()) == path.stat().st_size


def _reference(path: Path) -> tuple[list[bytes], list[tuple[int, int, int]]]:
    """What dwarf_scan reads, through pyelftools' own objects (every DIE, every row)."""
    from elftools.elf.elffile import ELFFile

    locations: list[bytes] = []
    rows: list[tuple[int, int, int]] = []
    with open(path, "rb") as f:
        info = ELFFile(f).get_dwarf_info()
        for cu in info.iter_CUs():
            for die in cu.iter_DIEs():
                loc = die.attributes.get("DW_AT_location")
                if die.tag == "DW_TAG_variable" and loc is not None and isinstance(loc.value, list):
                    locations.append(bytes(loc.value))
            program = info.line_program_for_CU(cu)
            start = None
            for entry in program.get_entries() if program else []:
                s = entry.state
                if s is None:
                    continue
                if start is not None and s.address > start[0]:
                    rows.append((start[0], s.address, start[1]))
                start = None if s.end_sequence else (s.address, s.file)
    return locations, rows


@pytest.mark.parametrize(
    ("name", "least"),
    # Rust's standard library ships line tables only (debuginfo=1): no variables
    [("hello_go", 100), ("hello_rust", 0), ("units_gcc", 4), ("units_clang", 4)],
)
def test_the_fast_scan_equals_pyelftools(built: Built, name: str, least: int) -> None:
    """dwarf_scan skips attributes by their forms and runs the line program itself:
    the same variables and rows as pyelftools' DIE and line-state objects, on Go's
    (compressed, DWARF 4), Rust's standard library's and gcc's and clang's DWARF 5."""
    from elftools.elf.elffile import ELFFile

    from icount.size import dwarf_scan

    path = built.path(name)
    want_locations, want_rows = _reference(path)
    with open(path, "rb") as f:
        info = ELFFile(f).get_dwarf_info()
        little = info.config.little_endian
        data, lines = _contents(info.debug_info_sec), _contents(info.debug_line_sec)
        locations, rows = [], []
        for cu in info.iter_CUs():
            locations += [loc for loc, _ in dwarf_scan.variables(data, cu, little)]
            program = info.line_program_for_CU(cu)
            if program is not None:
                rows += list(dwarf_scan.line_rows(lines, program, little))
    assert locations == want_locations and len(locations) >= least
    assert rows == want_rows and len(rows) > 20


def test_garbage_dwarf_is_one_parse_error(built: Built, tmp_path: Path) -> None:
    from icount.errors import ParseError

    data = bytearray(built.path("units_gcc").read_bytes())
    out = run([tool("readelf"), "-S", "-W", str(built.path("units_gcc"))])
    m = re.search(r"\.debug_info\s+PROGBITS\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", out)
    assert m is not None
    start, size = int(m.group(1), 16), int(m.group(2), 16)
    data[start + 11 : start + size] = b"\xff" * (size - 11)  # past the unit header
    path = tmp_path / "bad"
    path.write_bytes(bytes(data))
    with pytest.raises(ParseError) as err:
        load(path, dwarf="compileunits")
    assert str(err.value).startswith(f"{path}: DWARF") and "\n" not in str(err.value)
