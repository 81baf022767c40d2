"""Views of symbols say when a file is stripped (issue 31): in the title, the notes, JSON
and CSV; the symbols counted are those `nm` lists, aliases once."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from icount.size import load, render, views

from .conftest import LD64, MACHO_FAT, MACHO_THIN, ROOT, Built, run, tool

WASM = ROOT / "fixtures" / "size" / "wasm"


def icount(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "icount", "size", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=True,
    )
    return done.stdout


def nm_addresses(path: Path, dynamic: bool) -> int:
    """Distinct addresses of the defined, sized symbols `nm` lists (aliases share one)."""
    argv = [tool("nm"), "--defined-only", "-S", *(["-D"] if dynamic else []), str(path)]
    found = set()
    for line in run(argv).splitlines():
        parts = line.split()
        if len(parts) == 4 and int(parts[1], 16) > 0 and parts[2] not in "aAUwv":
            found.add(parts[0])
    return len(found)


def test_a_wasm_module_without_a_name_section_is_stripped() -> None:
    b = views.by_symbols(load(WASM / "wasm_stripped.wasm")[0], 0)
    assert b.stripped and b.symbols.startswith("stripped: no name section; ")
    assert b.notes[0].startswith(b.symbols)
    t = render.table([b], "symbols")
    assert t.title == "wasm_stripped.wasm: WebAssembly module, wasm32, stripped"
    named = views.by_symbols(load(WASM / "wasm_o1.wasm")[0], 0)
    assert not named.stripped and named.symbols.endswith("from the name section")
    assert not str(render.table([named], "symbols").title).endswith("stripped")


@pytest.mark.slow
def test_stripped_elf_says_so_in_every_format(built: Built, tmp_path: Path) -> None:
    """libsize.so stripped: its exports from .dynsym, counted as nm -D counts them."""
    lib = tmp_path / "libsize.so"
    subprocess.run(
        [tool("strip"), "-o", str(lib), str(built.path("libsize.so"))], check=True, timeout=60
    )
    n = nm_addresses(lib, dynamic=True)
    said_in_every_format(lib, f"stripped: no .symtab; {n} symbols from .dynsym")


def said_in_every_format(path: Path, said: str) -> None:
    """`said` in the table (its title ending `, stripped`), Markdown, JSON, CSV and a
    grouped view of symbols; the sections view reads no symbols and says nothing."""
    table = icount("--by", "symbols", str(path))
    assert table.splitlines()[0].rstrip().endswith(", stripped") and said in table
    assert said in icount("--by", "symbols", "-f", "md", str(path))
    image = json.loads(icount("--by", "symbols", "-f", "json", str(path)))["images"][0]
    assert image["stripped"] is True and image["symbols"] == said
    rows = list(csv.DictReader(io.StringIO(icount("--by", "symbols", "-f", "csv", str(path)))))
    assert {r["symbols"] for r in rows} == {said}
    assert said in icount("--by", "namespaces", str(path))  # every view of symbols says it
    assert "stripped" not in icount(str(path)).splitlines()[0]


@pytest.mark.slow
def test_a_stripped_executable_without_exports_has_only_sections(built: Built) -> None:
    path = built.path("hello_elf_stripped")
    assert nm_addresses(path, dynamic=True) == 0
    b = views.by_symbols(load(path)[0], 0)
    assert b.symbols == "no symbols: only sections (.dynsym names none in a section)"
    assert b.stripped and str(render.table([b], "symbols").title).endswith(", no symbols")
    assert all(r.label.startswith("[") or r.label.startswith(".") for r in b.rows)


@pytest.mark.slow
def test_an_unstripped_file_counts_its_symtab(built: Built) -> None:
    path = built.path("hello_elf")
    b = views.by_symbols(load(path)[0], 0)
    assert not b.stripped
    assert b.symbols == f"{nm_addresses(path, dynamic=False)} symbols from .symtab"


@pytest.mark.slow
def test_a_system_binary(tmp_path: Path) -> None:
    """/usr/bin/true as Debian ships it: stripped, a few data symbols exported."""
    path = Path("/usr/bin/true")
    if not path.exists() or "symtab" in run([tool("readelf"), "-S", "-W", str(path)]):
        pytest.skip("no stripped /usr/bin/true here")
    b = views.by_symbols(load(path)[0], 0)
    n = nm_addresses(path, dynamic=True)
    assert b.symbols == (
        f"stripped: no .symtab; {n} symbols from .dynsym"
        if n
        else "no symbols: only sections (.dynsym names none in a section)"
    )


# static functions kept apart (noinline): what `strip -x` takes the names of
STATICS = """int printf(const char *, ...);
__attribute__((noinline)) static int helper(int a) { return a * 3 + 1; }
__attribute__((noinline)) static int other(int a) { return helper(a) ^ 7; }
int main(int argc, char **argv) { printf("%d\\n", other(argc)); return 0; }
"""


def function_starts(path: Path, arch: str | None = None) -> set[int]:
    """The function starts `llvm-objdump --macho --function-starts` lists (of a fat
    file's slice taken out by llvm-lipo: llvm-objdump 14 lists the first slice's, whatever
    --arch-name says)."""
    if arch:
        thin = path.with_name(f"{path.name}.{arch}")
        run([tool("llvm-lipo", "llvm-lipo-14"), str(path), "-thin", arch, "-output", str(thin)])
        path = thin
    argv = [tool("llvm-objdump", "llvm-objdump-14"), "--macho", "--function-starts", str(path)]
    lines = run(argv).splitlines()
    return {int(line.split()[0], 16) for line in lines if line[:1].isdigit()}


def nm_macho(path: Path, arch: str | None = None) -> set[int]:
    """Addresses of the symbols defined in a section, as `llvm-nm -m` lists them."""
    argv = [tool("llvm-nm", "llvm-nm-14"), "-m", "--defined-only", str(path)]
    argv += [f"--arch={arch}"] if arch else []
    return {int(line.split()[0], 16) for line in run(argv).splitlines() if "(__" in line}


def statics(tmp_path: Path, strip: list[str] | None) -> Path:
    """STATICS linked for arm64 by ld64.lld, then `llvm-strip STRIP` on a copy (None: as
    linked)."""
    if not Path(LD64).exists():
        pytest.skip("ld64.lld is not installed")
    src, obj, exe = tmp_path / "statics.c", tmp_path / "statics.o", tmp_path / "statics"
    src.write_text(STATICS)
    target = ["-target", "arm64-apple-macos11"]
    run([tool("clang"), *target, "-O1", "-c", str(src), "-o", str(obj)])
    tbd = ROOT / "fixtures" / "size" / "src" / "libSystem.tbd"
    platform = ["-platform_version", "macos", "11.0", "11.0"]
    run([LD64, "-arch", "arm64", *platform, "-o", str(exe), str(obj), str(tbd)])
    if strip is None:
        return exe
    out = tmp_path / f"statics{''.join(strip)}"
    run([tool("llvm-strip", "llvm-strip-14"), *strip, "-o", str(out), str(exe)])
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", [*MACHO_THIN, *MACHO_FAT])
def test_a_mach_o_file_with_every_function_named_is_not_stripped(
    built: Built, tmp_path: Path, name: str
) -> None:
    """The fixtures as linked: each function llvm-objdump lists starts at a symbol
    llvm-nm lists (object files list none), and no view says stripped."""
    path = tmp_path / name
    path.write_bytes(built.path(name).read_bytes())
    for image in load(path):
        arch = image.arch if image.fat else None
        assert function_starts(path, arch) <= nm_macho(path, arch)
        b = views.by_symbols(image, 0)
        assert not b.stripped and b.symbols.endswith(" from LC_SYMTAB"), b.symbols


@pytest.mark.slow
def test_a_mach_o_stripped_of_its_locals_says_so_in_every_format(tmp_path: Path) -> None:
    """`strip -x`: the two static functions lose their names, main keeps its own; the
    functions unnamed are those llvm-objdump lists that llvm-nm names not."""
    path = statics(tmp_path, ["-x"])
    starts = function_starts(path)
    unnamed = starts - nm_macho(path)
    assert (len(unnamed), len(starts)) == (2, 3)
    said_in_every_format(path, "stripped: no names for 2 of 3 functions; 1 symbol from LC_SYMTAB")
    exe = statics(tmp_path, None)  # as linked: every function named, nothing stripped
    assert function_starts(exe) == starts <= nm_macho(exe)
    whole = views.by_symbols(load(exe)[0], 0)
    # llvm-nm's symbols but __mh_execute_header, which lies before any section
    assert (
        not whole.stripped and whole.symbols == f"{len(nm_macho(exe)) - 1} symbols from LC_SYMTAB"
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hello_arm64", "libmac_arm64.dylib", "hello_fat"])
def test_a_mach_o_stripped_of_all_symbols_has_only_sections(
    built: Built, tmp_path: Path, name: str
) -> None:
    """`llvm-strip` (all symbols): what is left names nothing llvm-nm puts in a function."""
    path = tmp_path / name
    run([tool("llvm-strip", "llvm-strip-14"), "-o", str(path), str(built.path(name))])
    for image in load(path):
        arch = image.arch if image.fat else None
        assert not function_starts(path, arch) & nm_macho(path, arch)
        b = views.by_symbols(image, 0)
        assert b.stripped and b.symbols.startswith("no symbols: only sections ("), b.symbols
        assert str(render.table([b], "symbols").title).endswith(", no symbols")
