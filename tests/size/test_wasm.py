"""WebAssembly reader against llvm-objdump / llvm-readobj on the committed fixtures
(fixtures/size/build_wasm.sh), and its one-line errors on hostile modules."""

from __future__ import annotations

import gzip
import json
import re
import struct
import subprocess
from pathlib import Path

import pytest

from icount.errors import ParseError
from icount.size import demangle, load, load_bytes, views
from icount.size.model import Image
from tests.support.cli import run_icount_here

from .conftest import ROOT, run, tool

WASM = ROOT / "fixtures" / "size" / "wasm"
FIXTURES = sorted(p.name for p in WASM.iterdir() if p.suffix in (".wasm", ".o"))


def only(path: Path) -> Image:
    images = load(path)
    assert len(images) == 1
    return images[0]


def objdump_sections(path: Path) -> list[tuple[str, int]]:
    out = run([tool("llvm-objdump", "llvm-objdump-14"), "-h", str(path)])
    rows = []
    for line in out.splitlines():
        m = re.match(r"\s*\d+ (\S+)\s+([0-9a-f]{8}) ", line)
        if m:
            rows.append((m.group(1), int(m.group(2), 16)))
    return rows


def readobj_sections(path: Path) -> list[tuple[str, int, int]]:
    """(type or custom name, size, offset of the section's id byte)."""
    out = run([tool("llvm-readobj", "llvm-readobj-14"), "--sections", str(path)])
    rows = []
    for block in out.split("Section {")[1:]:
        typ = re.search(r"Type: (\S+)", block)
        size = re.search(r"Size: (\d+)", block)
        offset = re.search(r"Offset: (\d+)", block)
        name = re.search(r"Name: (\S+)", block)
        assert typ and size and offset
        label = name.group(1) if typ.group(1) == "CUSTOM" and name else typ.group(1)
        rows.append((label, int(size.group(1)), int(offset.group(1))))
    return rows


def test_fixtures_are_there() -> None:
    assert {"wasm_o1.wasm", "wasm_o1.o", "wasm_stripped.wasm", "wasm_debug.wasm"} <= set(FIXTURES)


@pytest.mark.parametrize("name", FIXTURES)
def test_sections_equal_llvm_objdump(name: str) -> None:
    path = WASM / name
    image = only(path)
    mine = [(r.label, r.length) for r in image.sections if not r.label.startswith("[")]
    assert mine == objdump_sections(path)
    assert image.fmt == "WebAssembly" and image.arch == "wasm32"
    assert image.kind == ("object file" if name.endswith(".o") else "module")


@pytest.mark.parametrize("name", FIXTURES)
def test_sections_equal_llvm_readobj(name: str) -> None:
    """Sizes, and where each section starts: the header bytes between them are ours."""
    path = WASM / name
    image = only(path)
    regions = [r for r in image.sections if not r.label.startswith("[")]
    headers = [r for r in image.sections if r.label == "[section headers]"]
    expected = readobj_sections(path)
    assert [(r.label, r.length) for r in regions] == [(n, s) for n, s, _ in expected]
    assert [h.start for h in headers] == [o for _, _, o in expected]
    for h, r in zip(headers, regions, strict=True):
        assert h.start + h.length == r.start  # the payload (after a custom name) follows


@pytest.mark.parametrize("name", FIXTURES)
def test_every_view_sums_to_the_file(name: str) -> None:
    path = WASM / name
    image = only(path)
    for by in views.VIEWS:
        b = views.view(image, by, 0)
        assert b.file_total == path.stat().st_size, by
        assert b.vm_total == 0
        assert len({r.label for r in b.rows}) == len(b.rows)


def objdump_functions(path: Path) -> list[tuple[str, int]]:
    """(name, bytes to the next function) from the labels of `llvm-objdump -d`, which
    sit at each code entry's size LEB128, offsets from the CODE payload."""
    out = run([tool("llvm-objdump", "llvm-objdump-14"), "-d", str(path)])
    labels = [
        (m.group(2), int(m.group(1), 16))
        for m in re.finditer(r"^([0-9a-f]{8}) <(.*)>:$", out, re.M)
        if m.group(2) != "CODE"
    ]
    (code,) = [size for n, size in objdump_sections(path) if n == "CODE"]
    ends = [o for _, o in labels[1:]] + [code]
    return [(n, end - o) for (n, o), end in zip(labels, ends, strict=True)]


