"""Fixtures for `icount serve` tests: the c-epoll server built once, adapter files
written per test, the CLI run as a user runs it, and a check that nothing is left."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psutil
import pytest

REPO = Path(__file__).resolve().parents[2]
C_EPOLL = REPO / "adapters" / "c-epoll"

PLAINTEXT = """
[[paths]]
name = "plaintext"
target = "/plaintext"
[paths.expect]
status = 200
body = "Hello, World!"
"""

JSON_PATH = """
[[paths]]
name = "json"
target = "/json"
[paths.expect]
status = 200
json = { message = "Hello, World!" }
"""


@pytest.fixture(scope="session")
def c_epoll(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled c-epoll server, built by its own adapter's build steps."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed (scripts/setup.sh installs it)")
    from icount.serve.adapter import build_adapter, load_adapter

    build_dir = tmp_path_factory.mktemp("c-epoll-build")
    build_adapter(load_adapter(C_EPOLL / "adapter.toml"), build_dir)
    return build_dir / "c-epoll"


@pytest.fixture(scope="session")
def need_valgrind() -> None:
    for tool in ("valgrind", "vgdb"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (scripts/setup.sh installs valgrind)")


AdapterMaker = Callable[..., Path]


@pytest.fixture
def make_adapter(tmp_path: Path, c_epoll: Path) -> AdapterMaker:
    """Write adapters/<name>/adapter.toml starting c-epoll with extra flags."""

    def make(name: str, *flags: str, paths: str = PLAINTEXT, extra: str = "") -> Path:
        folder = tmp_path / "adapters" / name
        folder.mkdir(parents=True, exist_ok=True)
        argv = [str(c_epoll), "--port", "{port}", *flags]
        toml = (
            f"name = {json.dumps(name)}\n"
            f"start = {json.dumps(argv)}\n"
            f"binary = {json.dumps(str(c_epoll))}\n{extra}\n"
            '[ready]\ntarget = "/plaintext"\ntimeout_s = 30\n' + paths
        )
        (folder / "adapter.toml").write_text(toml)
        return folder / "adapter.toml"

    return make


def run_icount(
    args: Sequence[str], cwd: Path, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "icount", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def cells(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    doc = json.loads(path.read_text())
    return {(c["name"], c["path"]): c for c in doc["cells"]}


def leftovers(marker: str) -> list[str]:
    """Processes whose command line mentions `marker` (a test's own temp folder)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if marker in cmdline:
            found.append(f"{proc.info['pid']}: {cmdline[:200]}")
    return found
