"""`icount run` end to end, against programs whose instruction cost is known by construction."""

from __future__ import annotations

import itertools
import json
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from icount.backends import perf

Icount = Callable[..., Any]

pytestmark = pytest.mark.slow

# Exactly 2 instructions per iteration (sub, jnz), whatever the compiler does around it.
LOOP_C = r"""
#include <stdlib.h>
int main(int argc, char **argv) {
    long k = argc > 1 ? atol(argv[1]) : 0;
    if (k > 0) __asm__ volatile("1: sub $1, %0\n\tjnz 1b" : "+r"(k));
    return 0;
}
"""
LOOP_COST = 2

# Each run adds 20k iterations more than the last (a counter in a file): counts differ by far
# more than 1% between processes.
GROWING_C = r"""
#include <stdio.h>
int main(int argc, char **argv) {
    long n = 0;
    FILE *f = fopen(argv[1], "r");
    if (f) { if (fscanf(f, "%ld", &n) != 1) n = 0; fclose(f); }
    f = fopen(argv[1], "w"); fprintf(f, "%ld\n", n + 1); fclose(f);
    long k = 20000 * (n + 1);
    __asm__ volatile("1: sub $1, %0\n\tjnz 1b" : "+r"(k));
    return 0;
}
"""

SEGV_C = r"""
int main(void) { volatile int *p = 0; return *p; }
"""

needs_x86 = pytest.mark.skipif(
    platform.machine() != "x86_64", reason="the known-cost loop is x86-64 assembly"
)


def _median(path: Path) -> float:
    doc = json.loads(path.read_text())
    (cell,) = doc["cells"]
    assert cell["valid"], cell["reason"]
    return float(cell["median"])