@pytest.mark.parametrize("name", [n for n in FIXTURES if n != "wasm_stripped.wasm"])
def test_function_sizes_equal_the_code_entries(name: str) -> None:
    path = WASM / name
    image = only(path)
    table = image.symbols
    assert table is not None
    code = next(i for i, r in enumerate(image.sections) if r.label == "CODE")
    funcs = [
        (table.name(i), int(table.size[i]))
        for i in range(len(table.addr))
        if int(table.region[i]) == code
    ]
    expected = objdump_functions(path)
    assert funcs == expected
    # the code section is its count and these entries: nothing else
    count_bytes = image.sections[code].length - sum(s for _, s in funcs)
    assert 1 <= count_bytes <= 5


def test_stripped_module_has_numbered_and_exported_functions() -> None:
    b = views.by_symbols(only(WASM / "wasm_stripped.wasm"), 0)
    labels = {r.label for r in b.rows}
    assert {"function[0]", "run"} <= labels  # run: named by its export
    assert any("the export section" in n for n in b.notes)
    sizes = [s for _, s in objdump_functions(WASM / "wasm_stripped.wasm")]
    functions = [r.file for r in b.rows if r.label.startswith("function[") or r.label == "run"]
    assert sorted(functions) == sorted(sizes)


def test_data_segments_hold_llvms_segments() -> None:
    path = WASM / "wasm_o1.wasm"
    image = only(path)
    table = image.symbols
    assert table is not None
    data = next(i for i, r in enumerate(image.sections) if r.label == "DATA")
    mine = [int(table.size[i]) for i in range(len(table.addr)) if int(table.region[i]) == data]
    out = run([tool("llvm-readobj", "llvm-readobj-14"), "--sections", str(path)])
    block = out.split("Type: DATA")[1].split("Section {")[0]
    llvm = [int(s) for s in re.findall(r"Segment \{\s+Size: (\d+)", block)]
    assert len(mine) == len(llvm) >= 2
    for entry, payload in zip(mine, llvm, strict=True):
        # an entry is its flags, offset expression and size LEB128, then the bytes
        assert payload < entry <= payload + 16
    assert image.sections[data].length - sum(mine) == 1  # the segment count


def test_names_of_a_module_and_an_object() -> None:
    module = {r.label for r in views.by_symbols(only(WASM / "wasm_o1.wasm"), 0).rows}
    obj = {r.label for r in views.by_symbols(only(WASM / "wasm_o1.o"), 0).rows}
    assert {"fib", "run", ".data", ".rodata"} <= module
    assert {"fib", "run"} <= obj  # from the linking section's symbol table
    assert any(label.startswith(".data.") for label in obj)  # segment names


def test_cxx_names() -> None:
    plain = {r.label for r in views.by_symbols(only(WASM / "shapes_cxx.wasm"), 0).rows}
    assert "geo::total(geo::Shape const&, int)" in plain  # wasm-ld demangled it
    if not demangle.available():
        pytest.skip("no C++ runtime (libstdc++.so.6) to demangle with")
    mangled = {r.label for r in views.by_symbols(only(WASM / "shapes_cxx_mangled.wasm"), 0).rows}
    assert "geo::total(geo::Shape const&, int)" in mangled  # icount demangled it


def test_debug_sections_are_custom_sections() -> None:
    rows = {r.label: r for r in views.by_sections(only(WASM / "wasm_debug.wasm")).rows}
    assert {".debug_info", ".debug_line", ".debug_str", ".debug_abbrev"} <= set(rows)


