"""The idle window's requests under idle arrival (serve/idle_window.py `idle_window`), through the
fake backend, whose counts are known by construction: their own work is taken out of the
window's count at the reps' figure a request; a closed loop's idle window, and a collected
runtime's, are sent none, as before; files from before read 0 requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icount.cpus import CpuSplit
from icount.results.details import IdleCount, ServeDetail, detail_from_json
from icount.serve import adapter as adapters
from icount.serve import idle_window as idle_mod
from icount.serve.cell_options import CellOptions
from icount.serve.runs import RunOutcome, measure_run
from icount.serve.server import Target
from icount.session.options import Arrival, Warmup
from tests.support.fake_backend import FakeBackend, FakeConfig

from .conftest import PLAINTEXT

SPLIT = CpuSplit((0,), (0,), "test")
ADAPTER = 'name = "fake"\nstart = ["true", "--port", "{port}"]\n[ready]\ntarget = "/plaintext"\n'
ADAPTER += PLAINTEXT
# every request the server answers before the idle window: the readiness probe, the
# verification, the warm-up and 3 windows of 100
BEFORE = 1 + 1 + 20 + 300


@pytest.fixture
def target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Target:
    # an idle window of 0.1 s with a request every 0.05 s: 2 requests, no settling pause
    monkeypatch.setattr(idle_mod, "IDLE_SETTLE_S", 0.0)
    monkeypatch.setattr(idle_mod, "IDLE_REQUEST_EVERY_S", 0.05)
    (tmp_path / "adapter.toml").write_text(ADAPTER)
    return Target(adapters.load_adapter(tmp_path / "adapter.toml"), tmp_path / "build")


def run(target: Target, tmp_path: Path, config: FakeConfig, **kw: Any) -> ServeDetail:
    opts = CellOptions(backend=FakeBackend(config), cpus=SPLIT, runs=1, reps=3, requests=100,
                       warmup=Warmup(20), idle_seconds=0.1, **kw)  # fmt: skip
    outcome: RunOutcome = measure_run(
        target, target.adapter.paths[0], opts, tmp_path / "run", None, lambda text: None
    )
    assert outcome.reason is None and outcome.detail is not None, outcome.reason
    return outcome.detail


def test_the_idle_windows_requests_are_taken_out_at_the_reps_figure(
    target: Target, tmp_path: Path
) -> None:
    config = FakeConfig(cost=lambda i, p: 1000.0, window_cost=27.0)
    d = run(target, tmp_path, config, arrival=Arrival.IDLE)
    assert d.idle is not None
    # each rep 100 x 1000 + 27: 1000.27 a request. The idle window: one request before it
    # (outside), 2 inside at 1000 each, and its own 27; the 2 taken out at 1000.27 leave
    # 27 - 0.54 (the reps' window cost in the figure a request: second order)
    assert (d.idle.requests, d.idle.served) == (2, 2000.54)
    assert d.idle.instructions == 26.46
    assert d.idle.seconds == 0.1 and d.time_share is None and not d.clock_subtracted
    (server,) = config.started
    assert server.requests == BEFORE + 1 + 2
    assert d.idle.to_json() == {"instructions": d.idle.instructions, "seconds": 0.1,
                                "requests": 2, "served": 2000.54}  # fmt: skip


def test_a_closed_loops_idle_window_has_no_request(target: Target, tmp_path: Path) -> None:
    config = FakeConfig(cost=lambda i, p: 1000.0, window_cost=27.0)
    d = run(target, tmp_path, config, arrival=Arrival.CLOSED)
    assert d.idle == IdleCount(27.0, 0.1)
    assert d.idle.to_json() == {"instructions": 27.0, "seconds": 0.1}
    assert config.started[0].requests == BEFORE


def test_a_collected_runtimes_idle_window_stays_without_requests(
    target: Target, tmp_path: Path
) -> None:
    """A collector running 500 a request: the idle window is sent none, so that the
    runtime's work in it (none here) stays work with no request, which the bound over
    spans reads as a collector driven by the clock where it is more than the largest
    collection seen (2 requests' 1000 against 500 would have been)."""
    config = FakeConfig(cost=lambda i, p: 1000.0, window_cost=27.0, collector=lambda i: 500.0)
    d = run(target, tmp_path, config, arrival=Arrival.IDLE)
    assert d.runtime is not None
    assert d.idle == IdleCount(27.0, 0.1)
    assert config.started[0].requests == BEFORE


def test_the_requests_share_lowers_the_clocks_rate_to_what_the_clock_did(
    target: Target, tmp_path: Path
) -> None:
    """A clock of 2M instructions a second beside the requests: the rate is the clock's,
    the 2 requests' 2000 out of it."""
    config = FakeConfig(cost=lambda i, p: 1000.0, window_cost=0.0, clock_rate=2_000_000.0)
    d = run(target, tmp_path, config, arrival=Arrival.IDLE)
    assert d.idle is not None and d.idle.requests == 2
    rate = d.idle.instructions / d.idle.seconds
    assert rate == pytest.approx(2_000_000.0, rel=0.01), d.idle
    assert d.clock_subtracted and d.clock_rate == rate


def test_idle_counts_of_files_from_before_read_no_request() -> None:
    doc = {"window": "dumps", "warmup": 0, "reps": [{"instructions": 1000, "requests": 1}],
           "idle": {"instructions": 27, "seconds": 1.0}}  # fmt: skip
    d = detail_from_json(doc)
    assert isinstance(d, ServeDetail) and d.idle == IdleCount(27.0, 1.0, None, 0, 0.0)
    with_requests = IdleCount(26.5, 1.0, 4.0, 4, 4000.5)
    back = detail_from_json({**doc, "idle": with_requests.to_json()})
    assert isinstance(back, ServeDetail) and back.idle == with_requests
    with pytest.raises(ValueError, match=r"idle\.requests"):
        detail_from_json({**doc, "idle": {**with_requests.to_json(), "requests": -1}})


def test_a_wrong_answer_in_the_idle_window_invalidates_the_run(
    target: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icount.serve import server as server_mod
    from tests.support import fake_backend

    monkeypatch.setattr(server_mod, "EXIT_WAIT_S", 0.0)  # alive: nothing to wait for

    def cost(i: int, p: int) -> float:
        if i == BEFORE:  # the request before the window: the next answers differ
            monkeypatch.setitem(fake_backend.BODIES, b"/plaintext", (b"text/plain", b"Bye"))
        return 1000.0

    opts = CellOptions(backend=FakeBackend(FakeConfig(cost=cost)), cpus=SPLIT, runs=1, reps=3,
                       requests=100, warmup=Warmup(20), idle_seconds=0.1,
                       arrival=Arrival.IDLE)  # fmt: skip
    outcome = measure_run(
        target, target.adapter.paths[0], opts, tmp_path / "run", None, lambda text: None
    )
    assert outcome.value is None and outcome.reason is not None
    assert outcome.reason.startswith("idle window: "), outcome.reason
    assert "body" in outcome.reason, outcome.reason
