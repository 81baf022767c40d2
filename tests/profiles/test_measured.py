"""Profiles measured under callgrind, against programs whose costs are known by
construction: a known number of allocations per run, and two builds that differ by one
named function of known cost."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Icount

N_ALLOC = 37  # malloc, calloc and realloc calls per run; 35 frees
PROGRAM = r"""
#include <stdlib.h>
void *volatile keep[64];
int main(void) {
    for (int i = 0; i < 30; i++) keep[i] = malloc(16 + i);
    for (int i = 30; i < 35; i++) keep[i] = calloc(2, 8);
    for (int i = 30; i < 32; i++) keep[i] = realloc(keep[i], 64);
    for (int i = 0; i < 35; i++) free(keep[i]);
    return 0;
}
"""
# `extra` loops K times (two instructions an iteration: dec, jnz); the builds differ in K
BUILD = r"""
__attribute__((noinline)) void extra(void) { for (long i = %d; i; i--) __asm__ volatile(""); }
__attribute__((noinline)) long work(long n) {
    volatile long s = 0; for (long i = 0; i < n; i++) s += i; return s; }
int main(void) { extra(); return (int)(work(5000) & 0); }
"""


def _run(icount: Icount, exe: Path, out: Path, name: str) -> dict[str, object]:
    done = icount("run", "--runs", "2", "--name", name, "-o", str(out), "-q", "--", str(exe))
    assert done.returncode == 0, done.stderr
    cell: dict[str, object] = json.loads(out.read_text())["cells"][0]
    return cell


@pytest.mark.slow
def test_allocations_per_run_are_exact(
    need_valgrind: None, icount: Icount, compile_c: Callable[[str, str], Path], tmp_path: Path
) -> None:
    # through a volatile array: gcc cannot fold a malloc and its free away
    exe = compile_c("allocs", PROGRAM)
    cell = _run(icount, exe, tmp_path / "a.json", "allocs")
    profile = cell["profile"]
    assert isinstance(profile, dict)
    assert profile["allocations"] == N_ALLOC and profile["frees"] == 35
    assert profile["per"] == "run" and profile["windows"] == 2
    table = icount("table", str(tmp_path / "a.json"))
    assert "allocs/run" in table.stdout and " 37\n" in table.stdout, table.stdout
    csv = icount("table", str(tmp_path / "a.json"), "-f", "csv").stdout.splitlines()
    assert csv[0].endswith(",allocations,frees") and csv[1].endswith(",37,35")


@pytest.mark.slow
def test_compare_names_the_function_that_changed_with_its_exact_delta(
    need_valgrind: None, icount: Icount, compile_c: Callable[[str, str], Path], tmp_path: Path
) -> None:
    base = _run(icount, compile_c("k1000", BUILD % 1000), tmp_path / "base.json", "prog")
    new = _run(icount, compile_c("k3000", BUILD % 3000), tmp_path / "new.json", "prog")
    assert base["profile"] and new["profile"]
    done = icount("compare", str(tmp_path / "base.json"), str(tmp_path / "new.json"), "-f", "json")
    assert done.returncode == 3, done.stderr  # a regression
    (row,) = json.loads(done.stdout)["cells"]
    moves = row["explained"]["functions"]
    assert moves[0]["function"] == "extra"
    assert moves[0]["delta"] == 2 * (3000 - 1000) == row["delta"]
    assert moves[0]["share"] == 1.0
    assert len(moves) == 1  # the rest of the profile is unchanged to the instruction
    text = icount("compare", str(tmp_path / "base.json"), str(tmp_path / "new.json")).stdout
    assert (
        "moved most (self instructions per run): extra " in text
        and "(+4,000, x3.00; 100.0% of the cell's change)" in text
    )
    md = icount("compare", str(tmp_path / "base.json"), str(tmp_path / "new.json"), "-f", "md")
    assert (
        "  - `extra` " in md.stdout and "(+4,000, x3.00; 100.0% of the cell's change)" in md.stdout
    )
