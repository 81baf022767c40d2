"""`icount serve TARGET --path NAME` (and TARGET:NAME): only some paths of adapter
targets, each cell as a full session measures and keys it; --resume and --shard plan
only the chosen cells. The fake backend (tests/support/fake_backend.py) counts by
construction, in-process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from icount import results
from icount.session.resume import TARGET_DIGESTS
from tests.support.cli import run_icount_here

from .conftest import JSON_PATH, PLAINTEXT, AdapterMaker, run_icount
from .test_session import FAKE_ADAPTER

FAST = ["--backend", "fake", "--runs", "1", "--reps", "1", "--requests", "20", "--warmup", "0",
        "--idle-seconds", "0", "-q"]  # fmt: skip


@pytest.fixture
def two(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """Two fake adapters, `fake` and `other`, each with paths plaintext and json, and
    the servers the fake started."""
    from icount import backends
    from tests.support import fake_backend

    monkeypatch.setitem(backends.REGISTRY, "fake", "tests.support.fake_backend")
    config = fake_backend.FakeConfig(cost=lambda i, p: 800.0)
    monkeypatch.setattr(fake_backend, "CONFIG", config)
    found: dict[str, Any] = {"config": config}
    for name in ("fake", "other"):
        (tmp_path / name).mkdir()
        text = FAKE_ADAPTER.replace('name = "fake"', f'name = "{name}"')
        (tmp_path / name / "adapter.toml").write_text(text)
        found[name] = str(tmp_path / name)
    return found


def _serve(tmp_path: Path, *args: str) -> Any:
    return run_icount_here(["serve", *args, *FAST], tmp_path)


def _cells(path: Path) -> dict[tuple[str, str], Any]:
    return {(c.name, c.path): c for c in results.load(path).cells}


def test_a_chosen_path_is_the_full_sessions_cell(two: dict[str, Any], tmp_path: Path) -> None:
    full, chosen = tmp_path / "full.json", tmp_path / "json.json"
    done = _serve(tmp_path, two["fake"], "-o", str(full))
    assert done.returncode == 0, done.stderr
    done = _serve(tmp_path, two["fake"], "--path", "json", "-o", str(chosen))
    assert done.returncode == 0, done.stderr
    assert len(two["config"].started) == 3  # 2 cells, then 1: only the path asked for
    (cell,) = _cells(chosen).values()
    twin = _cells(full)[("fake", "json")]
    # the same key, the same params and figures: 20 requests of 800, the window's 27
    assert (cell.key, cell.params, cell.values) == (twin.key, twin.params, twin.values)
    assert cell.values == [800.0 + 27 / 20]
    prov = json.loads(results.provenance_path(chosen).read_text())
    assert prov["plan"]["only_paths"] == ["json"]
    full_prov = json.loads(results.provenance_path(full).read_text())
    assert "only_paths" not in full_prov["plan"]  # a full session's plan records as it did
    # the adapter is the same target: --resume of either file takes the other's cells
    assert prov[TARGET_DIGESTS] == full_prov[TARGET_DIGESTS]
    # compare matches the chosen cell with the full session's
    done = run_icount_here(["compare", str(full), str(chosen), "-f", "json"], tmp_path)
    assert done.returncode == 0, done.stderr
    verdicts = {c["path"]: c["verdict"] for c in json.loads(done.stdout)["cells"]}
    assert verdicts == {"plaintext": "missing in new", "json": "unchanged"}


def test_target_colon_name_chooses_in_one_target_only(two: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    done = _serve(tmp_path, two["fake"], two["other"], "--path", "other:json", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert sorted(_cells(out)) == [("fake", "json"), ("fake", "plaintext"), ("other", "json")]
    both = tmp_path / "both.json"
    done = _serve(tmp_path, two["fake"], two["other"], "--path", "plaintext", "-o", str(both))
    assert done.returncode == 0, done.stderr
    assert sorted(_cells(both)) == [("fake", "plaintext"), ("other", "plaintext")]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--path", "nope"], "--path nope: fake has no path 'nope' (its paths: plaintext, json)"),
        (["--path", "other:nope"], "--path other:nope: other has no path 'nope' (its paths: "),
        (["--path", "gone:json"], "--path gone:json: no target 'gone' is measured (targets: "
         "fake, other)"),
        (["--path", ":json"], "--path takes a path's NAME or TARGET:NAME, got ':json'"),
        (["--path", "json=/json"], "go with --cmd (an adapter target's paths are chosen with "
         "--path NAME)"),
    ],
)  # fmt: skip
def test_a_path_no_target_has_is_one_line_exit_2(
    two: dict[str, Any], tmp_path: Path, args: list[str], message: str
) -> None:
    done = _serve(tmp_path, two["fake"], two["other"], *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert two["config"].started == [] and not (tmp_path / "icount-results").exists()


def test_resume_keeps_the_choice_and_a_new_one_adds_cells(
    two: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    done = _serve(tmp_path, two["fake"], "--path", "json", "-o", str(out))
    assert done.returncode == 0, done.stderr
    before = _cells(out)[("fake", "json")]
    # resumed as recorded: the chosen path is done, nothing runs
    done = run_icount_here(["serve", "--resume", str(out), "-q"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(two["config"].started) == 1
    # another choice given again: its cell is measured, the first one kept
    done = _serve(tmp_path, "--path", "plaintext", "--resume", str(out))
    assert done.returncode == 0, done.stderr
    assert len(two["config"].started) == 2
    cells = _cells(out)
    assert sorted(cells) == [("fake", "json"), ("fake", "plaintext")]
    assert cells[("fake", "json")] == before


def test_shards_split_only_the_chosen_cells(two: dict[str, Any], tmp_path: Path) -> None:
    shards = tmp_path / "shards"
    shards.mkdir()
    for i in (1, 2):
        done = _serve(tmp_path, two["fake"], two["other"], "--path", "json", "--shard",
                      f"{i}/2", "-o", str(shards / f"s{i}.json"))  # fmt: skip
        assert done.returncode == 0, done.stderr
        record = results.load(shards / f"s{i}.json").shard
        assert record is not None
        assert [(c.name, c.path) for c in record.plan] == [("fake", "json"), ("other", "json")]
    done = run_icount_here(["table", str(shards), "-f", "json"], tmp_path)
    assert done.returncode == 0, done.stderr
    merged = json.loads(done.stdout)["cells"]
    assert sorted((c["name"], c["path"]) for c in merged) == [("fake", "json"), ("other", "json")]
    assert len(two["config"].started) == 2


@pytest.mark.slow
def test_a_chosen_path_counts_as_in_a_full_session_callgrind(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    """A C server's /json under callgrind: the cell of `--path json` is the full
    session's, to the instruction."""
    target = make_adapter("two-paths", paths=PLAINTEXT + JSON_PATH)
    quick = ["--runs", "1", "--reps", "2", "--requests", "200", "--warmup", "20",
             "--idle-seconds", "0", "--backend", "callgrind", "-q"]  # fmt: skip
    full, chosen = tmp_path / "full.json", tmp_path / "json.json"
    for out, extra in ((full, []), (chosen, ["--path", "json"])):
        done = run_icount(["serve", str(target), *quick, *extra, "-o", str(out)], tmp_path)
        assert done.returncode == 0, done.stderr
    (cell,) = _cells(chosen).values()
    twin = _cells(full)[("two-paths", "json")]
    assert cell.valid and (cell.key, cell.params) == (twin.key, twin.params)
    assert cell.values == twin.values
