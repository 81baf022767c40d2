"""icount called in-process (tests/support/cli.py: run_icount_here) answers exactly as
`python -m icount` in its own process does: exit status, stdout and stderr, for help,
usage errors, bad input, tables and comparisons; and it leaves this process as it found
it. The fast tests that only read and write files call it to skip an interpreter start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import run_icount, run_icount_here, run_icount_here_bytes

ROOT = Path(__file__).resolve().parents[2]
BASE, NEW = (str(ROOT / "fixtures" / "compare" / f"loop-{n}.json") for n in ("base", "new"))


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["size", "--help"],
        ["--version"],
        ["table", "--format", "xml", BASE],  # a usage error: exit 2
        ["report"],  # no arguments: the command's help, exit 2
        ["table", str(ROOT / "pyproject.toml")],  # bad input: exit 6
        ["table", BASE],
        ["compare", "-f", "md", BASE, NEW],  # a regression: exit 3
        ["size", "-f", "csv", sys.executable],
    ],
)
def test_in_process_equals_a_process_of_its_own(args: list[str], tmp_path: Path) -> None:
    alone = run_icount(args, cwd=tmp_path)
    here = run_icount_here(args, cwd=tmp_path)
    assert (here.returncode, here.stdout, here.stderr) == (
        alone.returncode,
        alone.stdout,
        alone.stderr,
    )


def test_in_process_bytes_equal_a_process_of_its_own(tmp_path: Path) -> None:
    """The bytes as written, for tests of a stray carriage return or an encoding."""
    args = ["table", "-f", "csv", BASE]
    alone = subprocess.run([sys.executable, "-m", "icount", *args], cwd=tmp_path,
                           capture_output=True, timeout=600, check=False)  # fmt: skip
    here = run_icount_here_bytes(args, cwd=tmp_path)
    assert (here.returncode, here.stdout, here.stderr) == (0, alone.stdout, alone.stderr)
    assert isinstance(here.stdout, bytes) and here.stdout.count(b"\n") > 1


def _state() -> tuple[object, ...]:
    """What a call could change for the tests after it."""
    return (
        sys.argv[:],
        sys.modules["__main__"],
        sys.stdout,
        sys.stderr,
        os.getcwd(),
        dict(os.environ),
        signal.getsignal(signal.SIGINT),
        signal.getsignal(signal.SIGTERM),
    )


def test_in_process_leaves_the_process_as_it_was(tmp_path: Path) -> None:
    before = _state()
    done = run_icount_here(["table", "--format", "xml", BASE], cwd=tmp_path, env={"A": "1"})
    assert done.returncode == 2 and done.stderr.startswith("icount: error: ")
    assert _state() == before