def test_gzip_side_by_side_and_diff() -> None:
    def icount(*args: str) -> str:  # files only: in-process
        done = run_icount_here(["size", *args], ROOT)
        assert done.returncode == 0, done.stderr
        return done.stdout

    a, b = WASM / "wasm_o1.wasm", WASM / "wasm_o2.wasm"
    doc = json.loads(icount("--gzip", "-f", "json", str(a), str(b)))
    for image, path in zip(doc["images"], (a, b), strict=True):
        assert image["gzip_bytes"] == len(gzip.compress(path.read_bytes(), 9, mtime=0))
        assert sum(r["file_bytes"] for r in image["rows"]) == path.stat().st_size
    gz = subprocess.run(
        [tool("gzip"), "-9", "-n", "-c", str(a)], capture_output=True, check=True
    ).stdout
    assert doc["images"][0]["gzip_bytes"] == len(gz)
    diff = json.loads(icount("--diff", "-f", "json", "--by", "symbols", str(a), str(b)))
    rows = diff["diff"][0]["rows"]
    assert sum(r["new_file_bytes"] - r["old_file_bytes"] for r in rows) == (
        b.stat().st_size - a.stat().st_size
    )
    assert "WebAssembly module" in icount(str(a), str(b))


# ---------------------------------------------------------------- hostile modules


def _leb(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _module(*sections: tuple[int, bytes]) -> bytes:
    return b"\0asm\1\0\0\0" + b"".join(bytes([i]) + _leb(len(p)) + p for i, p in sections)


HOSTILE = {
    "truncated header": (b"\0asm\1\0", "truncated WebAssembly header"),
    "component": (b"\0asm\x0d\0\1\0", "a component"),
    "section past end": (b"\0asm\1\0\0\0\1\x7f\0", "runs past the end of the file"),
    "endless LEB": (b"\0asm\1\0\0\0\1" + b"\xff" * 9, "longer than 5 bytes"),
    "LEB past end": (b"\0asm\1\0\0\0\1\xff", "runs past its end"),
    "LEB too big": (b"\0asm\1\0\0\0\1\xff\xff\xff\xff\x7f", "does not fit in 32 bits"),
    "unknown id": (_module((99, b"")), "unknown section id 99"),
    "twice": (_module((1, b"\0"), (1, b"\0")), "TYPE section appears twice"),
    "custom name past end": (_module((0, b"\x20ab")), "32 bytes run past its end"),
    "a billion bodies": (
        _module((10, _leb(10**9) + b"\0")),
        "1000000000 function bodies cannot fit",
    ),
    "body past section": (_module((10, b"\1\x10\0")), "CODE section: 16 bytes run past"),
    "a billion imports": (_module((2, _leb(10**9))), "1000000000 imports cannot fit"),
    "bad import kind": (_module((2, b"\1\1a\1b\x09")), "unknown import kind 9"),
    "bad data flags": (_module((11, b"\1\x07")), "unknown flags 7"),
    "bad const expr": (_module((11, b"\1\0\x99\x0b\0")), "opcode 0x99 in a constant"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_modules(case: str) -> None:
    data, message = HOSTILE[case]
    with pytest.raises(ParseError) as err:
        load_bytes("evil.wasm", data)
    text = str(err.value)
    assert text.startswith("evil.wasm: ") and message in text and "\n" not in text


def test_a_bad_name_section_is_ignored_with_a_note() -> None:
    code = b"\1" + b"\2\0\x0b"  # one body: no locals, end
    name = b"\4name" + b"\1" + _leb(5) + b"\1\0\x7f"  # a function name running past its end
    data = _module((1, b"\1\x60\0\0"), (3, b"\1\0"), (10, code), (0, name))
    (image,) = load_bytes("names.wasm", data)
    b = views.by_symbols(image, 0)
    assert "function[0]" in {r.label for r in b.rows}
    assert any(n.startswith("name section ignored") for n in b.notes)
    assert b.file_total == len(data)


def test_cli_error_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.wasm"
    path.write_bytes(HOSTILE["a billion bodies"][0])
    proc = run_icount_here(["size", "--by", "symbols", str(path)], ROOT)
    assert proc.returncode == 6 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and str(path) in proc.stderr


def test_memory64_is_wasm64() -> None:
    data = _module((5, b"\1\x04" + _leb(3)))  # one memory, 64-bit flag, 3 pages
    (image,) = load_bytes("m64.wasm", data)
    assert image.arch == "wasm64"
    assert any("starts at 196608 bytes" in n for n in image.notes)
    assert struct.unpack("<I", data[4:8]) == (1,)
