"""Shards and jobs under callgrind, end to end: the commands of the README's CI
workflows run here, each shard in its own process as on its own CI machine, then the
merge job and the compare gate.

- GitHub Actions passes the matrix value as --shard I/3 (serve, the C target);
- GitLab's `parallel: 3` sets CI_NODE_INDEX/CI_NODE_TOTAL (run, loops of known cost);
- the merged tables (md, csv, json) are byte-identical to the unsharded session's;
- the compare gate against the base's merged results passes when nothing changed and
  catches a regression of exactly the loop's known cost, across shards;
- --jobs 2 counts what --jobs 1 counts: exactly on the C server, within the spread
  limit on Python.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_icount

from .conftest import JSON_PATH, PLAINTEXT, AdapterMaker, cells, leftovers

pytestmark = pytest.mark.slow

SERVE = ["--backend", "callgrind", "--runs", "1", "--reps", "2", "--requests", "100",
         "--warmup", "10", "-q"]  # fmt: skip

# Exactly 2 instructions per iteration (sub, jnz), as in tests/core/test_measure_command.py
LOOP_C = r"""
#include <stdlib.h>
int main(int argc, char **argv) {
    long k = argc > 1 ? atol(argv[1]) : 0;
    if (k > 0) __asm__ volatile("1: sub $1, %0\n\tjnz 1b" : "+r"(k));
    return 0;
}
"""


def _ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, done.stderr
    return done


def _tables(args: list[str], cwd: Path) -> dict[str, str]:
    return {fmt: _ok(run_icount(["table", *args, "-f", fmt], cwd)).stdout
            for fmt in ("md", "csv", "json")}  # fmt: skip


def test_github_matrix_of_serve_shards_merges_and_gates(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    copy = make_adapter("c-epoll-copy", paths=PLAINTEXT + JSON_PATH)
    targets = ["c-epoll", str(copy)]  # 4 cells
    _ok(run_icount(["serve", *targets, *SERVE, "-o", "whole.json"], tmp_path))
    shards = tmp_path / "shards"
    for i in (1, 2, 3):  # the matrix jobs: strategy.matrix.shard -> --shard I/3
        done = _ok(run_icount(["serve", *targets, *SERVE[:-1], "--shard", f"{i}/3",
                               "-o", f"shards/shard-{i}.json"], tmp_path))  # fmt: skip
        assert f"icount: shard {i}/3 (--shard {i}/3): " in done.stderr
    docs = {i: json.loads((shards / f"shard-{i}.json").read_text()) for i in (1, 2, 3)}
    cells = {i: [c["name"] + "/" + c["path"] for c in d["cells"]] for i, d in docs.items()}
    assert sorted(c for got in cells.values() for c in got) == [
        "c-epoll-copy/json", "c-epoll-copy/plaintext", "c-epoll/json", "c-epoll/plaintext"
    ]  # fmt: skip
    assert all(cells.values())  # 4 cells of equal cost over 3 shards: none empty

    # the merge job, from the folder of downloaded artifacts
    merged = _tables(["shards"], tmp_path)
    assert merged == _tables(["whole.json"], tmp_path)  # byte for byte
    assert merged["json"] == (tmp_path / "whole.json").read_text()
    (tmp_path / "merged.json").write_text(merged["json"])

    # the compare gate and the PR comment, against the base's merged results
    gate = run_icount(["compare", "merged.json", "shards", "--fail-on-invalid", "-f", "md",
                       "-o", "comment.md"], tmp_path)  # fmt: skip
    assert gate.returncode == 0, gate.stderr
    comment = (tmp_path / "comment.md").read_text()
    assert comment.startswith("✅ 4 unchanged")
    # a shard lost on the way fails the gate instead of comparing part of the session
    (shards / "shard-2.json").unlink()
    lost = run_icount(["compare", "merged.json", "shards", "-f", "md"], tmp_path)
    assert lost.returncode == 2 and "shard missing: 2/3" in lost.stderr


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed (scripts/setup.sh installs it)")
    if platform.machine() != "x86_64":
        pytest.skip(f"the loop is x86-64 assembly; this is {platform.machine()}")
    d = tmp_path_factory.mktemp("loop")
    (d / "loop.c").write_text(LOOP_C)
    subprocess.run(["gcc", "-O2", "-o", str(d / "loop"), str(d / "loop.c")], check=True)
    return d / "loop"


def _commands(loop: Path, ks: list[int]) -> list[str]:
    return [arg for i, k in enumerate(ks, 1) for arg in ("--cmd", f"k{i}={loop} {k}")]


def _gitlab(loop: Path, ks: list[int], out: str, cwd: Path) -> None:
    """The three jobs of `parallel: 3`, each told its shard by GitLab's variables."""
    for i in (1, 2, 3):
        env = {**os.environ, "CI_NODE_INDEX": str(i), "CI_NODE_TOTAL": "3"}
        done = run_icount(["run", "--backend", "callgrind", "--runs", "2", *_commands(loop, ks),
                           "-o", f"{out}/{i}.json"], cwd, env=env)  # fmt: skip
        _ok(done)
        assert f"GitLab parallel: CI_NODE_INDEX={i}, CI_NODE_TOTAL=3" in done.stderr


