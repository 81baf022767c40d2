"""The files the CLI writes: refused before measuring when they cannot be written, and
never replaced unasked (results, provenance, another command's results file)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import icount_here

Icount = Callable[..., Any]


@pytest.fixture(scope="module")
def here() -> Icount:
    """icount in-process, for the commands refused before anything runs or that only
    read and write files; a FIFO, which could hang a bug, is met in a process of its own."""
    return icount_here


DOC = {
    "format": "icount-results",
    "version": 2,
    "fingerprint": {"backend": "callgrind"},
    "cells": [
        {
            "name": "a",
            "path": "",
            "backend": "callgrind",
            "unit": "instructions",
            "runs_wanted": 1,
            "max_spread": 0.01,
            "runs": [{"value": 10, "valid": True, "reason": None, "detail": None}],
        }
    ],
}


def _one_line_error(done: Any, code: int, message: str) -> None:
    assert done.returncode == code, done.stderr
    assert message in done.stderr, done.stderr
    assert done.stderr.startswith("icount: error: ") and done.stderr.count("\n") == 1, done.stderr


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("adir", "adir is a directory"),
        ("afile/r.json", "cannot write afile/r.json: Not a directory"),
        ("/proc/x.json", "cannot write /proc/x.json"),
    ],
)
def test_run_refuses_an_unwritable_output_before_measuring(
    here: Icount, tmp_path: Path, output: str, message: str
) -> None:
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").touch()
    # the error comes before the backend is chosen: no "icount: backend ..." line
    _one_line_error(here("run", "-o", output, "--", "true", cwd=tmp_path), 2, message)


def test_run_never_replaces_a_provenance_file_unasked(here: Icount, tmp_path: Path) -> None:
    (tmp_path / "r5.provenance.json").write_text("{}")
    done = here("run", "-o", "r5.json", "--", "true", cwd=tmp_path)
    _one_line_error(done, 2, "r5.provenance.json exists; refusing to overwrite it (pass --force)")
    assert (tmp_path / "r5.provenance.json").read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r5.provenance.json"]


def test_an_unused_default_name_is_given_back(here: Icount, tmp_path: Path) -> None:
    done = here("run", "--backend", "gpu", "--", "true", cwd=tmp_path)
    _one_line_error(done, 2, "unknown backend 'gpu'")
    assert list((tmp_path / "icount-results").iterdir()) == []  # run-001 is free again


def test_serve_never_replaces_a_provenance_file_unasked(
    here: Icount, tmp_path: Path, need_valgrind: None
) -> None:
    (tmp_path / "s.provenance.json").write_text("{}")
    done = here(
        "serve", "--backend", "callgrind", "--cmd", "true {port}", "-o", "s.json", cwd=tmp_path
    )
    _one_line_error(done, 2, "s.provenance.json exists; refusing to overwrite it (pass --force)")


@pytest.mark.parametrize("command", ["compare", "report"])
def test_compare_and_report_never_replace_a_results_file_unasked(
    here: Icount, tmp_path: Path, command: str
) -> None:
    for name in ("base.json", "new.json", "third.json"):
        (tmp_path / name).write_text(json.dumps(DOC))
    before = (tmp_path / "third.json").read_text()
    done = here(command, "base.json", "new.json", "-o", "third.json", cwd=tmp_path)
    _one_line_error(done, 2, "--output third.json is an icount results file; refusing")
    assert (tmp_path / "third.json").read_text() == before
    if command == "compare":
        forced = here(command, "base.json", "new.json", "-o", "third.json", "--force", cwd=tmp_path)
        assert forced.returncode == 0, forced.stderr
        assert "verdict" in (tmp_path / "third.json").read_text()  # the table replaced it
    # its own earlier output is replaced without asking
    (tmp_path / "out.txt").write_text("an earlier comparison\n")
    again = here(command, "base.json", "new.json", "-o", "out.txt", cwd=tmp_path)
    assert again.returncode == 0, again.stderr


@pytest.mark.parametrize("command", ["compare", "report", "size"])
def test_a_fifo_output_is_refused_and_left_alone(
    icount: Icount, tmp_path: Path, command: str
) -> None:
    import os

    (tmp_path / "base.json").write_text(json.dumps(DOC))
    os.mkfifo(tmp_path / "out")
    inputs = ["/bin/true"] if command == "size" else ["base.json", "base.json"]
    force = [] if command == "report" else ["--force"]  # --force does not write to a FIFO
    done = icount(command, *inputs, "-o", "out", *force, cwd=tmp_path, timeout=60)
    _one_line_error(done, 2, "out is not a regular file")
    assert (tmp_path / "out").is_fifo()


@pytest.mark.slow
def test_an_output_folder_made_immutable_mid_run_loses_no_cell(
    icount: Icount, tmp_path: Path, need_valgrind: None
) -> None:
    """The second command makes the results folder immutable: the save after it fails,
    and the cells measured so far (that one's too) are kept elsewhere, named in one line."""
    import shutil
    import subprocess

    from icount import results

    out = tmp_path / "out"
    out.mkdir()
    chattr = shutil.which("chattr")
    probe = tmp_path / "probe"
    probe.mkdir()
    if chattr is None or subprocess.run([chattr, "+i", str(probe)]).returncode != 0:
        pytest.skip("chattr +i is not permitted here (needs CAP_LINUX_IMMUTABLE)")
    subprocess.run([chattr, "-i", str(probe)], check=True)
    try:
        done = icount(
            "run", "--backend", "callgrind", "--runs", "1", "--cmd", "a=true",
            "--cmd", f"b={chattr} +i {out}", "--cmd", "c=true", "-o", str(out / "r.json"),
            "-q", cwd=tmp_path,
        )  # fmt: skip
    finally:
        subprocess.run([chattr, "-i", str(out)], check=True)
    _one_line_error(done, 2, f"cannot write {out / 'r.json'}: Operation not permitted; the 2")
    spare = Path(done.stderr.split(" are in ")[1].split(" ")[0])
    try:
        assert [c.name for c in results.load(spare).sorted().cells] == ["a", "b"]
        assert [c.name for c in results.load(out / "r.json").cells] == ["a"]
    finally:
        spare.unlink()
        results.provenance_path(spare).unlink()


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_report_reads_only_regular_files(icount: Icount, tmp_path: Path, special: str) -> None:
    import os

    if special == "fifo":
        os.mkfifo(tmp_path / "fifo")
    done = icount("report", special, "-o", "r.html", cwd=tmp_path, timeout=60)
    _one_line_error(done, 6, f"{special}: is not a regular file")


def test_inline_keep_profiles_that_is_a_file(here: Icount, tmp_path: Path) -> None:
    (tmp_path / "afile").touch()
    done = here("inline", "/bin/true", "/bin/true", "--keep-profiles", "afile", cwd=tmp_path)
    _one_line_error(done, 2, "--keep-profiles afile: cannot make the folder: File exists")


@pytest.mark.slow
def test_a_reused_artifacts_folder_counts_nothing_stale(
    icount: Icount, tmp_path: Path, need_valgrind: None
) -> None:
    """`--keep-profiles -o r.json --force` twice: the second run's count is not the sum
    with the first's profiles left in r.artifacts (111,311 then 222,622 before)."""
    counts = []
    for _ in range(2):
        done = icount("run", "--backend", "callgrind", "--keep-profiles", "--runs", "1",
                      "-o", "r.json", "--force", "-q", "-f", "csv", "--", "/bin/true",
                      cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
        counts.append(done.stdout.splitlines()[1].split(",")[4])
    assert counts[0] == counts[1]
