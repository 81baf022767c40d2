import json
import os
from pathlib import Path
from typing import Any

import pytest

from icount import results
from icount.errors import ResultsFileError, UsageError
from icount.results import Cell, Results, Run
from icount.results.details import CommandDetail

FP = {"backend": "callgrind", "tool_version": "valgrind 3.19.0"}


def make_cell(name: str, values: list[float], *, path: str = "", valid: bool = True) -> Cell:
    runs = tuple(
        Run(v, valid, None if valid else "exited with status 1", CommandDetail(0)) for v in values
    )
    return Cell(name, path, "callgrind", results.UNIT_INSTRUCTIONS, runs, {"argv": ["x"]}, 3, 0.01)


def test_round_trip_keeps_every_sample(tmp_path: Path) -> None:
    res = Results(FP, (make_cell("b", [3, 4, 5]), make_cell("a", [1, 2, 2])))
    out = tmp_path / "r.json"
    results.save(out, res, {"host": "x"}, overwrite=False)
    again = results.load(out)
    assert [c.name for c in again.sorted().cells] == ["a", "b"]
    assert again.sorted().cells[1].values == [3, 4, 5]
    assert results.results_json(again) == out.read_text()
    prov = json.loads(results.provenance_path(out).read_text())
    assert prov == {"host": "x"}
    assert "host" not in out.read_text()


def test_never_silently_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    res = Results(FP, (make_cell("a", [1, 1, 1]),))
    results.save(out, res, None, overwrite=False)
    with pytest.raises(UsageError, match=r"refusing to overwrite.*--force"):
        results.save(out, res, None, overwrite=False)
    assert results.next_free_path(tmp_path, "r") == tmp_path / "r-001.json"


def test_cell_validity_rules() -> None:
    assert make_cell("a", [100, 100, 100]).valid
    wide = make_cell("a", [100, 105, 100])
    assert not wide.valid and "spread 5.00%" in str(wide.reason)
    failed = make_cell("a", [100], valid=False)
    assert failed.reason == "run 1 of 3: exited with status 1"
    short = make_cell("a", [100, 100])
    assert short.reason == "only 2 of 3 runs completed"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "not valid JSON"),
        (b'{"format": "icount-results", "version": 1, "cells": [', "not valid JSON"),
        (b"\xff\xfe garbage", "not UTF-8"),
        (b'{"hello": 1}', "not an icount results file"),
        (b"[1, 2]", "not an icount results file"),
        (
            b'{"format": "icount-results", "version": 99}',
            "version 99; this icount reads versions 1, 2",
        ),
        (b'{"format": "icount-results", "version": 1, "fingerprint": {}}', "missing field 'cells'"),
        (
            b'{"format": "icount-results", "version": 1, "fingerprint": {}, '
            b'"cells": [{"name": 3}]}',
            "malformed",
        ),
    ],
)
def test_bad_results_files_name_the_problem(tmp_path: Path, content: bytes, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    with pytest.raises(ResultsFileError, match=message) as info:
        results.load(bad)
    assert str(bad) in str(info.value)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ResultsFileError, match="no such file"):
        results.load(tmp_path / "nope.json")
    with pytest.raises(ResultsFileError, match="directory"):
        results.load(tmp_path)


def test_merge_refuses_colliding_cells() -> None:
    a = Results(FP, (make_cell("a", [1, 1, 1]),))
    b = Results(FP, (make_cell("b", [2, 2, 2]),))
    merged = results.merge([("x.json", a), ("y.json", b)])
    assert sorted(c.name for c in merged.cells) == ["a", "b"]
    with pytest.raises(UsageError, match=r"a/callgrind \(x.json and z.json\)"):
        results.merge([("x.json", a), ("z.json", a)])


