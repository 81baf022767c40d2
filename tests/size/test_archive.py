"""`ar` archives (issue 31): members read one by one and summed, checked against `ar t`
and `size -A`; bad archives fail in one line, in memory bounded by the file."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from icount.errors import ParseError
from icount.size import archive, load, load_bytes, views
from icount.size.source import Blob

from .conftest import ROOT, Built, run, tool

WASM = ROOT / "fixtures" / "size" / "wasm"


def header(name: str, size: int) -> bytes:
    return f"{name:<16}{0:<12}{0:<6}{0:<6}{644:<8}{size:<10}`\n".encode()


def member(name: str, data: bytes) -> bytes:
    return header(name, len(data)) + data + (b"\n" if len(data) % 2 else b"")


def gnu(members: list[tuple[str, bytes]]) -> bytes:
    """A GNU archive: names over 15 bytes in the `//` table, as GNU ar writes them."""
    table, out = b"", []
    for name, data in members:
        if len(name) > 15:
            out.append(member(f"/{len(table)}", data))
            table += name.encode() + b"/\n"
        else:
            out.append(member(name + "/", data))
    names = [member("//", table)] if table else []
    return archive.MAGIC + member("/", b"\0\0\0\0") + b"".join(names + out)


def bsd(members: list[tuple[str, bytes]]) -> bytes:
    """A BSD archive: every name `#1/N`, the name first in the data."""
    out = [member(f"#1/{len(n)}", n.encode() + d) for n, d in members]
    return archive.MAGIC + b"".join(out)


WASM_O = (WASM / "wasm_o1.o").read_bytes()


@pytest.mark.parametrize("writer", [gnu, bsd])
def test_members_are_summed_and_listed(writer: object) -> None:
    assert callable(writer)
    long = "a_member_with_a_long_name.o"
    data = writer([("one.o", WASM_O), (long, WASM_O), ("notes.txt", b"hello")])
    (image,) = load_bytes("lib.a", data)
    assert (image.kind, image.fmt, image.arch) == ("archive", "WebAssembly", "wasm32")
    (alone,) = load_bytes("one.o", WASM_O)
    sections = views.by_sections(image)
    rows = {r.label: r for r in sections.rows}
    for r in views.by_sections(alone).rows:
        if not r.label.startswith("["):
            assert rows[r.label].file == 2 * r.file  # both members' bytes, summed
    assert sections.file_total == len(data)
    members = {r.label: r.file for r in views.by_segments(image).rows}
    assert members["lib.a(one.o)"] == members[f"lib.a({long})"] == len(WASM_O)
    assert members[archive.OTHER] == 5
    symbols = views.by_symbols(image, 0)
    assert symbols.file_total == len(data)
    once = {r.label: r.file for r in views.by_symbols(alone, 0).rows}
    twice = {r.label: r.file for r in symbols.rows}
    named = [lb for lb in once if not lb.startswith("[")]
    assert named and all(twice[lb] == 2 * once[lb] for lb in named)
    assert "2 members summed" in image.notes[0] and "1 not ELF" in image.notes[0]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (archive.MAGIC + b"short", "archive member header at offset 8"),
        (archive.MAGIC + header("x.o/", 10**9), "runs past the end of the file"),
        (archive.MAGIC + header("x.o/", 4)[:-2] + b"??abcd", "does not end in"),
        (archive.MAGIC + header("x.o/", 0).replace(b"0         `", b"-5        `"), "not a number"),
        (archive.MAGIC + member("/99", b"ab"), "long-name table of 0 bytes"),
        (archive.MAGIC + member("#1/4000", b"ab"), "is longer than the member"),
        (archive.THIN + member("x.o/", b""), "a thin archive"),
        # latin-1 superscript digits: str.isdigit() takes them, int() does not
        (archive.MAGIC + header("x.o/", 0).replace(b"0         `", b"\xb2         `"), "'²'"),
        (archive.MAGIC + member("#1/2", b"ab").replace(b"#1/2 ", b"#1/\xb2 "), "'²' is not"),
        (archive.MAGIC + member("x.o/", b"\x7fELF\x02\x01"), "x.o"),  # a broken member, named
    ],
)
def test_bad_archives_fail_in_one_line(data: bytes, message: str) -> None:
    with pytest.raises(ParseError) as e:
        load_bytes("bad.a", data)
    text = str(e.value)
    assert message in text and "\n" not in text and "bad.a" in text


def test_a_long_name_reference_of_a_non_ascii_digit_is_a_plain_name() -> None:
    """`/¹` (0xB9) is not `/N`: a member of that name, not an offset int() cannot read."""
    data = archive.MAGIC + member("//", b"a/\n\n") + member("/1", b"xx").replace(b"/1 ", b"/\xb9 ")
    (image,) = load_bytes("odd.a", data)
    assert [m.name for m in archive.members(Blob("odd.a", data))][-1] == "/\xb9"
    assert views.by_sections(image).file_total == len(data)


def test_an_empty_archive_is_its_header() -> None:
    (image,) = load_bytes("empty.a", archive.MAGIC)
    assert [(r.label, r.file) for r in views.by_sections(image).rows] == [(archive.HEADERS, 8)]


def _size_a(path: Path) -> dict[str, int]:
    """Each section's size summed over the members, as `size -A` prints them."""
    total: dict[str, int] = {}
    for line in run([tool("size"), "-A", str(path)]).splitlines():
        m = re.match(r"^(\S+)\s+(\d+)\s+\d+$", line)
        if m and m.group(1) != "Total":
            total[m.group(1)] = total.get(m.group(1), 0) + int(m.group(2))
    return total


