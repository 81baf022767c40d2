"""A Go binary built here (the go on PATH): its stripped build's `.gopclntab` names every
function `go tool nm` names in the unstripped one, at the same address, and callgrind's
address-named profile of the stripped build, named from it, shows Go's runtime."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from icount.callgrind.functions import window_profile
from icount.callgrind.parser import parse_file
from icount.callgrind.stripped import name_go_functions
from icount.runtimes import runtime_work
from icount.size.gopclntab import go_functions

pytestmark = pytest.mark.slow

# allocates enough that the collector runs, then prints so nothing is optimised away
PROGRAM = """\
package main

import "os"

type node struct {
	next *node
	v    [8]int
}

func build(n int) *node {
	var h *node
	for i := 0; i < n; i++ {
		h = &node{next: h}
		h.v[0] = i
	}
	return h
}

func main() {
	s := 0
	for r := 0; r < 60; r++ {
		for h := build(2000); h != nil; h = h.next {
			s += h.v[0]
		}
	}
	os.Stdout.WriteString(string(rune('a' + s%26)) + "\\n")
}
"""
# `go tool nm` names an assembly function by its ABI (runtime.gogo.abi0), the table by
# its name; an array type's length the table writes as [...]
_ABI = re.compile(r"\.abi0$")
_ARRAY = re.compile(r"\[\d+\]")


# each stripped build and the same link unstripped, for go tool nm: Go's own linker
# (the table in .gopclntab, a PIE's in .data.rel.ro.gopclntab) and gcc's ld (merged
# into .data.rel.ro, found by its header)
BUILDS = {
    "stripped": ["-ldflags=-s -w"],
    "full": [],
    "pie": ["-buildmode=pie", "-ldflags=-s -w"],
    "pie-full": ["-buildmode=pie"],
    "pie-ext": ["-buildmode=pie", "-ldflags=-s -w -linkmode=external"],
    "pie-ext-full": ["-buildmode=pie", "-ldflags=-linkmode=external"],
}


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which("go") is None:
        pytest.skip("go is not installed (scripts/setup.sh installs golang-go)")
    src = tmp_path_factory.mktemp("goprog")
    (src / "main.go").write_text(PROGRAM)
    (src / "go.mod").write_text("module goprog\n\ngo 1.18\n")
    out = {}
    for name, flags in BUILDS.items():
        if "ext" in name and shutil.which("gcc") is None:
            continue  # external linking needs a C linker
        out[name] = src / name
        subprocess.run(["go", "build", "-trimpath", *flags, "-o", name, "."], cwd=src,
                       check=True, capture_output=True)  # fmt: skip
    return out


def _nm(binary: Path) -> set[tuple[int, str]]:
    got = subprocess.run(["go", "tool", "nm", str(binary)], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    out = set()
    for line in got.splitlines():
        parts = line.split(None, 2)
        if (
            len(parts) == 3
            and parts[1] in "Tt"
            and parts[2] not in ("runtime.text", "runtime.etext")
        ):
            out.add((int(parts[0], 16), _ARRAY.sub("[...]", _ABI.sub("", parts[2]))))
    return out


@pytest.mark.parametrize("build", ["stripped", "pie", "pie-ext"])
def test_the_table_names_what_go_tool_nm_names(builds: dict[str, Path], build: str) -> None:
    if build not in builds:
        pytest.skip("gcc is not installed: no external linking (scripts/setup.sh installs it)")
    table = go_functions(str(builds[build]))
    assert table is not None
    got = {(int(table.entries[i]), _ARRAY.sub("[...]", table.name(i))) for i in range(len(table))}
    # the same link unstripped: the same code at the same addresses
    full = _nm(builds[build + "-full" if build != "stripped" else "full"])
    assert got <= full
    # what the table leaves out is the C start-up code an external link adds
    assert sorted(n for _, n in full - got if "." in n) == []
    assert len(got) > 1000  # the runtime's functions, not an empty table read as equal
    assert go_functions(str(builds["full"])) is not None  # unstripped binaries keep it too


@pytest.mark.parametrize("build", ["stripped", "pie-ext"])
def test_a_stripped_go_binarys_profile_shows_its_runtime(
    builds: dict[str, Path], tmp_path: Path, need_valgrind: None, build: str
) -> None:
    """Callgrind names code by its address in the file, which is the table's: a PIE
    loaded elsewhere is named all the same."""
    if build not in builds:
        pytest.skip("gcc is not installed: no external linking (scripts/setup.sh installs it)")
    out = tmp_path / "callgrind.out"
    subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(builds[build])],
        check=True, capture_output=True, timeout=600,
        env={"GODEBUG": "asyncpreemptoff=1", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    prof = parse_file(out)
    assert runtime_work(prof).runtime is None  # every function of the binary an address
    named = name_go_functions(prof)
    binary = str(builds[build])
    left = [f.name for f in named.functions if f.object == binary and f.name.startswith("0x")]
    table = go_functions(binary)
    assert table is not None
    # only the C start-up code an external link adds stays an address: none of Go's
    assert table.index([int(n.split("'")[0], 16) for n in left]) == [-1] * len(left)
    assert int(named.self_cost.sum()) == int(prof.self_cost.sum())
    work = runtime_work(named)
    assert work.runtime == "go"
    assert work.collector > 0 and work.scheduler > 0
    costs = window_profile(named).costs
    assert costs["main.main"].inclusive > costs["runtime.mallocgc"].inclusive > 0
    assert window_profile(named).allocations >= 60 * 2000  # runtime.mallocgc's calls
