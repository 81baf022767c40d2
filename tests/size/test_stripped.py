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

from .conftest import ROOT, Built, run, tool

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
    said = f"stripped: no .symtab; {n} symbols from .dynsym"
    table = icount("--by", "symbols", str(lib))
    assert table.splitlines()[0].rstrip().endswith(", stripped") and said in table
    assert said in icount("--by", "symbols", "-f", "md", str(lib))
    image = json.loads(icount("--by", "symbols", "-f", "json", str(lib)))["images"][0]
    assert image["stripped"] is True and image["symbols"] == said
    rows = list(csv.DictReader(io.StringIO(icount("--by", "symbols", "-f", "csv", str(lib)))))
    assert {r["symbols"] for r in rows} == {said}
    grouped = icount("--by", "namespaces", str(lib))  # every view of symbols says it
    assert said in grouped
    assert "stripped" not in icount(str(lib)).splitlines()[0]  # the sections view reads none


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