@pytest.mark.slow
def test_gnu_archive_against_ar_and_size(built: Built, tmp_path: Path) -> None:
    objects = [built.path("hello_elf.o"), built.path("shapes_elf.o")]
    long = tmp_path / "an_object_with_a_name_past_15.o"
    shutil.copy(objects[0], long)
    lib = tmp_path / "libsize.a"
    subprocess.run([tool("ar"), "rcs", str(lib), *map(str, objects), str(long)], check=True)
    names = run([tool("ar"), "t", str(lib)]).split()
    (image,) = load(lib)
    listed = [r.label for r in image.segments if r.label.startswith("libsize.a(")]
    assert listed == [f"libsize.a({n})" for n in names]
    sizes = _size_a(lib)
    b = views.by_sections(image)
    assert b.file_total == lib.stat().st_size
    for r in b.rows:
        if r.label in sizes:
            assert max(r.file, r.vm) == sizes[r.label], r.label
    # the symbols of each member as the object alone gives them, all of them
    alone = [views.by_symbols(load(p)[0], 0) for p in (*objects, long)]
    counts = [int(b.symbols.split()[0]) for b in alone]
    assert views.by_symbols(image, 0).symbols == f"{sum(counts)} symbols from .symtab"
    summed: dict[str, int] = {}
    for one in alone:
        for r in one.rows:
            if not r.label.startswith("["):
                summed[r.label] = summed.get(r.label, 0) + r.file
    rows = {r.label: r.file for r in views.by_symbols(image, 0).rows}
    assert summed and all(rows[lb] == n for lb, n in summed.items())


@pytest.mark.slow
def test_bsd_archive_of_macho_objects(built: Built, tmp_path: Path) -> None:
    lib = tmp_path / "libmac.a"
    objects = [str(built.path("hello_arm64.o")), str(built.path("shapes_arm64.o"))]
    subprocess.run([tool("llvm-ar"), "rcs", "--format=darwin", str(lib), *objects], check=True)
    assert run([tool("llvm-ar"), "t", str(lib)]).split() == ["hello_arm64.o", "shapes_arm64.o"]
    (image,) = load(lib)
    assert (image.fmt, image.arch, image.kind) == ("Mach-O 64-bit", "arm64", "archive")
    alone = [load(o)[0] for o in objects]
    text = [sum(r.length for r in i.sections if r.label == "__TEXT,__text") for i in alone]
    rows = {r.label: r for r in views.by_sections(image).rows}
    assert rows["__TEXT,__text"].file == sum(text)
    assert views.by_sections(image).file_total == lib.stat().st_size
