"""Peak memory (--memory): from native runs, as GNU time's wait4 reads it for commands,
every process's high-water mark summed for servers."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from icount import export, memory
from icount.errors import ResultsFileError
from icount.results import UNIT_INSTRUCTIONS, Cell, Results, Run
from icount.results.files import from_json, to_json
from tests.conftest import Icount

HERE = Path(__file__).resolve().parent
MIB = 1 << 20

ALLOC_C = r"""
#include <stdlib.h>
#include <string.h>
char *volatile kept;  /* the allocation and its writes are kept by the compiler */
int main(int argc, char **argv) {
    size_t n = (size_t)atol(argv[1]) << 20;
    kept = malloc(n);
    memset(kept, 1, n);
    return 0;
}
"""


def _cell(peaks: list[int], reason: str | None = None) -> Cell:
    doc: dict[str, object] = {"peak_rss_bytes": peaks}
    if reason:
        doc["reason"] = reason
    return Cell("a", "", "callgrind", UNIT_INSTRUCTIONS, (Run(10.0, True),), {}, 1, 0.01,
                extra={"memory": doc})  # fmt: skip


def test_the_column_in_every_format() -> None:
    res = Results({}, (_cell([3 * MIB, 3 * MIB + 512 * 1024, 4 * MIB]),))
    table = export.render_results(res, "table", 120)
    assert "peak RSS" in table
    assert "3.50 MiB (3.00 MiB-4.00 MiB)" in table
    assert "peak RSS: median (min-max) of native runs, never under valgrind" in table
    assert "3.50 MiB (3.00 MiB-4.00 MiB)" in export.render_results(res, "md", 120)
    header, row = export.render_results(res, "csv", 120).splitlines()
    assert header.endswith(",peak_rss_bytes") and row.endswith(f",{3 * MIB + 512 * 1024}")
    doc = json.loads(export.render_results(res, "json", 120))
    assert doc["cells"][0]["extra"]["memory"]["peak_rss_bytes"][1] == 3 * MIB + 512 * 1024


def test_a_failed_native_run_is_said() -> None:
    res = Results({}, (_cell([], "a native run failed: exited with status 1"),))
    table = export.render_results(res, "table", 120)
    assert "a/callgrind: no peak RSS: a native run failed: exited with status 1" in table


def test_results_without_memory_have_no_column() -> None:
    res = Results(
        {}, (Cell("a", "", "callgrind", UNIT_INSTRUCTIONS, (Run(1.0, True),), {}, 1, 0.01),)
    )
    assert "peak" not in export.render_results(res, "table", 120)
    assert "peak" not in export.render_results(res, "csv", 120)


@pytest.mark.parametrize("peaks", [[-1], ["1"], [True], "12"])
def test_a_stored_peak_that_is_no_byte_count_is_refused(peaks: object) -> None:
    doc = to_json(Results({}, (_cell([1]),)))
    doc["cells"][0]["extra"]["memory"]["peak_rss_bytes"] = peaks
    with pytest.raises(ResultsFileError, match="peak_rss_bytes"):
        from_json(doc, "r.json")


def test_a_servers_peak_sums_each_process_once() -> None:
    # two idle processes, whose high-water marks hold still once they say they are ready
    idle = "import sys, time; print('ready', flush=True); time.sleep(60)"
    sleepers = [
        subprocess.Popen([sys.executable, "-c", idle], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    try:
        assert [p.stdout.readline() for p in sleepers if p.stdout] == ["ready\n"] * 2
        a, b = (memory.status_hwm(p.pid) for p in sleepers)
        assert a is not None and b is not None and a > 0
        pids = [sleepers[0].pid, sleepers[1].pid, sleepers[0].pid]
        assert memory.server_peak(pids) == a + b
    finally:
        for p in sleepers:
            p.kill()
            p.wait()
    assert memory.server_peak([]) is None


def _gnu_time_peak(argv: list[str]) -> int:
    done = subprocess.run(["/usr/bin/time", "-v", *argv], capture_output=True, text=True)
    line = next(x for x in done.stderr.splitlines() if "Maximum resident set size" in x)
    return int(line.rsplit(":", 1)[1]) * 1024


@pytest.mark.slow
def test_a_commands_peak_is_what_gnu_time_reads(
    icount: Icount, tmp_path: Path, need_valgrind: None
) -> None:
    if shutil.which("gcc") is None or not Path("/usr/bin/time").exists():
        pytest.skip("gcc or GNU time is not installed (scripts/setup.sh installs them)")
    (tmp_path / "alloc.c").write_text(ALLOC_C)
    exe = tmp_path / "alloc"
    subprocess.run(["gcc", "-O2", "-o", str(exe), str(tmp_path / "alloc.c")], check=True)
    done = icount("run", "-q", "--memory", "--runs", "3", "-o", "r.json", "--",
                  str(exe), "64", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    peaks = json.loads((tmp_path / "r.json").read_text())["cells"][0]["extra"]["memory"]
    ours = statistics.median(peaks["peak_rss_bytes"])
    reference = statistics.median(_gnu_time_peak([str(exe), "64"]) for _ in range(3))
    assert abs(ours - reference) <= 0.05 * reference, (ours, reference)
    assert ours >= 64 * MIB  # what it allocated, and not what valgrind would add
    assert ours < 64 * MIB + 16 * MIB
    assert "peak RSS" in done.stdout


@pytest.mark.slow
def test_a_two_process_servers_peak_is_the_sum(
    icount: Icount, tmp_path: Path, need_valgrind: None
) -> None:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed (scripts/setup.sh installs it)")
    peaks = {}
    for parent, child in ((32, 64), (32, 0)):
        exe = tmp_path / f"srv-{child}"
        subprocess.run(
            ["gcc", "-O2", f"-DPARENT_MIB={parent}", f"-DCHILD_MIB={child}", "-o", str(exe),
             str(HERE / "forking_server.c")],
            check=True,
        )  # fmt: skip
        done = icount(
            "serve", "-q", "--cmd", f"{exe} {{port}}", "--expect-body", "hi", "--runs", "2",
            "--reps", "1", "--requests", "50", "--warmup", "10", "--idle-seconds", "0",
            "--memory", "-o", f"s-{child}.json", cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        cell = json.loads((tmp_path / f"s-{child}.json").read_text())["cells"][0]
        peaks[child] = statistics.median(cell["extra"]["memory"]["peak_rss_bytes"])
    # both processes' allocations, and a small image each
    assert 96 * MIB <= peaks[64] < 96 * MIB + 8 * MIB
    # the child's 64 MiB is in the sum: the same server without them holds 64 MiB less
    assert abs(peaks[64] - peaks[0] - 64 * MIB) < 2 * MIB
