"""Sharded and parallel `icount serve` sessions, through the fake backend (exact counts
by construction, milliseconds): shards merged give the unsharded session's bytes,
--jobs 2 gives --jobs 1's counts, and a shard resumes only as itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from icount import environment, export, results
from icount.errors import UsageError
from icount.serve import plan as plan_mod
from icount.serve import session
from icount.shards import ShardSpec

from .test_session import FAKE_ADAPTER


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[str, ...]:
    """Three fake targets of two paths each (one with a JIT-sized warm-up hint)."""
    from icount import backends
    from tests.support import fake_backend

    monkeypatch.setitem(backends.REGISTRY, "fake", "tests.support.fake_backend")
    # request i of every process costs 800 + i % 7: the windows' counts differ, exactly
    config = fake_backend.FakeConfig(cost=lambda i, p: 800.0 + i % 7)
    monkeypatch.setattr(fake_backend, "CONFIG", config)
    files = []
    for name, extra in (("fa", ""), ("fb", "warmup_hint = 60"), ("fc", "")):
        (tmp_path / name).mkdir()
        toml = FAKE_ADAPTER.replace('name = "fake"', f'name = "{name}"\n{extra}')
        (tmp_path / name / "adapter.toml").write_text(toml)
        files.append(str(tmp_path / name / "adapter.toml"))
    return tuple(files)


def _request(targets: tuple[str, ...], **kw: Any) -> plan_mod.ServeRequest:
    # idle_seconds 0: the idle window sleeps, and no test here is about it
    opts: dict[str, Any] = {
        "backend": "fake",
        "runs": 2,
        "reps": 2,
        "requests": 40,
        "idle_seconds": 0,
        **kw,
    }
    return plan_mod.ServeRequest(targets=targets, **opts)


def _session(
    request: plan_mod.ServeRequest,
    out: Path,
    shard: ShardSpec | None = None,
    jobs: int = 1,
    resume: Path | None = None,
) -> results.Results:
    plan = plan_mod.prepare(
        request, output=out, resume=resume, force=resume is None, shard=shard, jobs=jobs
    )
    recorder = environment.ProvenanceRecorder(["icount", "serve"])
    return session.run_session(plan, lambda text, done, total: None, recorder)


def test_three_shards_merged_are_the_unsharded_session_byte_for_byte(
    fakes: tuple[str, ...], tmp_path: Path
) -> None:
    request = _request(fakes)
    whole = tmp_path / "whole.json"
    _session(request, whole)
    folder = tmp_path / "shards"
    for i in (1, 2, 3):
        _session(request, folder / f"shard-{i}.json", ShardSpec(i, 3, f"--shard {i}/3"))
    docs = {i: json.loads((folder / f"shard-{i}.json").read_text()) for i in (1, 2, 3)}
    shard_cells = {i: [c["name"] + "/" + c["path"] for c in d["cells"]] for i, d in docs.items()}
    # Costs are requests sent: fb's 2 x (60 + 2 x 40) = 280 for its larger warm-up, the
    # others' 2 x (20 + 2 x 40) = 200. fb's cells go first, to shards 1 and 2; then the
    # least loaded shard takes the next cell in plan order.
    assert shard_cells == {
        1: ["fb/plaintext", "fc/plaintext"],
        2: ["fb/json", "fc/json"],
        3: ["fa/plaintext", "fa/json"],
    }
    merged = results.merge_inputs(results.load_inputs([folder]))
    saved = results.load(whole)
    for fmt in ("table", "md", "csv", "json"):
        assert export.render_results(merged, fmt) == export.render_results(saved, fmt)
    assert results.results_json(merged) == whole.read_text()
    prov = json.loads((folder / "shard-2.provenance.json").read_text())
    assert prov["shard"] == {"index": 2, "total": 3, "source": "--shard 2/3"}
    assert prov["jobs"]["jobs"] == 1


def test_an_empty_shard_leaves_a_file_the_merge_counts(
    fakes: tuple[str, ...], tmp_path: Path
) -> None:
    request = _request(fakes[:1])  # two cells in three shards
    whole = tmp_path / "whole.json"
    _session(request, whole)
    for i in (1, 2, 3):
        res = _session(request, tmp_path / "s" / f"{i}.json", ShardSpec(i, 3, "x"))
        assert len(res.cells) == (0 if i == 3 else 1)
    assert results.load(tmp_path / "s" / "3.json").shard is not None
    merged = results.merge_inputs(results.load_inputs([tmp_path / "s"]))
    assert results.results_json(merged) == whole.read_text()
    (tmp_path / "s" / "3.json").unlink()
    with pytest.raises(UsageError, match=r"shard missing: 3/3 \(no cells\)"):
        results.merge_inputs(results.load_inputs([tmp_path / "s"]))


def _counts(res: results.Results) -> dict[tuple[str, str, str], list[Any]]:
    return {c.key: [r.to_json() for r in c.runs] for c in res.cells}


def test_two_jobs_count_what_one_job_counts(fakes: tuple[str, ...], tmp_path: Path) -> None:
    request = _request(fakes)
    one = _session(request, tmp_path / "one.json")
    two = _session(request, tmp_path / "two.json", jobs=2)
    assert _counts(two) == _counts(one)  # every run's raw windows, exactly
    assert [c.key for c in results.load(tmp_path / "two.json").cells] == [
        c.key for c in one.sorted().cells
    ]  # the file lists cells in plan order, whichever finished first
    prov = json.loads((tmp_path / "two.provenance.json").read_text())
    assert prov["jobs"]["jobs"] == 2 and len(prov["jobs"]["cpus"]) == 2
    job_cpus = [(c["server"], c["load"]) for c in prov["jobs"]["cpus"]]
    for cell in two.cells:  # each cell records the CPUs of the job that measured it
        assert (cell.params["server_cpus"], cell.params["load_cpus"]) in job_cpus


def test_sharded_parallel_shards_still_merge(fakes: tuple[str, ...], tmp_path: Path) -> None:
    request = _request(fakes)
    whole = _session(request, tmp_path / "whole.json")
    for i in (1, 2):
        _session(request, tmp_path / "s" / f"{i}.json", ShardSpec(i, 2, "x"), jobs=2)
    merged = results.merge_inputs(results.load_inputs([tmp_path / "s"]))
    assert _counts(merged) == _counts(whole)
    assert export.render_results(merged, "md") == export.render_results(whole, "md")


def test_a_shard_resumes_as_itself_only(fakes: tuple[str, ...], tmp_path: Path) -> None:
    request = _request(fakes)
    out = tmp_path / "s2.json"
    full = _session(request, out, ShardSpec(2, 3, "x"))
    assert full.shard is not None
    # an interrupted shard: one of its cells made it to the file
    results.save(out, results.Results(full.fingerprint, full.cells[:1], full.shard), None,
                 overwrite=True)  # fmt: skip
    again = _session(request, out, resume=out)  # no --shard: the file's shard is taken
    assert again.shard == full.shard and _counts(again) == _counts(full)
    with pytest.raises(UsageError, match="the file to resume is shard 2/3 of its session, not 1/3"):
        _session(request, out, ShardSpec(1, 3, "x"), resume=out)
    with pytest.raises(UsageError, match=r"a shard of another plan: .*requests 40 there, 50 here"):
        _session(_request(fakes, requests=50), out, resume=out)
    whole = tmp_path / "whole.json"
    _session(request, whole)
    with pytest.raises(UsageError, match="holds a whole session, not shard 2/3"):
        _session(request, whole, ShardSpec(2, 3, "x"), resume=whole)
