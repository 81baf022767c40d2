"""Flame graphs of real callgrind profiles of C programs (icount/charts/flame.py over
callgrind/functions.py): each function's box holds callgrind's own inclusive figure,
the start-up code is a chain (not a cycle through `(below main)`), its root is the
program's entry, and the differential graph colours a function by its whole change."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from icount.callgrind.functions import window_profile
from icount.callgrind.parser import parse_file
from icount.charts.figure import inline
from icount.charts.flame import Mark, _graph, _layers, flame_figure
from icount.results.cell_profile import PER_RUN, CellProfile, cell_profile
from icount.startup import PROGRAM_ENTRY
from icount.window_profile import UNNAMED

ROOT = Path(__file__).resolve().parents[2]
FIB = ROOT / "fixtures" / "callgrind" / "fib.out"  # gcc -O1 -g, dynamic loader and libc
START_UP = [PROGRAM_ENTRY, "_start", "__libc_start_main@@GLIBC_2.34", "(below main)", "main"]


def _profile(path: Path) -> CellProfile:
    p = cell_profile([(window_profile(parse_file(path)), 1)], PER_RUN)
    assert p is not None
    return p


def _marks(p: CellProfile) -> tuple[list[Mark], float]:
    return _layers(_graph(p.flame()))


def _chain(marks: list[Mark]) -> list[Mark]:
    """The marks from the root down to `main`."""
    main = next(m for m in marks if m.name == "main")
    return [next(m for m in marks if m.path == main.path[: k + 1]) for k in range(main.depth + 1)]


def test_the_start_up_code_of_a_real_profile_is_a_chain_from_the_program_entry() -> None:
    prof = parse_file(FIB)
    marks, total = _marks(_profile(FIB))
    assert total == prof.totals["Ir"]  # the roots hold the cell, no more
    chain = _chain(marks)
    assert [m.name for m in chain] == START_UP
    # one root, the loader's entry: callgrind names it by address, and it is not pooled
    # with the code without a symbol
    assert [m.name for m in marks if m.depth == 0] == [PROGRAM_ENTRY]
    assert UNNAMED not in [m.name for m in chain]
    # each box of the chain holds the whole of the function, as callgrind counted it
    costs = window_profile(prof).costs
    for m in chain[1:]:
        assert m.value == costs[m.name].inclusive
    into_main = [int(prof.call_cost[k, 0]) for k in range(len(prof.call_cost))
                 if prof.functions[int(prof.call_callee[k])].name == "main"]  # fmt: skip
    assert chain[-1].value == sum(into_main) > 0  # the call (below main) -> main
    assert sum(1 for m in marks if m.name == "main") == 1  # drawn whole, not split


def _annotate_inclusive(path: Path) -> dict[str, list[int]]:
    """callgrind_annotate --inclusive=yes: each function's figures by name (one per
    file it is listed under)."""
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", "--auto=no", str(path)],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    start = next(i for i, line in enumerate(out) if line.rstrip().endswith("file:function"))
    found: dict[str, list[int]] = defaultdict(list)
    for line in out[start + 2 :]:
        m = re.match(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S.*?)(?: \[.*\])?$", line)
        if m is None:
            break
        found[m.group(2).partition(":")[2]].append(int(m.group(1).replace(",", "")))
    return found


PROGRAM = r"""
#include <stdio.h>
__attribute__((noinline)) static long work(long n) {
    long acc = 0;
    for (long i = 0; i < n; i++) acc += i * i % 7;
    return acc;
}
__attribute__((noinline)) static long more(long n) { return work(n) + work(n / 2); }
int main(int argc, char **argv) {
    (void)argv;
    long acc = work(20000 * argc);
#ifdef MORE
    acc += more(8000);
#endif
    printf("%ld\n", acc);
    return 0;
}
"""


@pytest.mark.slow
@pytest.mark.skipif(
    not all(shutil.which(t) for t in ("gcc", "valgrind", "callgrind_annotate")),
    reason="needs gcc, valgrind and callgrind_annotate",
)
def test_flame_graphs_of_two_gcc_builds_hold_callgrind_annotates_figures(tmp_path: Path) -> None:
    source = tmp_path / "prog.c"
    source.write_text(PROGRAM)
    profiles = {}
    for name, flags in (("base", ["-O2"]), ("new", ["-O3", "-DMORE"])):
        exe = tmp_path / name
        subprocess.run(["gcc", "-g", *flags, "-o", str(exe), str(source)], check=True)
        out = tmp_path / f"{name}.callgrind"
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(exe)],
                       check=True, capture_output=True)  # fmt: skip
        profiles[name] = out
    for out in profiles.values():
        reference = _annotate_inclusive(out)["main"]
        assert len(reference) == 1  # main listed once: nothing of it inlined from a header
        marks, total = _marks(_profile(out))
        chain = _chain(marks)
        assert [m.name for m in chain] == START_UP
        assert chain[-1].value == pytest.approx(reference[0], rel=1e-3)
        assert total == parse_file(out).totals["Ir"]
    base, new = _profile(profiles["base"]), _profile(profiles["new"])
    body = inline(flame_figure(new, "prog", "d", base))  # type: ignore[arg-type]
    classes = dict(re.findall(r'<title>([^:<]+): [^<]*</title><rect class="(\w+)"', body))
    # main, and every caller above it, did more (more(8000): 12,000 more loop turns)
    assert [classes[n] for n in START_UP] == ["reg"] * len(START_UP)
    assert [classes[n] for n in classes if n.startswith("more")] == ["reg"]  # or a clone
    grew = _annotate_inclusive(profiles["new"])["main"][0]
    grew -= _annotate_inclusive(profiles["base"])["main"][0]
    assert f"(+{grew:,})" in body  # main's whole change, said in its title


WORKLOAD = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) long fib(long n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
__attribute__((noinline)) long helper(long n) {
    long s = 0;
    for (long i = 0; i < n; i++) s += i * i ^ (s >> 3);
    return s;
}
__attribute__((noinline)) long left(long n) { return helper(n) + 1; }
__attribute__((noinline)) long right(long n) { return helper(3 * n) + 2; }
__attribute__((noinline)) long ping(long n);
__attribute__((noinline)) long pong(long n) { return n <= 0 ? 0 : ping(n - 1) + 1; }
__attribute__((noinline)) long ping(long n) {
    long s = 0;
    for (int i = 0; i < 50; i++) s += i ^ n;
    return n <= 0 ? s : pong(n - 1) + s;
}
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20;
    printf("%ld\n", fib(n) + left(1000) + right(1000) + ping(30));
#ifdef EXIT
    exit(0);
#endif
    return 0;
}
"""