def _ground_truth(icount: Icount, backend: str, exe: Path, tmp_path: Path) -> None:
    k = 200_000
    medians = []
    for n in (k, 2 * k):
        # A relative -o: results and artifacts land beside the caller, not in the run's dir.
        done = icount(
            "run",
            "-q",
            "--backend",
            backend,
            "--runs",
            "3",
            "-o",
            f"k{n}.json",
            "--",
            str(exe),
            str(n),
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        medians.append(_median(tmp_path / f"k{n}.json"))
        assert (tmp_path / f"k{n}.artifacts" / "loop" / "run-1" / "stdout").exists()
    difference = medians[1] - medians[0]
    assert abs(difference - k * LOOP_COST) <= 0.001 * k * LOOP_COST, (medians, difference)


@needs_x86
def test_doubling_k_adds_exactly_k_times_the_loop_cost_callgrind(
    icount: Icount, need_valgrind: None, compile_c: Callable[[str, str], Path], tmp_path: Path
) -> None:
    _ground_truth(icount, "callgrind", compile_c("loop", LOOP_C), tmp_path)


@needs_x86
def test_doubling_k_adds_exactly_k_times_the_loop_cost_perf(
    icount: Icount, compile_c: Callable[[str, str], Path], tmp_path: Path
) -> None:
    probe = perf.counter_probe()
    if not probe.usable:
        pytest.skip(f"perf cannot count instructions:u on this machine: {probe.why}")
    _ground_truth(icount, "perf", compile_c("loop", LOOP_C), tmp_path)


@needs_x86
def test_spread_rule_and_determinism(
    icount: Icount, need_valgrind: None, compile_c: Callable[[str, str], Path], tmp_path: Path
) -> None:
    loop = compile_c("loop", LOOP_C)
    growing = compile_c("growing", GROWING_C)
    counter = tmp_path / "counter"
    cmds = ["--cmd", f"stable={loop} 1000", "--cmd", f"varying={growing} {counter}"]
    outputs: dict[str, list[str]] = {}
    for i in (1, 2):
        counter.write_text("0\n")
        out = tmp_path / f"r{i}.json"
        done = icount(
            "run", "-q", "--backend", "callgrind", "-o", str(out), "--format", "md", *cmds
        )
        assert done.returncode == 5, done.stderr  # one cell is invalid
        assert "1 of 2 cells are not valid" in done.stderr
        outputs.setdefault("md", []).append(done.stdout)
        outputs.setdefault("json", []).append(out.read_text())
        for fmt in ("csv", "table"):
            outputs.setdefault(fmt, []).append(icount("table", "-f", fmt, str(out)).stdout)
    for fmt, (first, second) in outputs.items():
        assert first == second, f"{fmt} output differs between two invocations"
    md = outputs["md"][0]
    assert "| stable |" in md and "| varying | - [1] |" in md
    assert "[1] varying/callgrind: spread" in md and "is not below --max-spread 1%" in md
    cells = {c["name"]: c for c in json.loads(outputs["json"][0])["cells"]}
    assert cells["stable"]["valid"] and cells["stable"]["spread"] == 0
    samples = [r["value"] for r in cells["varying"]["runs"]]
    # 20k more iterations of 2 instructions per run (number parsing differs by a few).
    assert [round(b - a, -2) for a, b in itertools.pairwise(samples)] == [40000, 40000]


def test_missing_command_is_one_line_exit_4(icount: Icount, tmp_path: Path) -> None:
    done = icount("run", "-o", str(tmp_path / "r.json"), "--", "no-such-program-xyz")
    assert done.returncode == 4
    assert done.stderr.strip() == (
        "icount: error: command not found: no-such-program-xyz (check the name and your PATH)"
    )
    assert not (tmp_path / "r.json").exists()


def test_segfault_marks_the_cell_invalid(
    icount: Icount, need_valgrind: None, compile_c: Callable[[str, str], Path], tmp_path: Path
) -> None:
    segv = compile_c("segv", SEGV_C)
    done = icount(
        "run", "-q", "--backend", "callgrind", "-o", str(tmp_path / "r.json"), "--", str(segv)
    )
    assert done.returncode == 5
    assert "Traceback" not in done.stderr
    assert "- [1]" in done.stdout
    assert "[1] segv/callgrind: run 1 of 3: killed by SIGSEGV" in done.stdout
    assert "1 of 1 cell is not valid" in done.stderr


# The parent runs K iterations, then forks a child that runs K more without exec: a
# child under callgrind inherits the costs its parent gathered since its last dump, so
# summing the two profiles would count the parent's loop twice (+3 x 2K from K to 2K).
FORKING_C = r"""
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void loop(long k) { if (k > 0) __asm__ volatile("1: sub $1, %0\n\tjnz 1b" : "+r"(k)); }
int main(int argc, char **argv) {
    long k = argc > 1 ? atol(argv[1]) : 0;
    loop(k);
    pid_t pid = fork();
    if (pid == 0) { loop(k); _exit(0); }
    waitpid(pid, 0, 0);
    return 0;
}
"""


@needs_x86
def test_a_forked_child_is_counted_once(
    icount: Icount, need_valgrind: None, compile_c: Callable[[str, str], Path], tmp_path: Path
) -> None:
    exe = compile_c("forking", FORKING_C)
    k = 200_000
    medians = []
    for n in (k, 2 * k):
        done = icount("run", "-q", "--backend", "callgrind", "--runs", "1", "-o", f"f{n}.json",
                      "--", str(exe), str(n), cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
        medians.append(_median(tmp_path / f"f{n}.json"))
        doc = json.loads((tmp_path / f"f{n}.json").read_text())
        assert doc["cells"][0]["runs"][0]["detail"]["processes"] == 2
    # parent and child each run K more iterations: 2 x K x 2 instructions, not 3 x
    difference = medians[1] - medians[0]
    assert abs(difference - 2 * k * LOOP_COST) <= 0.001 * k * LOOP_COST, (medians, difference)


def test_jobs_2_counts_exactly_what_jobs_1_counts_python(
    icount: Icount, need_valgrind: None, tmp_path: Path
) -> None:
    """Python hashes its work dir's name (HOME, sys.path): a cell runs in a work dir named
    after it, whichever job runs it, so --jobs 2 reads --jobs 1's counts exactly."""
    medians = []
    for jobs in ("1", "2"):
        out = tmp_path / f"jobs{jobs}.json"
        done = icount("run", "-q", "--backend", "callgrind", "--runs", "1", "--jobs", jobs,
                      "--cmd", "a=python3 -c pass", "--cmd", "b=python3 -c pass", "-o",
                      str(out), cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
        cells = json.loads(out.read_text())["cells"]
        assert all(c["valid"] for c in cells), cells
        medians.append({c["name"]: c["median"] for c in cells})
    assert medians[0] == medians[1]


def test_resume_measures_only_the_missing_commands_cli(
    icount: Icount, need_valgrind: None, tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    args = ["run", "--backend", "callgrind", "--runs", "1", "--cmd", "a=true", "--cmd", "b=true"]
    first = icount(*args, "-q", "-o", str(out), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    doc = json.loads(out.read_text())
    whole = doc["cells"]
    doc["cells"] = whole[:1]  # an interrupted session: only the first command was saved
    out.write_text(json.dumps(doc))
    cmds = ["--cmd", "a=true", "--cmd", "b=true"]  # given again: never the file's
    again = icount("run", "--resume", str(out), *cmds, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "b: run 1/1" in again.stderr and "a: run 1/1" not in again.stderr
    assert json.loads(out.read_text())["cells"] == whole
    other = icount("run", "--resume", str(out), *cmds, "--runs", "2", "-q", cwd=tmp_path)
    assert other.returncode == 2
    assert other.stderr.strip().splitlines() == [
        "icount: error: a/callgrind in the file to resume was measured with other parameters "
        "(runs 1 there, 2 now) (use the same options, or start a new results file with -o)"
    ]


def test_resume_of_a_path_through_dot_dot_continues_the_file(
    icount: Icount, need_valgrind: None, tmp_path: Path
) -> None:
    """--resume sub/../r.json was refused as 'r.json exists; refusing to overwrite it':
    the output is named normalised, and the file to resume was not."""
    out = tmp_path / "r.json"
    first = icount("run", "--backend", "callgrind", "--runs", "1", "-q", "-o", str(out),
                   "--cmd", "a=true", cwd=tmp_path)  # fmt: skip
    assert first.returncode == 0, first.stderr
    (tmp_path / "sub").mkdir()
    again = icount("run", "--resume", "sub/../r.json", "--cmd", "b=true", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert [c["name"] for c in json.loads(out.read_text())["cells"]] == ["a", "b"]
