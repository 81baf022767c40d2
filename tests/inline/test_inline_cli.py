"""`icount inline` through its command line: output and one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.cli import run_icount_here

from .common import DATA, EXE_A, EXE_B, GOLDEN, ROOT


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "icount", "inline", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def cli_here(*args: str) -> subprocess.CompletedProcess[str]:
    """In-process: for the mistakes icount refuses before it launches anything."""
    return run_icount_here(["inline", *args], ROOT)


def test_cli_on_saved_profiles_matches_the_golden_table() -> None:
    done = cli(
        str(DATA / "O2.callgrind"),
        str(DATA / "O2-noinline.callgrind"),
        "--exe-a",
        str(EXE_A),
        "--exe-b",
        str(EXE_B),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (GOLDEN / "inline.txt").read_text()


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.callgrind"
    good = DATA / "O2.callgrind"
    bad.write_bytes(good.read_bytes()[:5000])
    text_file = tmp_path / "notes.txt"
    text_file.write_text("garbage\n")
    many = tmp_path / "many.callgrind"
    events = " ".join(f"e{i}" for i in range(5000))
    many.write_text(f"events: {events}\nfn=main\n1 1\n")
    cases = [
        ((str(good), str(text_file)), 6, "notes.txt: not a callgrind profile"),
        ((str(bad), str(good)), 6, "bad.callgrind: truncated"),
        ((str(good), str(good), "--", "20"), 2, "arguments after -- apply to programs only"),
        ((str(good), str(good), "--format", "csv"), 2, "--format csv does not print an inline"),
        ((str(good), str(good), "--event", "Dr"), 2, "has no event Dr (Ir)"),
        ((str(many), str(good), "--event", "Dr"), 2, "has no event Dr (e0 e1 e2"),
        ((str(good), str(good), "--min-share", "x"), 2, "--min-share takes a percentage"),
        ((str(tmp_path / "nope"), str(good)), 4, "command not found"),
    ]
    for args, code, text in cases:
        done = cli_here(*args)
        assert done.returncode == code, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and text in lines[0], (args, done.stderr)
        assert "Traceback" not in done.stderr and len(lines[0]) < 400
