"""Merging the shard files of a session: what the unsharded session wrote, byte for
byte, or a refusal naming what is wrong (missing, twice, another plan, environment or
icount version, an unfinished shard).

The cells here are built, not measured: these tests check the merge. Measured shards
are in tests/serve/test_shards.py (fake backend) and test_shards_callgrind.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from icount import export, results, shards
from icount.errors import ResultsFileError, UsageError
from icount.results import Cell, Results, Run
from icount.results.details import CommandDetail
from icount.shards import PlannedCell, ShardSpec

FP: dict[str, Any] = {"backend": "callgrind", "tool_version": "valgrind-3.19.0",
                      "icount_version": "0.1.0", "kernel": "6.1.0"}  # fmt: skip
NAMES = ("a", "b", "c", "d", "e")


def _planned(names: tuple[str, ...] = NAMES, argv: str = "x") -> list[PlannedCell]:
    return [PlannedCell(n, "", "callgrind", {"argv": [argv, n]}, 1.0) for n in names]


def _cell(name: str, order: int, value: float) -> Cell:
    run = Run(value, True, None, CommandDetail(0, 1))
    return Cell(name, "", "callgrind", results.UNIT_INSTRUCTIONS, (run, run), {"argv": ["x", name]},
                2, 0.01, order=order)  # fmt: skip


def _whole() -> Results:
    return Results(FP, tuple(_cell(n, i, 1000.0 + i) for i, n in enumerate(NAMES)))


def _shard(index: int, total: int = 3, **changes: Any) -> Results:
    planned = changes.pop("planned", _planned())
    fp = {**FP, **changes.pop("fingerprint", {})}
    record = shards.make_record("run", planned, ShardSpec(index, total, "test"))
    mine = {e.key for e in record.assigned()}
    cells = tuple(c for c in _whole().cells if c.key in mine)
    return Results(fp, cells, record)


def _files(tmp_path: Path, *res: Results) -> list[Path]:
    paths = []
    for i, r in enumerate(res):
        p = tmp_path / f"f{i}.json"
        results.save(p, r, None, overwrite=True)
        paths.append(p)
    return paths


def _merge(paths: list[Path]) -> Results:
    return results.merge_inputs(results.load_inputs(paths))


def test_merged_shards_render_the_bytes_of_the_whole_session(tmp_path: Path) -> None:
    whole = tmp_path / "whole.json"
    results.save(whole, _whole(), None, overwrite=False)
    # given in any order, as files or as the folder holding them
    folder = tmp_path / "shards"
    folder.mkdir()
    parts = _files(folder, _shard(3), _shard(1), _shard(2))
    (folder / "f0.provenance.json").write_text("{}")  # left out: not a results file
    for merged in (_merge(parts), _merge([folder])):
        assert merged.shard is None
        for fmt in ("table", "md", "csv", "json"):
            assert export.render_results(merged, fmt) == export.render_results(
                results.load(whole), fmt
            )
    assert results.results_json(_merge(parts)) == whole.read_text()


def test_a_shard_file_records_its_shard_and_the_whole_plan(tmp_path: Path) -> None:
    (path,) = _files(tmp_path, _shard(2))
    doc = json.loads(path.read_text())
    assert doc["shard"]["index"] == 2 and doc["shard"]["total"] == 3
    assert [e["name"] for e in doc["shard"]["plan"]] == list(NAMES)
    assert [e["shard"] for e in doc["shard"]["plan"]] == [1, 2, 3, 1, 2]
    assert [c["name"] for c in doc["cells"]] == ["b", "e"]
    assert [c["order"] for c in doc["cells"]] == [1, 4]  # places in the whole plan
    assert results.load(path) == _shard(2)
    assert "shard" not in json.loads(results.results_json(_whole()))


def test_an_edited_shard_record_is_refused_on_loading(tmp_path: Path) -> None:
    (path,) = _files(tmp_path, _shard(2))
    doc = json.loads(path.read_text())
    doc["shard"]["plan"][0]["identity"]["argv"] = ["y", "a"]
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsFileError, match="plan_digest disagrees"):
        results.load(path)
    doc["shard"]["index"] = 4
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsFileError, match=r"shard\.index 4 is beyond shard\.total 3"):
        results.load(path)


def test_a_shard_record_beyond_any_split_is_refused_on_loading(tmp_path: Path) -> None:
    """A total of 10**8 loaded, then merging listed the shards missing: 1.45 GB and a
    MemoryError. The digest covers the plan, not the total: the edit is checked alone."""
    from icount.results.shard import PlanEntry, plan_digest

    (path,) = _files(tmp_path, _shard(2))
    doc = json.loads(path.read_text())
    doc["shard"]["total"] = 10**8
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsFileError, match=r"shard\.total 100000000 is beyond the 10000 "):
        results.load(path)
    doc["shard"]["total"] = 3
    doc["shard"]["plan"][0]["cost"] = -1
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsFileError, match=r"shard\.plan\.cost -1 is negative"):
        results.load(path)
    plan = doc["shard"]["plan"]
    plan[0] = {**plan[1], "shard": plan[0]["shard"], "cost": 1.0}
    entries = [(e["name"], e["path"], e["backend"], e["identity"]) for e in plan]
    doc["shard"]["plan_digest"] = plan_digest("run", tuple(PlanEntry(*e, 1.0, 1) for e in entries))
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsFileError, match=r"shard\.plan holds the cell b/callgrind twice"):
        results.load(path)


def test_shards_missing_by_the_thousand_are_named_by_the_first_few(tmp_path: Path) -> None:
    paths = _files(tmp_path, _shard(1, total=10000))
    with pytest.raises(UsageError) as info:
        _merge(paths)
    text = str(info.value)
    assert text.startswith("shards missing: 2/10000 (b/callgrind); 3/10000 (c/callgrind); ")
    assert "7/10000 (no cells); ... and 9993 more; given: 1/10000 " in text
    assert len(text) < 1000


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            (1, 3),
            r"shard missing: 2/3 \(b/callgrind, e/callgrind\); given: 1/3 .*f0.json, 3/3 .*f1",
        ),
        ((1,), r"shards missing: 2/3 \(b/callgrind, e/callgrind\); 3/3 \(c/callgrind\)"),
        ((1, 2, 2, 3), r"shard 2/3 is given twice: .*f1.json and .*f2.json"),
    ],
)
def test_missing_and_doubled_shards_are_refused(
    tmp_path: Path, given: tuple[int, ...], message: str
) -> None:
    paths = _files(tmp_path, *(_shard(i) for i in given))
    with pytest.raises(UsageError, match=message):
        _merge(paths)


def test_shards_of_another_plan_are_refused_naming_the_difference(tmp_path: Path) -> None:
    other = _planned(argv="y")
    paths = _files(tmp_path, _shard(1), _shard(2, planned=other), _shard(3))
    with pytest.raises(UsageError) as e:
        _merge(paths)
    assert "f1.json (shard 2/3) is a shard of another plan than" in str(e.value)
    assert "a/callgrind argv ['x', 'a'] there, ['y', 'a'] here" in str(e.value)

    fewer = _planned(NAMES[:4])
    paths = _files(tmp_path, _shard(1), _shard(2, planned=fewer), _shard(3))
    with pytest.raises(UsageError, match="cells only there: e/callgrind"):
        _merge(paths)

    paths = _files(tmp_path, _shard(1, total=2), _shard(2), _shard(3))
    with pytest.raises(UsageError, match=r"is shard 2/3 and .* shard 1/2: one session is split"):
        _merge(paths)


def test_shards_of_another_environment_or_icount_are_refused(tmp_path: Path) -> None:
    paths = _files(tmp_path, _shard(1), _shard(2, fingerprint={"kernel": "6.2.0"}), _shard(3))
    with pytest.raises(
        UsageError, match=r"another environment .*kernel '6\.1\.0' there, '6\.2\.0' here"
    ):
        _merge(paths)
    paths = _files(tmp_path, _shard(1), _shard(2), _shard(3, fingerprint={"icount_version": "0.2"}))
    with pytest.raises(UsageError, match=r"written by icount 0.2, .* by icount 0.1.0"):
        _merge(paths)


def test_shards_measured_at_two_commits_are_refused_naming_both(tmp_path: Path) -> None:
    """They merged with exit 0 into a table no session produced. The commit is in the
    provenance beside each shard's results file."""
    paths = []
    for i, commit in enumerate(["1111aaa", "1111aaa", "2222bbb"], 1):
        p = tmp_path / f"s{i}.json"
        results.save(p, _shard(i), {"format": "icount-provenance", "commit": commit},
                     overwrite=True)  # fmt: skip
        paths.append(p)
    with pytest.raises(UsageError) as info:
        _merge(paths)
    assert str(info.value) == (
        f"the shards were measured at two commits: 1111aaa ({paths[0]}) and 2222bbb "
        f"({paths[2]}); merged, they would be a table no session produced (measure every "
        "shard at one commit (one pipeline run), then merge)"
    )
    # at one commit, or where a shard's provenance cannot say, they merge
    results.provenance_path(paths[2]).write_text('{"commit": "1111aaa"}')
    assert len(_merge(paths).cells) == len(NAMES)
    results.provenance_path(paths[2]).unlink()
    assert len(_merge(paths).cells) == len(NAMES)


