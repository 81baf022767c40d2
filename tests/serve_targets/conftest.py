"""Shared fixtures: the c-epoll server built once, started with fault flags on free ports."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from icount import procs
from icount.serve import adapter as adapters
from icount.serve.http_client import fetch

HOST = "127.0.0.1"


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
def c_epoll(tmp_path_factory: pytest.TempPathFactory) -> tuple[adapters.Adapter, Path]:
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
def c_server(c_epoll: tuple[adapters.Adapter, Path]) -> Iterator[StartServer]:
    """start(*flags) -> port: a c-epoll process with extra flags, stopped after the test."""
    target, build = c_epoll
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
