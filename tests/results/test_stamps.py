"""Stamps: a table names the commits and sessions it mixes, and --at REF shows the
cells measured at another commit as not measured at REF yet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icount.errors import ExitCode
from icount.results import stamps
from tests.conftest import Icount
from tests.support.cli import icount_here

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "fixtures" / "compare" / "loop-base.json"
OLD, NEW = "1" * 40, "2" * 40


@pytest.fixture(scope="module")
def icount() -> Icount:
    """In-process: `icount table` reads files (and asks git what REF names)."""
    return icount_here


def _file(folder: Path, name: str, commit: str | None, started: str) -> Path:
    """loop-base.json with its cell renamed `name`, measured at `commit`."""
    doc = json.loads(BASE.read_text())
    doc["cells"][0]["name"] = name
    path = folder / f"{name}.json"
    path.write_text(json.dumps(doc))
    prov = {"format": "icount-provenance", "version": 1, "started_utc": started}
    if commit is not None:
        prov["commit"] = commit
    (folder / f"{name}.provenance.json").write_text(json.dumps(prov))
    return path


def test_a_table_of_two_commits_and_sessions_says_so(icount: Icount, tmp_path: Path) -> None:
    _file(tmp_path, "a", OLD, "2026-11-30T10:00:00+00:00")
    _file(tmp_path, "b", NEW, "2026-12-01T10:00:00+00:00")
    done = icount("table", "a.json", "b.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (
        f"icount: warning: the files were measured at 2 commits: a.json at {OLD[:12]}; "
        f"b.json at {NEW[:12]}\n"
    ) in done.stderr
    assert (
        "icount: warning: the cells come from 2 sessions: a.json began "
        "2026-11-30T10:00:00+00:00; b.json began 2026-12-01T10:00:00+00:00\n"
    ) in done.stderr


def test_one_session_says_nothing(icount: Icount, tmp_path: Path) -> None:
    _file(tmp_path, "a", OLD, "2026-11-30T10:00:00+00:00")
    done = icount("table", "a.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_at_ref_shows_the_cells_of_another_commit_as_not_measured(
    icount: Icount, tmp_path: Path
) -> None:
    _file(tmp_path, "a", NEW, "2026-12-01T10:00:00+00:00")
    _file(tmp_path, "b", OLD, "2026-11-30T10:00:00+00:00")
    _file(tmp_path, "c", NEW + stamps.DIRTY, "2026-12-01T11:00:00+00:00")
    _file(tmp_path, "d", None, "2026-12-01T12:00:00+00:00")
    # outside git, REF is a commit's hex prefix
    done = icount("table", "a.json", "b.json", "c.json", "d.json", "--at", NEW[:7], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    row_a = next(line for line in lines if line.startswith("a "))
    assert "2.107M" in row_a
    assert f"b/callgrind: not measured at {NEW[:7]} yet (measured at {OLD[:12]})" in done.stdout
    assert (
        f"c/callgrind: not measured at {NEW[:7]} yet (measured at {NEW[:12]} with "
        "uncommitted changes)"
    ) in done.stdout
    assert f"d/callgrind: not measured at {NEW[:7]} yet (no commit recorded)" in done.stdout
    as_json = icount("table", "a.json", "b.json", "--at", NEW[:7], "-f", "json", cwd=tmp_path)
    cells = {c["name"]: c for c in json.loads(as_json.stdout)["cells"]}
    assert cells["a"]["median"] == json.loads(BASE.read_text())["cells"][0]["median"]
    assert not cells["b"]["valid"] and cells["b"]["runs"] == []


def test_at_a_ref_that_names_nothing_is_one_line(icount: Icount, tmp_path: Path) -> None:
    _file(tmp_path, "a", NEW, "2026-12-01T10:00:00+00:00")
    done = icount("table", "a.json", "--at", "no-such-branch", cwd=tmp_path)
    assert done.returncode == ExitCode.USAGE
    assert done.stderr.startswith("icount: error: --at 'no-such-branch': no commit")
    assert done.stdout == ""