def test_an_unfinished_shard_and_a_whole_session_among_shards_are_refused(
    tmp_path: Path,
) -> None:
    two = _shard(2)
    unfinished = Results(two.fingerprint, two.cells[:1], two.shard)
    paths = _files(tmp_path, _shard(1), unfinished, _shard(3))
    with pytest.raises(
        UsageError, match=r"\(shard 2/3\) lacks e/callgrind: the shard did not finish"
    ):
        _merge(paths)
    paths = _files(tmp_path, _shard(1), _whole())
    with pytest.raises(UsageError, match=r"f1\.json is a whole session and .*f0\.json one shard"):
        _merge(paths)
    # alone, a shard file is shown as it is (icount table of one file)
    (one,) = _files(tmp_path, _shard(2))
    alone = results.merge_inputs(results.load_inputs([one]), one_shard=True)
    assert alone == _shard(2)


def test_an_empty_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ResultsFileError, match="a folder with no results files"):
        results.load_inputs([tmp_path])


def test_table_and_compare_take_the_folder_of_shards(tmp_path: Path) -> None:
    from tests.support.cli import run_icount_here as run_icount  # reads files only

    folder = tmp_path / "shards"
    folder.mkdir()
    _files(folder, _shard(1), _shard(2), _shard(3))
    whole = tmp_path / "whole.json"
    results.save(whole, _whole(), None, overwrite=False)
    merged = run_icount(["table", str(folder), "-f", "json"])
    assert merged.returncode == 0, merged.stderr
    assert merged.stdout == whole.read_text()
    gate = run_icount(["compare", str(whole), str(folder), "-f", "csv"])
    assert gate.returncode == 0, gate.stderr
    assert gate.stdout.count(",unchanged,") == len(NAMES)

    (folder / "f1.json").unlink()
    refused = run_icount(["compare", str(whole), str(folder)])
    assert refused.returncode == 2
    assert refused.stderr.startswith("icount: error: shard missing: 2/3 (b/callgrind, e/callgrind)")
    alone = run_icount(["table", str(folder / "f0.json"), "-f", "csv"])
    assert alone.returncode == 0
    assert "f0.json is shard 1/3 of a session: only its cells" in alone.stderr
    assert [line.split(",")[0] for line in alone.stdout.splitlines()[1:]] == ["a", "d"]