def _doc_with(tmp_path: Path, mutate: Any) -> Path:
    res = Results(FP, (make_cell("a", [100, 100, 100]), make_cell("b", [5, 5, 5])))
    doc = json.loads(results.results_json(res))
    mutate(doc)
    out = tmp_path / "edited.json"
    out.write_text(json.dumps(doc))
    return out


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["cells"][0]["runs"][0].update(value=float("nan")), "NaN is not a number"),
        (lambda d: d["cells"][0].update(median="abc"), "stored median 'abc' disagrees"),
        (lambda d: d["cells"][0].update(median=0), "stored median 0 disagrees"),
        (lambda d: d["cells"][1].update(name="a"), "cell a/callgrind appears twice"),
        (lambda d: d["cells"][0].update(valid=False), "stored valid False disagrees"),
    ],
)
def test_edited_or_damaged_files_are_refused(tmp_path: Path, mutate: Any, message: str) -> None:
    with pytest.raises(ResultsFileError, match=message):
        results.load(_doc_with(tmp_path, mutate))


def test_results_files_are_readable_by_others(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    old = os.umask(0o022)
    try:
        results.save(out, Results(FP, (make_cell("a", [1, 1, 1]),)), {}, overwrite=False)
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o644
    with pytest.raises(UsageError, match="is a directory"):
        results.write_atomic(tmp_path, "{}", overwrite=True)


def test_a_results_file_is_claimed_by_one_icount_at_a_time(tmp_path: Path) -> None:
    """Two `icount run -o same.json` started together both measured and exited 0, the
    file holding one run's cells: the second is refused before it measures."""
    out = tmp_path / "same.json"
    claimed = results.output_path(out, "run")
    assert results.output_path(out, "run") == claimed  # its own claim: a plan made again
    results.release_unused(claimed)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_the_second_icount_run_on_one_output_is_refused_at_once(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.support.cli import run_icount

    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from pathlib import Path; from icount import results; "
         "results.output_path(Path('same.json'), 'run'); print('held', flush=True); "
         "sys.stdin.read()"],
        cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        done = run_icount(["run", "-o", "same.json", "--", "true"], tmp_path, timeout=60)
    finally:
        holder.communicate("")
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"icount: error: another icount is writing {tmp_path / 'same.json'} now "
        "(wait for it to finish or choose another --output)\n"
    )
    assert not (tmp_path / "same.json").exists()
    assert [p.name for p in tmp_path.iterdir()] == []  # the holder's claim went with it


def test_an_output_named_like_an_artifacts_folder_is_refused_early(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"X\.artifacts is the name icount gives the folder"):
        results.output_path(tmp_path / "X.artifacts", "run")
    (tmp_path / "Y.artifacts").write_text("")
    with pytest.raises(UsageError, match=r"Y\.artifacts is a file"):
        results.output_path(tmp_path / "Y.json", "run")


def test_an_output_through_a_missing_folder_leaves_no_folder(tmp_path: Path) -> None:
    """`-o sub/../up.json` made `sub/`; folders made for an output that is never
    written are removed again."""
    up = results.output_path(tmp_path / "sub" / ".." / "up.json", "run")
    assert up == tmp_path / "up.json"
    results.release_unused(up)
    assert not (tmp_path / "sub").exists()
    deep = results.output_path(tmp_path / "a" / "b" / "r.json", "run")
    assert (tmp_path / "a" / "b").is_dir()
    results.release_unused(deep)
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["compare", "bad.json", "bad.json", "-o", "new/sub/cmp.json"],
        ["size", "missing.so", "-o", "new/sub/size.json"],
    ],
)
def test_a_command_failing_after_its_output_check_leaves_no_folder(
    icount: Any, tmp_path: Path, args: list[str]
) -> None:
    """Outputs nothing claims (compare, size, report -o) made their folders in the
    early check and left them empty when the command then failed."""
    (tmp_path / "bad.json").write_text("{}")
    done = icount(*args, cwd=tmp_path)
    assert done.returncode == 6, done.stderr
    assert not (tmp_path / "new").exists()
