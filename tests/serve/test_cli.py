"""`icount serve` command-line mistakes: one line, exit 2 (or 4), nothing started.

In-process (tests/support/cli.py) where icount refuses before it launches anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import run_icount_here


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cmd", "./srv --port 8080"], "--cmd needs a command line with a {port} placeholder"),
        (["--cmd", "srv {port}", "--path", "x"], "--path takes NAME=/TARGET, got 'x'"),
        (["no-such-target"], "no adapter 'no-such-target'"),
        (["--path", "a=/"], "--name, --path, --path-*, --expect-*, --env and --cwd go with --cmd"),
        (["--cwd", "."], "--name, --path, --path-*, --expect-*, --env and --cwd go with --cmd"),
        (["--cmd", "sh {port}", "--cwd", "nowhere"], "--cwd nowhere: not a directory"),
        (["--warmup", "lots"], "--warmup takes a request count or 'auto', got 'lots'"),
        (["--server-cpus", "0", "--load-cpus", "0"], "share CPU 0"),
        (["--max-spread", "x"], "--max-spread takes a percentage"),
        (["--format", "xml"], "unknown format 'xml'"),
        (["--cmd", "s {port}", "--expect-json", "{"], "--expect-json is not JSON"),
        (["--load", "siege"], "unknown load generator 'siege'"),
        (["--max-load", "-1"], "is above --max-load -1; the machine is busy"),
    ],
)
def test_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    done = run_icount_here(["serve", *args], tmp_path)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "icount-results").exists()


def test_thread_needs_callgrind(tmp_path: Path) -> None:
    done = run_icount_here(
        ["serve", "--cmd", "true {port}", "--backend", "perf", "--thread", "1"], tmp_path
    )
    # perf cannot count here (exit 4, said so) or it can, and --thread is refused (exit 2)
    assert done.returncode in (2, 4), done.stderr
    assert "--thread needs the callgrind backend" in done.stderr or "perf" in done.stderr


def test_help_has_examples(tmp_path: Path) -> None:
    done = run_icount_here(["serve", "--help"], tmp_path)
    assert done.returncode == 0
    assert "icount serve c-epoll nginx --runs 3" in done.stdout


def test_a_cmd_server_that_cannot_be_launched_exits_4(tmp_path: Path) -> None:
    done = run_icount_here(["serve", "--cmd", "no-such-server-xyz {port}"], tmp_path)
    assert done.returncode == 4
    assert done.stderr.strip() == (
        "icount: error: command not found: no-such-server-xyz (check the name and your PATH)"
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--path", "he llo=/x"], "path name 'he llo' may use only letters"),
        (["--expect-header", "Bad Name: x"], "header name 'Bad Name' is not a valid HTTP header"),
        (["--expect-status", "999"], "'status' 999 is not an HTTP status code"),
    ],
)
def test_cmd_flags_meet_the_adapter_rules(tmp_path: Path, flags: list[str], message: str) -> None:
    done = run_icount_here(["serve", "--cmd", "true {port}", *flags], tmp_path)
    assert done.returncode == 2
    assert message in done.stderr and done.stderr.startswith("icount: error: --cmd: ")
