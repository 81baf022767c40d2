"""`icount run` in shards and in parallel, through the fake backend (counts by
construction: 1000 per argument): the shards' cells keep their places in the whole
plan, merge into the unsharded results, and --jobs pins each command's CPUs."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from icount import export, measure_command, results, shards
from icount.backends.protocol import Counted
from icount.measure_command import CommandSpec, RunOptions
from icount.shards import ShardSpec
from tests.support.fake_backend import FakeBackend

SPECS = [CommandSpec(f"cmd{i}", ("prog",) + ("x",) * i) for i in range(1, 6)]


class PinnedFake(FakeBackend):
    """Records the CPUs each command would have inherited from its thread, the commands
    it counted and the work dir each ran in."""

    def __init__(self) -> None:
        super().__init__()
        self.cpus: dict[int, set[int]] = {}
        self.seen: list[tuple[str, ...]] = []
        self.cwds: dict[tuple[str, ...], set[str]] = {}
        self.lock = threading.Lock()

    def count_command(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        timeout: float | None,
    ) -> Counted:
        with self.lock:
            self.cpus.setdefault(len(argv), set()).update(os.sched_getaffinity(0))
            self.seen.append(tuple(argv))
            self.cwds.setdefault(tuple(argv), set()).add(cwd.name)
        return super().count_command(argv, run_dir, env=env, cwd=cwd, timeout=timeout)


def _measure(opts: RunOptions, tmp_path: Path, shard: ShardSpec | None = None) -> results.Results:
    record = (
        None
        if shard is None
        else shards.make_record("run", measure_command.planned_cells(SPECS, opts), shard)
    )
    return measure_command.measure(SPECS, opts, tmp_path / "artifacts", shard=record)


def test_run_shards_merge_into_the_unsharded_results(tmp_path: Path) -> None:
    opts = RunOptions(backend=FakeBackend(), runs=2, cwd=tmp_path)
    whole = _measure(opts, tmp_path)
    parts = [_measure(opts, tmp_path, ShardSpec(i, 2, "x")) for i in (1, 2)]
    assert [c.name for c in parts[0].cells] == ["cmd1", "cmd3", "cmd5"]
    assert [c.order for c in parts[1].cells] == [1, 3]
    for i, part in enumerate(parts):
        results.save(tmp_path / f"s{i}.json", part, None, overwrite=False)
    merged = results.merge_inputs(results.load_inputs([tmp_path / "s1.json", tmp_path / "s0.json"]))
    for fmt in ("table", "md", "csv", "json"):
        assert export.render_results(merged, fmt) == export.render_results(whole, fmt)
    assert {c.name: c.summary and c.summary.median for c in merged.cells} == {
        f"cmd{i}": 1000.0 * (i + 1) for i in range(1, 6)
    }


def test_commands_at_once_count_the_same_each_on_its_cpus(tmp_path: Path) -> None:
    allowed = sorted(os.sched_getaffinity(0))
    one = _measure(RunOptions(backend=FakeBackend(), runs=3, cwd=tmp_path), tmp_path)
    backend = PinnedFake()
    job_cpus = ((allowed[0],), (allowed[-1],))
    opts = RunOptions(backend=backend, runs=3, cwd=tmp_path, jobs=job_cpus)
    two = _measure(opts, tmp_path)
    assert [c.to_json() for c in two.sorted().cells] == [c.to_json() for c in one.sorted().cells]
    # every command ran pinned to one job's CPUs, never to all the allowed ones
    assert all(cpus in ({allowed[0]}, {allowed[-1]}) for cpus in backend.cpus.values())
    assert set(os.sched_getaffinity(0)) == set(allowed)  # the caller's CPUs are restored
