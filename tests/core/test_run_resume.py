"""`icount run --resume` and the work dir of a cell, through the fake backend (1000
instructions per argument): only the missing commands are measured, a file measured
otherwise is refused, and a cell's work dir does not depend on the job that ran it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from icount import environment, results, run_plan
from icount.errors import UsageError
from icount.measure_command import CommandSpec
from icount.session import scheduler
from icount.shards import ShardSpec
from tests.support import fake_backend
from tests.support.cli import run_icount_here

from .test_run_shards import PinnedFake

SPECS = tuple(CommandSpec(f"cmd{i}", ("prog",) + ("x",) * i) for i in range(1, 4))


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> list[PinnedFake]:
    """`--backend fake`; returns every backend a session made, in order."""
    from icount import backends

    made: list[PinnedFake] = []

    def make(config: fake_backend.FakeConfig) -> PinnedFake:
        made.append(PinnedFake())
        return made[-1]

    monkeypatch.setitem(backends.REGISTRY, "fake", "tests.support.fake_backend")
    monkeypatch.setattr(fake_backend, "FakeBackend", make)
    return made


def _session(request: run_plan.RunRequest, out: Path, resume: Path | None = None,
             jobs: int = 1) -> results.Results:  # fmt: skip
    plan = run_plan.prepare(request, output=out, resume=resume, force=False, jobs=jobs)
    recorder = environment.ProvenanceRecorder(["icount", "run"])
    return run_plan.run_session(plan, None, recorder)


def test_resume_measures_only_the_missing_commands(fake: list[PinnedFake], tmp_path: Path) -> None:
    request = run_plan.RunRequest(commands=SPECS, backend="fake", runs=2)
    full = tmp_path / "full.json"
    res = _session(request, full)
    assert [c.summary and c.summary.median for c in res.cells] == [2000.0, 3000.0, 4000.0]
    assert len(fake[0].seen) == 6  # 3 commands x 2 runs

    # an interrupted session: only the first command made it to the file
    partial = tmp_path / "partial.json"
    results.save(partial, results.Results(res.fingerprint, res.cells[:1]), None, overwrite=False)
    results.provenance_path(partial).write_text(results.provenance_path(full).read_text())
    # the commands are given again (never the file's); the options come from the file
    resumed = run_plan.resume_request(run_plan.RunRequest(commands=SPECS), partial, frozenset())
    assert (resumed.commands, resumed.backend, resumed.runs) == (SPECS, "fake", 2)
    again = _session(resumed, partial, resume=partial)
    assert fake[1].seen == [SPECS[1].argv] * 2 + [SPECS[2].argv] * 2
    assert [c.to_json() for c in again.cells] == [c.to_json() for c in res.cells]
    assert results.load(partial).sorted() == res.sorted()

    # options given again win over the file's, and must match what it measured
    again3 = run_plan.RunRequest(commands=SPECS, runs=3)
    other = run_plan.resume_request(again3, partial, frozenset({"runs"}))
    with pytest.raises(UsageError, match=r"cmd1/fake in the file to resume was measured with "
                       r"other parameters \(runs 2 there, 3 now\)"):  # fmt: skip
        _session(other, partial, resume=partial)
    changed = (CommandSpec("cmd1", ("prog", "y")), *SPECS[1:])
    with pytest.raises(UsageError, match=r"argv \['prog', 'x'\] there, \['prog', 'y'\] now"):
        _session(run_plan.RunRequest(commands=changed, backend="fake", runs=2), partial, partial)
    # without commands given, none runs: the refusal lists those the file records
    with pytest.raises(UsageError, match="runs only the commands given again") as err:
        run_plan.resume_request(run_plan.RunRequest(), partial, frozenset())
    assert err.value.hint == "it records cmd1=prog x; cmd2=prog x x; cmd3=prog x x x"


def test_a_shard_resumes_as_itself(fake: list[PinnedFake], tmp_path: Path) -> None:
    request = run_plan.RunRequest(commands=SPECS, backend="fake", runs=1)
    out = tmp_path / "s1.json"
    plan = run_plan.prepare(request, output=out, resume=None, force=False,
                            shard=ShardSpec(1, 2, "--shard 1/2"))  # fmt: skip
    res = run_plan.run_session(plan, None, environment.ProvenanceRecorder(["icount", "run"]))
    assert [c.name for c in res.cells] == ["cmd1", "cmd3"]
    results.save(out, dataclasses.replace(res, cells=res.cells[:1]), None, overwrite=True)
    given = run_plan.RunRequest(commands=SPECS)
    again = _session(run_plan.resume_request(given, out, frozenset()), out, out)
    assert fake[-1].seen == [SPECS[2].argv]  # the shard's missing command, nothing else
    assert again.shard == res.shard and [c.name for c in again.cells] == ["cmd1", "cmd3"]
    with pytest.raises(UsageError, match="the file to resume is shard 1/2 of its session"):
        run_plan.prepare(request, output=out, resume=out, force=False,
                         shard=ShardSpec(2, 2, "--shard 2/2"))  # fmt: skip


def test_resume_refuses_another_environment_and_other_files(
    fake: list[PinnedFake], tmp_path: Path
) -> None:
    request = run_plan.RunRequest(commands=SPECS, backend="fake", runs=1)
    out = tmp_path / "r.json"
    _session(request, out)
    doc = json.loads(out.read_text())
    doc["fingerprint"]["cpu_model"] = "another CPU"
    moved = tmp_path / "moved.json"
    moved.write_text(json.dumps(doc))
    with pytest.raises(UsageError, match=r"another environment \(differs in cpu_model\)"):
        _session(request, moved, resume=moved)
    served = dataclasses.replace(results.load(out).cells[0], path="plaintext",
                                 unit=results.UNIT_PER_REQUEST)  # fmt: skip
    serve_file = tmp_path / "serve.json"
    results.save(serve_file, results.Results(doc["fingerprint"], (served,)), None,
                 overwrite=False)  # fmt: skip
    with pytest.raises(UsageError, match=r"cells that are not from icount run \(cmd1/plaintext"):
        _session(request, serve_file, resume=serve_file)
    recorded = json.loads(results.provenance_path(out).read_text())
    recorded["plan"]["runs"] = "three"
    results.provenance_path(out).write_text(json.dumps(recorded))
    with pytest.raises(UsageError, match=r"the recorded runs 'three' is not valid"):
        run_plan.resume_request(run_plan.RunRequest(commands=SPECS), out, frozenset())


def test_a_cells_work_dir_is_named_after_the_cell_not_its_job(
    fake: list[PinnedFake], tmp_path: Path
) -> None:
    """Python hashes its work dir's name: with names by job slot, the second of two jobs
    counted another figure than --jobs 1 did for the same command."""
    request = run_plan.RunRequest(commands=SPECS, backend="fake", runs=2)
    _session(request, tmp_path / "one.json")
    _session(request, tmp_path / "two.json", jobs=2)
    one, two = fake[0].cwds, fake[1].cwds
    assert two == one
    assert all(len(names) == 1 for names in one.values())  # every run of a cell: one name
    assert len({n for names in one.values() for n in names}) == len(SPECS)  # a cell's own
    name = environment.work_dir_name(scheduler.work_dir_key(("cmd1", "", "fake")))
    assert one[SPECS[0].argv] == {name}
    assert len(name) == len(environment.work_dir_name("")) == len("icount-") + 8


def test_run_without_a_command_says_so_in_one_line(tmp_path: Path) -> None:
    done = run_icount_here(["run"], tmp_path)  # refused before anything runs
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "icount: error: nothing to run (give a command after --, --cmd or --file; see icount "
        "run --help)"
    ]
    assert done.stdout == ""
