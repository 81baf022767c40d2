"""A server whose port another process took between free_port() and its bind (a busy
machine's outgoing connections draw from the same ports) is started again on another
port before anything is counted (serve/server.py `running_server`, and `started_server`
for cold starts). The port is taken
on purpose here: a socket of the test listens on the port the first start is given."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from icount.serve import adapter as adapters
from icount.serve import server as server_mod
from icount.serve.cell_options import CellOptions
from icount.serve.runs import RunOutcome, measure_cold_start, measure_run
from icount.serve.server import Target, port_taken
from icount.session.options import Warmup
from tests.serve.test_runs import ADAPTER, SPLIT
from tests.support.fake_backend import FakeBackend, FakeConfig

PER_REQUEST = 1000.0 + 27.0 / 100  # the fake's cost a request, its window cost shared


@pytest.fixture
def target(tmp_path: Path) -> Target:
    (tmp_path / "adapter.toml").write_text(ADAPTER)
    return Target(adapters.load_adapter(tmp_path / "adapter.toml"), tmp_path / "build")


@pytest.fixture
def taken() -> Iterator[int]:
    """A port another process listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((server_mod.HOST, 0))
        s.listen()
        yield s.getsockname()[1]


def ports(first: list[int]) -> Callable[[], int]:
    """free_port() giving `first`'s ports, then free ones."""
    real = server_mod.free_port
    return lambda: first.pop(0) if first else real()


def run(
    target: Target, tmp_path: Path, config: FakeConfig, notes: list[str], cold: bool = False
) -> RunOutcome:
    opts = CellOptions(backend=FakeBackend(config), cpus=SPLIT, runs=1, reps=3, requests=100,
                       warmup=Warmup(20), idle_seconds=0)  # fmt: skip
    path = target.adapter.paths[0]
    if cold:
        return measure_cold_start(target, path, opts, tmp_path / "run-1", notes.append)
    return measure_run(target, path, opts, tmp_path / "run-1", None, notes.append)


def test_a_server_whose_port_was_taken_starts_again_on_another(
    target: Target, tmp_path: Path, taken: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_mod, "free_port", ports([taken]))
    config, notes = FakeConfig(), list[str]()
    outcome = run(target, tmp_path, config, notes)
    assert outcome.reason is None and outcome.value == pytest.approx(PER_REQUEST)
    first, second = config.started
    assert (first.returncode, second.returncode) == (1, 0)
    assert f"port {taken} was taken before the server listened on it: starting it again" in notes
    # the failed start's files, set aside; the run's own folder is the second start's
    aside = tmp_path / f"run-1.port-{taken}-taken" / "server.stderr"
    assert "Address already in use" in aside.read_text()
    assert not (tmp_path / "run-1" / "server.stderr").exists()


def test_a_cold_start_whose_port_was_taken_starts_again_on_another(
    target: Target, tmp_path: Path, taken: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_mod, "free_port", ports([taken]))
    config, notes = FakeConfig(), list[str]()
    outcome = run(target, tmp_path, config, notes, cold=True)
    # counted from the second start's exec: one answer (1000) and closing the count (27)
    assert outcome.reason is None and outcome.value == 1027.0
    first, second = config.started
    assert (first.returncode, second.returncode) == (1, 0)
    assert f"port {taken} was taken before the server listened on it: starting it again" in notes
    aside = tmp_path / f"run-1.port-{taken}-taken" / "server.stderr"
    assert "Address already in use" in aside.read_text()


def test_a_port_taken_at_every_start_ends_the_run_after_three(
    target: Target, tmp_path: Path, taken: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_mod, "free_port", lambda: taken)
    config, notes = FakeConfig(), list[str]()
    outcome = run(target, tmp_path, config, notes)
    assert outcome.value is None and outcome.reason is not None
    assert outcome.reason.startswith("the server exited with status 1")
    assert "Address already in use" in outcome.reason and "before it was ready" in outcome.reason
    assert len(config.started) == server_mod.PORT_TRIES == 3


def test_a_server_that_exits_with_its_port_free_is_not_started_again(
    target: Target, tmp_path: Path, taken: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exiting before it was ready is the run's reason where nothing else holds the port
    (the fake exits for want of its port: here the check says it is free)."""
    monkeypatch.setattr(server_mod, "free_port", ports([taken]))
    monkeypatch.setattr(server_mod, "port_taken", lambda port: False)
    config, notes = FakeConfig(), list[str]()
    outcome = run(target, tmp_path, config, notes)
    assert outcome.reason is not None and "before it was ready" in outcome.reason
    assert len(config.started) == 1


def test_a_port_is_taken_by_a_listener_or_a_connections_end_not_once_closed() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind((server_mod.HOST, 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert port_taken(port)
        with socket.create_connection((server_mod.HOST, port)) as client:
            assert port_taken(client.getsockname()[1])
    assert not port_taken(port)
