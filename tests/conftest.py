"""Fixtures every test folder may use: the CLI run as a user runs it, C programs built
on the fly, and a skip (naming what is missing) where valgrind is not installed."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import run_icount

Icount = Callable[..., "subprocess.CompletedProcess[str]"]


def _icount(
    *args: str, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return run_icount(args, cwd, timeout)


# Read by `icount run` and `icount serve` as the shard to measure (icount/shards.py): a
# test suite run inside a sharded CI job must not shard the sessions its tests start.
SHARD_VARIABLES = ("CI_NODE_INDEX", "BUILDKITE_PARALLEL_JOB", "JOB_COMPLETION_INDEX")


@pytest.fixture(autouse=True)
def _no_ci_shard(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SHARD_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _terminal_of_120_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables are as wide as the terminal ($COLUMNS): every test sees one of 120, whatever
    terminal runs the suite (and whatever a library wrote into the C environment)."""
    monkeypatch.setenv("COLUMNS", "120")


@pytest.fixture(scope="session")
def icount() -> Icount:
    """Run the real CLI in a subprocess, as a user would: icount("run", "--", ...)."""
    return _icount


@pytest.fixture(scope="session")
def compile_c(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Path]:
    """Compile a C source with gcc -O2 into a session temp dir; returns the binary."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed (scripts/setup.sh installs it)")
    out_dir = tmp_path_factory.mktemp("cbin")

    def build(name: str, source: str) -> Path:
        src = out_dir / f"{name}.c"
        src.write_text(source)
        exe = out_dir / name
        subprocess.run(["gcc", "-O2", "-o", str(exe), str(src)], check=True)
        return exe

    return build


@pytest.fixture(scope="session")
def need_valgrind() -> None:
    for tool in ("valgrind", "vgdb"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (scripts/setup.sh installs valgrind)")
