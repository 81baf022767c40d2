"""A build runs from one fixed path (WORKDIR/bin/NAME), so A/B measures only the build:
the same binary copied into two folders counts the same (issue 20, item 5)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from icount import backends, environment, procs
from icount.backends.callgrind import record_profiles
from icount.backends.valgrind import read_ir
from icount.measure_command import CommandSpec, RunOptions, measure_once

pytestmark = pytest.mark.slow

SOURCE = '#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n'
# the second folder's name is 30 letters longer: the program's path moves the stack
FOLDERS = ("a", "b" * 31)


def _two_copies(tmp_path: Path) -> list[Path]:
    if shutil.which("gcc") is None or shutil.which("valgrind") is None:
        pytest.skip("needs gcc and valgrind")
    src = tmp_path / "p.c"
    src.write_text(SOURCE)
    built = tmp_path / "prog"
    subprocess.run(["gcc", "-O2", "-o", str(built), str(src)], check=True)
    copies = []
    for folder in FOLDERS:
        (tmp_path / folder).mkdir()
        copies.append(Path(shutil.copy2(built, tmp_path / folder / "prog")))
    return copies


def _plain_callgrind(program: Path, out: Path) -> int:
    """The program under callgrind as given, from its own folder's path: the control."""
    prefix, _ = environment.aslr_wrapper()
    valgrind = procs.require("valgrind", "apt-get install valgrind")
    done = procs.run(
        [*prefix, valgrind, "--tool=callgrind", f"--callgrind-out-file={out}", str(program)],
        env=environment.clean_env(out.parent),
        cwd=out.parent,
        timeout=120,
    )
    assert done.ok, done.stderr
    return read_ir(out)


def test_the_same_binary_from_two_folders_counts_the_same(tmp_path: Path) -> None:
    copies = _two_copies(tmp_path)
    # without a fixed path the longer folder costs more: the test would see a regression
    plain = [_plain_callgrind(p, tmp_path / f"plain.{i}") for i, p in enumerate(copies)]
    assert plain[0] != plain[1]

    opts = RunOptions(backend=backends.create("callgrind"), runs=1)
    runs = [
        measure_once(CommandSpec("prog", (str(p),)), opts, tmp_path / f"run-{i}")
        for i, p in enumerate(copies)
    ]
    assert all(r.valid for r in runs), [r.reason for r in runs]
    assert runs[0].value == runs[1].value

    # with --cwd the link goes in a work dir of icount's, not in the user's folder
    mine = tmp_path / "mine"
    mine.mkdir()
    given = RunOptions(backend=opts.backend, runs=1, cwd=mine)
    run = measure_once(CommandSpec("prog", (str(copies[1]),)), given, tmp_path / "run-cwd")
    assert run.valid and list(mine.iterdir()) == []

    # inline records its builds the same way
    recorded = [
        sum(read_ir(f) for f in record_profiles([str(p)], tmp_path / f"inline-{i}"))
        for i, p in enumerate(copies)
    ]
    assert recorded[0] == recorded[1]


def test_a_program_that_is_a_link_runs_as_given(tmp_path: Path) -> None:
    # a venv's python finds its environment through the link's own folder
    target = tmp_path / "real"
    target.write_text("#!/bin/sh\n")
    link = tmp_path / "venv-python"
    link.symlink_to(target)
    work = tmp_path / "work"
    work.mkdir()
    assert environment.fixed_program([str(link), "-c", "1"], work) == [str(link), "-c", "1"]
    fixed = environment.fixed_program([str(target), "x"], work)
    assert fixed == [str(work / "bin" / "real"), "x"]
    assert Path(fixed[0]).resolve() == target.resolve()
