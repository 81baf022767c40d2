"""Fixtures for `icount serve` tests: the c-epoll server built once, adapter files
written per test, c-epoll processes started with fault flags on free ports, and a
check that nothing is left."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil
import pytest

from icount import backends, procs
from icount import cpus as cpus_mod
from icount.serve import adapter as adapters
from icount.serve.adapter import load_adapter
from icount.serve.cell_options import CellOptions
from icount.serve.http_client import fetch
from icount.serve.runs import RunOutcome, measure_run
from icount.serve.server import Target
from tests.support.cli import run_icount

__all__ = [
    "HOST",
    "JSON_PATH",
    "PLAINTEXT",
    "AdapterMaker",
    "cells",
    "leftovers",
    "measure_c_server",
    "run_icount",
]
HOST = "127.0.0.1"

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


AdapterMaker = Callable[..., Path]


def measure_c_server(argv: Sequence[str], folder: Path, name: str, **opts: Any) -> RunOutcome:
    """One run under callgrind, as `icount serve` takes it, of a ground-truth C server
    (`argv` holds {port}) on its plaintext path, its adapter written to folder/name;
    `opts`: the CellOptions beside the backend, the CPUs and the one run."""
    adapter_dir = folder / name
    adapter_dir.mkdir(parents=True)
    start = ", ".join(f'"{a}"' for a in argv)
    (adapter_dir / "adapter.toml").write_text(
        f'name = "{name}"\nstart = [{start}]\nbinary = "{argv[0]}"\n'
        '[ready]\ntarget = "/plaintext"\ntimeout_s = 60\n' + PLAINTEXT
    )
    adapter = load_adapter(adapter_dir / "adapter.toml")
    split = cpus_mod.split(None, None)
    cell = CellOptions(backend=backends.create("callgrind"), cpus=split, runs=1, **opts)
    with cpus_mod.pinned_self(split.load):
        return measure_run(Target(adapter, folder / "build"), adapter.paths[0], cell,
                           folder / f"run-{name}", None, lambda text: None)  # fmt: skip


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


def cells(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    doc = json.loads(path.read_text())
    return {(c["name"], c["path"]): c for c in doc["cells"]}


# icount runs a program from a link in its work dir (WORKDIR/bin/NAME), so a server's
# command line names the link, not the test's folder the link points into
_WORKDIR_PROGRAM = re.compile(r"/icount-[^/]+/bin/[^/]+$")


def _names(arg: str, marker: str) -> bool:
    if marker in arg:
        return True
    if not _WORKDIR_PROGRAM.search(arg):
        return False
    # a link still there points into `marker` or not; one whose work dir is gone belongs
    # to a process that outlived the icount that made it: a leftover whoever made it
    return not os.path.lexists(arg) or marker in os.path.realpath(arg)


def leftovers(marker: str) -> list[str]:
    """Processes whose command line mentions `marker` (a test's own temp folder), also
    through the link icount runs a program from, and any process still running a
    program from a work dir icount has removed."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        argv = proc.info["cmdline"] or []
        if any(_names(a, marker) for a in argv):
            found.append(f"{proc.info['pid']}: {' '.join(argv)[:200]}")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def wait_ready(port: int, path: adapters.PathSpec, child: procs.Child, timeout: float) -> None:
    def answers() -> bool:
        if child.poll() is not None:
            raise AssertionError(f"server exited: {procs.describe_exit(child.popen.returncode)}")
        try:
            fetch(HOST, port, path, 1.0)
        except OSError:
            return False
        return True

    assert procs.wait_until(answers, timeout), f"server on port {port} not ready in {timeout} s"


@pytest.fixture(scope="session")
def c_epoll_adapter(tmp_path_factory: pytest.TempPathFactory) -> tuple[adapters.Adapter, Path]:
    """The bundled c-epoll adapter, built once for the session."""
    target = adapters.load_adapter(adapters.adapters_dir() / "c-epoll" / "adapter.toml")
    reason = adapters.unavailable_reason(target)
    if reason:
        pytest.skip(f"c-epoll: {reason}")
    build = tmp_path_factory.mktemp("c-epoll-build")
    adapters.build_adapter(target, build)
    return target, build


StartServer = Callable[..., int]


@pytest.fixture
def c_server(c_epoll_adapter: tuple[adapters.Adapter, Path]) -> Iterator[StartServer]:
    """start(*flags) -> port: a c-epoll process with extra flags, stopped after the test."""
    target, build = c_epoll_adapter
    children: list[procs.Child] = []

    def start(*flags: str) -> int:
        port = free_port()
        argv = adapters.expand(target.start, port=port, build_dir=build, adapter=target)
        child = procs.spawn([*argv, *flags])
        children.append(child)

        # Readiness through a TCP connect only: a request would count against --crash-after.
        def listening() -> bool:
            try:
                socket.create_connection((HOST, port), timeout=1).close()
            except OSError:
                return False
            return True

        assert procs.wait_until(listening, 10), "c-epoll did not start listening"
        return port

    yield start
    for child in children:
        child.stop()
