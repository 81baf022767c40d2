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


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which("go") is None:
        pytest.skip("go is not installed (scripts/setup.sh installs golang-go)")
    src = tmp_path_factory.mktemp("goprog")
    (src / "main.go").write_text(PROGRAM)
    (src / "go.mod").write_text("module goprog\n\ngo 1.18\n")
    out = {}
    for name, flags in (("full", []), ("stripped", ["-ldflags=-s -w"]),
                        ("pie", ["-buildmode=pie", "-ldflags=-s -w"])):  # fmt: skip
        out[name] = src / name
        subprocess.run(["go", "build", "-trimpath", *flags, "-o", name, "."], cwd=src,
                       check=True, env=_go_env(src))  # fmt: skip
    return out


def _go_env(src: Path) -> dict[str, str]:
    import os

    return {**os.environ, "GOFLAGS": "-mod=mod", "GOCACHE": str(src / ".cache"),
            "GOPATH": str(src / ".gopath")}  # fmt: skip


def _nm(binary: Path) -> set[tuple[int, str]]:
    got = subprocess.run(["go", "tool", "nm", str(binary)], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    out = set()
    for line in got.splitlines():
        addr, kind, name = line.split(None, 2)
        if kind in "Tt" and name not in ("runtime.text", "runtime.etext"):
            out.add((int(addr, 16), _ARRAY.sub("[...]", _ABI.sub("", name))))
    return out


@pytest.mark.parametrize("build", ["stripped", "pie"])
def test_the_table_names_what_go_tool_nm_names(builds: dict[str, Path], build: str) -> None:
    table = go_functions(str(builds[build]))
    assert table is not None
    got = {(int(table.entries[i]), _ARRAY.sub("[...]", table.name(i))) for i in range(len(table))}
    # the same program and flags but -s -w: the same code at the same addresses
    full = _nm(builds["full"])
    if build == "pie":  # another link: compared by name and order, not by address
        assert sorted(n for _, n in got) == sorted(n for _, n in full)
    else:
        assert got == full
    assert len(got) > 1000  # the runtime's functions, not an empty table read as equal
    assert go_functions(str(builds["full"])) is not None  # unstripped binaries keep it too


def test_a_stripped_go_binarys_profile_shows_its_runtime(
    builds: dict[str, Path], tmp_path: Path, need_valgrind: None
) -> None:
    out = tmp_path / "callgrind.out"
    subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(builds["stripped"])],
        check=True, capture_output=True, timeout=600,
        env={"GODEBUG": "asyncpreemptoff=1", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    prof = parse_file(out)
    assert runtime_work(prof).runtime is None  # every function of the binary an address
    named = name_go_functions(prof)
    binary = str(builds["stripped"])
    left = [f.name for f in named.functions if f.object == binary and f.name.startswith("0x")]
    assert left == []
    assert int(named.self_cost.sum()) == int(prof.self_cost.sum())
    work = runtime_work(named)
    assert work.runtime == "go"
    assert work.collector > 0 and work.scheduler > 0
    costs = window_profile(named).costs
    assert costs["main.main"].inclusive > costs["runtime.mallocgc"].inclusive > 0
    assert window_profile(named).allocations >= 60 * 2000  # runtime.mallocgc's calls
