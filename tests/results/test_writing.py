"""Writing results: what -o can be is checked before anything is measured, a folder that
becomes unwritable loses no cell, two runs never claim one file, nothing is replaced
unasked."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from icount import results
from icount.errors import OutputError, UsageError
from icount.results import Cell, Results, Run
from icount.results.details import CommandDetail

FP = {"backend": "callgrind", "tool_version": "valgrind 3.19.0"}


def _cell(name: str) -> Cell:
    runs = tuple(Run(v, True, None, CommandDetail(0)) for v in (5.0, 5.0, 5.0))
    return Cell(name, "", "callgrind", results.UNIT_INSTRUCTIONS, runs, {"argv": ["x"]}, 3, 0.01)


def _fifo(tmp_path: Path) -> Path:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    return fifo


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d, "is a directory"),
        (_fifo, "is not a regular file"),
        (lambda d: (d / "afile").touch() or d / "afile" / "r.json", "Not a directory"),
        (lambda d: Path("/proc/icount-test/r.json"), "cannot write /proc/icount-test/r.json"),
        (lambda d: Path("/proc/r.json"), "cannot write /proc/r.json"),
    ],
    ids=["directory", "fifo", "parent-is-a-file", "proc-subfolder", "proc"],
)
def test_an_output_that_cannot_be_written_is_refused_before_measuring(
    tmp_path: Path, make: object, message: str
) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(OutputError, match=message) as info:
        results.output_path(path, "run")
    assert info.value.path == str(path) and "--output" in str(info.value)


@pytest.fixture
def immutable(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "frozen"
    folder.mkdir()
    chattr = shutil.which("chattr")
    done = chattr and subprocess.run([chattr, "+i", str(folder)], capture_output=True)
    if not done or done.returncode != 0:
        pytest.skip("chattr +i is not permitted here (needs CAP_LINUX_IMMUTABLE)")
    try:
        yield folder
    finally:
        subprocess.run([str(chattr), "-i", str(folder)], check=True)


def test_an_immutable_folder_is_refused_before_measuring(immutable: Path) -> None:
    with pytest.raises(OutputError, match="Operation not permitted"):
        results.output_path(immutable / "r.json", "run")
    assert list(immutable.iterdir()) == []


def test_a_folder_that_becomes_unwritable_loses_no_cell(tmp_path: Path) -> None:
    out = tmp_path / "out" / "r.json"
    one = Results(FP, (_cell("a"),))
    results.save(out, one, {"host": "x"}, overwrite=True)
    # mid-run the folder goes away and a file takes its name: nothing can be created there
    shutil.rmtree(out.parent)
    out.parent.write_text("")
    two = one.with_cell(_cell("b"))
    with pytest.raises(OutputError, match=r"cannot write .*r\.json: Not a directory") as info:
        results.save(out, two, {"host": "x"}, overwrite=True)
    message = str(info.value)
    assert "the 2 cells measured so far are in " in message
    spare = Path(message.split(" are in ")[1].split(" ")[0].rstrip(";"))
    try:
        assert results.load(spare).sorted() == two.sorted()  # the cell in progress too
        assert results.provenance_path(spare).read_text() == '{\n  "host": "x"\n}\n'
    finally:
        spare.unlink()
        results.provenance_path(spare).unlink()


def test_default_names_are_reserved_atomically(tmp_path: Path) -> None:
    first = results.next_free_path(tmp_path, "run")
    # nothing written yet: the second run started meanwhile must not claim the same file
    second = results.next_free_path(tmp_path, "run")
    assert (first.name, second.name) == ("run-001.json", "run-002.json")

    claimed: list[Path] = []
    lock = threading.Lock()

    def claim() -> None:
        path = results.next_free_path(tmp_path, "race")
        with lock:
            claimed.append(path)

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(claimed)) == 8

    # a number whose provenance alone is left is skipped; an unused reservation is freed
    (tmp_path / "run-003.provenance.json").write_text("{}")
    assert results.next_free_path(tmp_path, "run").name == "run-004.json"
    results.release_unused(first)
    assert results.next_free_path(tmp_path, "run").name == "run-001.json"


def test_a_provenance_file_is_not_replaced_unasked(tmp_path: Path) -> None:
    out = tmp_path / "r5.json"
    results.provenance_path(out).write_text("{}")
    with pytest.raises(UsageError, match=r"r5\.provenance\.json exists; refusing"):
        results.refuse_to_replace(out)


def test_results_and_provenance_files_are_told_from_other_files(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    results.save(out, Results(FP, (_cell("a"),)), {"format": "icount-provenance"}, overwrite=True)
    (tmp_path / "cmp.md").write_text("| name |\n")
    assert results.holds_measurements(out)
    assert results.holds_measurements(results.provenance_path(out))
    assert not results.holds_measurements(tmp_path / "cmp.md")
    assert not results.holds_measurements(tmp_path / "missing.json")
    assert not results.holds_measurements(_fifo(tmp_path))  # refused unread, never blocks


def test_an_argument_that_is_not_utf_8_is_saved_and_then_refused_in_one_line(
    tmp_path: Path,
) -> None:
    """`icount run -- echo $'\\xff'`: Python holds the byte as the lone surrogate \\udcff.
    Writing the results and provenance was an internal error after the measurement (the
    cells lost); both are written (ASCII escapes), and loading them is one line."""
    import dataclasses
    import json

    from icount.errors import ResultsFileError

    cell = dataclasses.replace(_cell("echo"), params={"argv": ["echo", "\udcff"]})
    path = tmp_path / "r.json"
    results.save(path, Results(FP, (cell,)), {"argv": ["icount", "\udcff"]}, overwrite=True)
    for written in (path, results.provenance_path(path)):
        text = written.read_bytes().decode("utf-8")
        assert "\\udcff" in text and json.loads(text)
    with pytest.raises(ResultsFileError, match=r"a lone surrogate in \\udcff\)"):
        results.load(path)