def test_gitlab_parallel_run_shards_merge_and_gate_the_known_delta(
    loop: Path, need_valgrind: None, tmp_path: Path
) -> None:
    base_ks = [100_000, 200_000, 300_000, 400_000]
    run = ["run", "--backend", "callgrind", "--runs", "2", "-q"]
    _ok(run_icount([*run, *_commands(loop, base_ks), "-o", "whole.json"], tmp_path))
    _gitlab(loop, base_ks, "base", tmp_path)
    merged = _tables(["base"], tmp_path)
    assert merged == _tables(["whole.json"], tmp_path)
    medians = {c["name"]: c["median"] for c in json.loads(merged["json"])["cells"]}
    # the loops' known cost survives the split: 2 instructions x 100,000 between neighbours
    assert [medians[f"k{i + 1}"] - medians[f"k{i}"] for i in (1, 2, 3)] == [200_000] * 3

    # a change makes k3's loop 30,000 iterations longer: exactly 60,000 instructions
    new_ks = [100_000, 200_000, 330_000, 400_000]
    _gitlab(loop, new_ks, "new", tmp_path)
    gate = run_icount(["compare", "base", "new", "-f", "json"], tmp_path)
    assert gate.returncode == 3, gate.stderr
    rows = {r["name"]: r for r in json.loads(gate.stdout)["cells"]}
    assert rows["k3"]["verdict"] == "regressed"
    assert rows["k3"]["delta"] == 60_000
    assert {n: r["verdict"] for n, r in rows.items() if n != "k3"} == {
        "k1": "unchanged", "k2": "unchanged", "k4": "unchanged"
    }  # fmt: skip


def _serve_jobs(target: str, jobs: int, out: Path, extra: list[str]) -> dict[str, Any]:
    args = ["serve", target, "--backend", "callgrind", *extra, "--jobs", str(jobs),
            "-o", str(out), "-q"]  # fmt: skip
    _ok(run_icount(args, out.parent))
    return {c["path"]: c for c in json.loads(out.read_text())["cells"]}


def _reps(cell: dict[str, Any]) -> list[list[float]]:
    return [[r["instructions"] for r in run["detail"]["reps"]] for run in cell["runs"]]


def test_two_jobs_count_exactly_what_one_job_counts_on_the_c_server(
    need_valgrind: None, tmp_path: Path
) -> None:
    extra = ["--runs", "2", "--reps", "2", "--requests", "200", "--warmup", "20"]
    one = _serve_jobs("c-epoll", 1, tmp_path / "one.json", extra)
    two = _serve_jobs("c-epoll", 2, tmp_path / "two.json", extra)
    assert sorted(one) == sorted(two) == ["json", "plaintext"]
    for path in one:
        assert one[path]["valid"] and two[path]["valid"]
        assert _reps(two[path]) == _reps(one[path])  # every window's raw count
    prov = json.loads((tmp_path / "two.provenance.json").read_text())
    assert prov["jobs"]["jobs"] == 2
    servers = sorted(tuple(c["params"]["server_cpus"]) for c in two.values())
    assert len(set(servers)) == min(2, len(os.sched_getaffinity(0)))  # one CPU each, if any


def test_two_jobs_count_what_one_job_counts_on_python_within_the_spread(
    need_valgrind: None, tmp_path: Path
) -> None:
    # one run per cell: a Python server takes 5-10 s to start under callgrind
    extra = ["--runs", "1", "--reps", "2", "--requests", "100", "--warmup", "20"]
    one = _serve_jobs("python-asyncio", 1, tmp_path / "one.json", extra)
    two = _serve_jobs("python-asyncio", 2, tmp_path / "two.json", extra)
    for path in ("plaintext", "json"):
        a, b = one[path], two[path]
        assert a["valid"] and b["valid"], (a["reason"], b["reason"])
        assert abs(b["median"] - a["median"]) / a["median"] < a["max_spread"]


def test_ctrl_c_with_two_jobs_stops_both_cells_and_keeps_finished_ones(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path, c_epoll: Path
) -> None:
    quick = make_adapter("a-quick")
    slow = [make_adapter(f"{n}-slow", "--loop", "200000") for n in ("b", "c")]
    out = tmp_path / "r.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "icount", "serve", str(quick), *map(str, slow), "--runs", "1",
         "--requests", "100000", "--warmup", "0", "--reps", "1", "--backend", "callgrind",
         "--jobs", "2", "-o", str(out), "-q"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not out.exists():
            time.sleep(0.1)
        assert out.exists(), "the first cell was never saved"
        deadline = time.monotonic() + 60  # both slow cells' servers running at once
        while time.monotonic() < deadline and not (leftovers("b-slow") and leftovers("c-slow")):
            time.sleep(0.1)
        assert leftovers("b-slow") and leftovers("c-slow")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert list(cells(out)) == [("a-quick", "plaintext")]
    assert leftovers(str(c_epoll)) == []