def _measure(tmp_path: Path, name: str, flags: list[str]) -> Path:
    source = tmp_path / "workload.c"
    source.write_text(WORKLOAD)
    exe = tmp_path / name
    subprocess.run(["gcc", *flags, "-o", str(exe), str(source)], check=True)
    out = tmp_path / f"{name}.callgrind"
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(exe)],
                   check=True, capture_output=True)  # fmt: skip
    return out


@pytest.mark.slow
@pytest.mark.skipif(
    not all(shutil.which(t) for t in ("gcc", "valgrind", "callgrind_annotate")),
    reason="needs gcc, valgrind and callgrind_annotate",
)
@pytest.mark.parametrize(
    "flags", [["-O2", "-g"], ["-O2", "-g", "-DEXIT"], ["-O2", "-g", "-static"]],
    ids=["dynamic", "exit", "static"],
)  # fmt: skip
def test_every_box_of_a_function_called_from_one_place_holds_callgrinds_figure(
    tmp_path: Path, flags: list[str]
) -> None:
    """Recursion (fib), a function with two callers (helper), mutual recursion
    (ping/pong) and, in a static build, glibc's start-up code as callgrind's recursion
    levels of `(below main)`: every box whose path runs through functions called from
    one place each (in callgrind's file) is callgrind_annotate's inclusive figure.
    Recursion levels (`fib'2`) are left out of the check: callgrind_annotate's figures
    for them are known to be wrong."""
    if "-static" in flags and subprocess.run(
        ["gcc", "-static", "-x", "c", "-o", str(tmp_path / "t"), "-"],
        input="int main(void){return 0;}", text=True, capture_output=True,
    ).returncode:  # fmt: skip
        pytest.skip("no static libc to link against")
    out = _measure(tmp_path, "prog", flags)
    reference = _annotate_inclusive(out)
    p = _profile(out)
    g = _graph(p.flame())
    callers: dict[str, int] = defaultdict(int)  # in all the profile's calls, not the kept
    for _, callee in window_profile(parse_file(out)).edges:
        callers[callee] += 1
    marks, total = _layers(g)
    assert total == parse_file(out).totals["Ir"]
    checked = {}
    for m in marks:
        figures = reference.get(m.name, [])
        if (m.depth == 0 or "'" in m.name or len(figures) != 1
                or any(callers[n] != 1 for n in m.path[1:])):  # fmt: skip
            continue
        assert m.value == pytest.approx(figures[0], rel=1e-3), m.path
        checked[m.name] = m.value
    assert {"main", "fib", "left", "right", "ping", "pong"} <= set(checked)
    # helper, called from left and right, split between them by their calls
    helper = [m.value for m in marks if m.name == "helper"]
    assert sum(helper) == pytest.approx(reference["helper"][0], rel=1e-3) and len(helper) == 2


@pytest.mark.slow
@pytest.mark.skipif(
    not all(shutil.which(t) for t in ("gcc", "valgrind", "callgrind_annotate")),
    reason="needs gcc, valgrind and callgrind_annotate",
)
def test_a_stripped_program_keeps_its_start_up_chain(tmp_path: Path) -> None:
    """Without symbols callgrind names the program's `_start` and `main` by address;
    they are still the chain from the program's entry, and main's box is what the same
    code's main costs with its symbols (stripping changes no instruction)."""
    stripped = _measure(tmp_path, "stripped", ["-O2", "-s"])
    whole = _annotate_inclusive(_measure(tmp_path, "symbols", ["-O2", "-g"]))["main"]
    prof = parse_file(stripped)
    assert "main" not in {f.name for f in prof.functions}  # no symbol: named by address
    marks, total = _marks(_profile(stripped))
    chain = _chain(marks)
    assert [m.name for m in chain] == START_UP
    assert total == prof.totals["Ir"]
    assert len(whole) == 1 and chain[-1].value == whole[0]
