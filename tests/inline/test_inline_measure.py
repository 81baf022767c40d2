"""Getting both builds' profiles and binaries (icount/inline/measure.py)."""

from __future__ import annotations

import platform
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from icount import export
from icount.callgrind.parser import parse_file
from icount.export import InlineDoc
from icount.inline import measure

from .common import DATA


def test_missing_binary_is_a_note_not_a_failure() -> None:
    # The profiles' cmd: lines name a relative path, so no binary is known.
    data = measure.compare_builds(
        str(DATA / "O2.callgrind"), str(DATA / "O2-noinline.callgrind"), [], measure.Options()
    )
    for side in ("a", "b"):
        build = data["builds"][side]
        assert (build["symbols"], build["dwarf"]) == (False, False)
        assert build["notes"] == [
            "binary unknown: no sizes or inline sites (pass --exe-" + side + ")"
        ]
    mix = next(r for r in data["only_in_b"] if r["name"] == "mix")
    assert mix["inlined_into_other"] is None and mix["size"] is None
    assert data["inline_sites"] == []
    text = export.render(InlineDoc(data), "table")
    assert "fib -> fib" in text
    assert re.search(r"^mix .* - +\?$", text, re.MULTILINE)  # size "-", DWARF "?"


def test_labels_tell_the_builds_apart() -> None:
    assert measure.labels("out/fib-gcc", "out/fib-clang") == ("fib-gcc", "fib-clang")
    assert measure.labels("gcc/fib", "clang/fib") == ("gcc/fib", "clang/fib")
    # Equal labels get a prefix in the report.
    data = measure.compare_builds(
        str(DATA / "O2.callgrind"), str(DATA / "O2.callgrind"), [], measure.Options()
    )
    assert (data["builds"]["a"]["label"], data["builds"]["b"]["label"]) == (
        "A: inline/O2.callgrind",
        "B: inline/O2.callgrind",
    )
    assert data["total_delta"] == 0 and data["functions"] == []


def test_is_callgrind_file() -> None:
    assert measure.is_callgrind_file(DATA / "O2.callgrind")
    assert not measure.is_callgrind_file(DATA / "inline-O2")
    assert not measure.is_callgrind_file(DATA / "missing")


# The parent runs K iterations of a two-instruction loop and forks; in build B the child
# runs K more, in build A it exits at once. Every process counted, B runs 2K instructions
# more than A; with only the last process to exit counted (the parent, which waits for its
# child) both would read the parent's alone.
FORKING_C = r"""
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void loop(long k) { if (k > 0) __asm__ volatile("1: sub $1, %0\n\tjnz 1b" : "+r"(k)); }
int main(int argc, char **argv) {
    long k = argc > 1 ? atol(argv[1]) : 0;
    loop(k);
    pid_t pid = fork();
    if (pid == 0) { if (CHILD_LOOPS) loop(k); _exit(0); }
    waitpid(pid, 0, 0);
    return 0;
}
"""


@pytest.mark.slow
@pytest.mark.skipif(platform.machine() != "x86_64", reason="the loop is x86-64 assembly")
def test_every_process_of_a_forking_build_is_counted(
    need_valgrind: None, compile_c: Callable[[str, str], Path], tmp_path: Path
) -> None:
    a = compile_c("fork-idle-child", "#define CHILD_LOOPS 0\n" + FORKING_C)
    b = compile_c("fork-busy-child", "#define CHILD_LOOPS 1\n" + FORKING_C)
    k = 200_000
    kept = tmp_path / "kept"
    kept.mkdir()
    # an earlier single-process run's profile goes (it would read as this run's); other files stay
    (kept / "a.callgrind").write_text("stale")
    (kept / "a.callgrind.txt").write_text("the user's")
    opts = measure.Options(top=0, min_share=0.0, keep_dir=kept, dwarf=False)
    data = measure.compare_builds(str(a), str(b), [str(k)], opts)
    totals = {side: data["builds"][side]["total"] for side in ("a", "b")}
    assert abs(totals["b"] - totals["a"] - 2 * k) <= 0.001 * 2 * k, totals
    for side in ("a", "b"):
        assert data["builds"][side]["notes"][0] == "2 processes ran: their profiles are summed"
        # the kept profiles (the parent's dumps at fork, its own and the child's): the total
        profiles = [parse_file(f) for f in kept.glob(f"{side}.callgrind.[0-9]*")]
        assert len({p.pid for p in profiles}) == 2 and not (kept / f"{side}.callgrind").exists()
        assert sum(p.totals["Ir"] for p in profiles) == totals[side]
    assert (kept / "a.callgrind.txt").read_text() == "the user's"
