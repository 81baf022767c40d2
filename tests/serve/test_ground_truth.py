"""Ground truth: c-epoll's `--loop K` runs a loop of exactly 2 instructions per
iteration (inline asm `dec; jnz`) per request. The per-request figures of K and 2K
must differ by the loop's cost, 2K, within 0.1% of it, whatever the server's own
cost, under each backend and concurrency."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from icount import backends
from icount import cpus as cpus_mod
from icount.results.details import ServeDetail
from icount.serve.adapter import load_adapter
from icount.serve.cell_options import CellOptions
from icount.serve.runs import RunOutcome, WindowMethod, measure_run
from icount.serve.server import Target
from icount.session.options import Warmup

from .conftest import HOST, AdapterMaker

K = 5000
LOOP_COST = 2 * K  # instructions per request added by going from K to 2K
FORCED = WindowMethod("differential", "forced by the test")


def per_request(
    make_adapter: AdapterMaker,
    tmp_path: Path,
    loop: int,
    concurrency: int,
    backend: str = "callgrind",
    window: WindowMethod | None = None,
    requests: int = 300,
    notes: list[str] | None = None,
) -> tuple[float, ServeDetail, RunOutcome]:
    """The run's per-request figure; what it noted goes to `notes`, and into the message
    of a run that was refused (a retried start, a readiness wait: what moved, said)."""
    said = notes if notes is not None else []
    toml = make_adapter(f"loop-{loop}-c{concurrency}", "--loop", str(loop))
    adapter = load_adapter(toml)
    split = cpus_mod.split(None, None)
    opts = CellOptions(
        backend=backends.create(backend),
        cpus=split,
        runs=1,
        reps=2,
        requests=requests,
        warmup=Warmup(50),
        concurrency=concurrency,
    )
    with cpus_mod.pinned_self(split.load):
        outcome = measure_run(
            Target(adapter, tmp_path / "build"),
            adapter.paths[0],
            opts,
            tmp_path / f"run-{loop}-{concurrency}",
            window,
            said.append,
        )
    assert outcome.reason is None, (outcome.reason, said)
    assert outcome.value is not None and outcome.detail is not None
    return outcome.value, outcome.detail, outcome


@pytest.mark.slow
@pytest.mark.parametrize("concurrency", [1, 8])
def test_loop_cost_recovered_under_callgrind(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path, concurrency: int
) -> None:
    one, d1, _ = per_request(make_adapter, tmp_path, K, concurrency)
    two, d2, _ = per_request(make_adapter, tmp_path, 2 * K, concurrency)
    assert d1.window == "dump"
    assert abs((two - one) - LOOP_COST) <= 0.001 * LOOP_COST, (one, two, d1, d2)
    # every request of each window was answered and counted
    for d in (d1, d2):
        for rep in d.reps:
            assert rep.requests == 300


@pytest.mark.slow
def test_loop_cost_recovered_by_the_differential_fallback(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    """Where ptrace is not permitted, two lifetimes replace the dump windows."""
    notes: list[str] = []
    one, d1, _ = per_request(make_adapter, tmp_path, K, 1, window=FORCED, requests=200, notes=notes)
    two, d2, _ = per_request(make_adapter, tmp_path, 2 * K, 1, window=FORCED, requests=200)
    assert d1.window == "differential"
    # A life's count moves only with the epoll rounds its events fall into (tens of
    # instructions, whatever the machine's load), 200 requests apart: far inside 0.1%.
    assert abs((two - one) - LOOP_COST) <= 0.001 * LOOP_COST, (
        one, two, d1.lifetimes, d2.lifetimes, notes)  # fmt: skip


@pytest.mark.slow
def test_a_life_whose_port_was_taken_is_counted_from_its_second_start(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A busy machine's outgoing connection can take the port free_port() drew while
    valgrind starts the server: the server's bind fails, it exits, and its life starts
    again on another port. What the failed start ran (the loader, the C library, the
    server's set-up up to its bind) is in neither life, so the loop's cost is still
    recovered as exactly as by lives started once."""
    from icount.serve import server as server_mod

    real = server_mod.free_port
    with socket.socket() as listener:
        listener.bind((HOST, 0))
        listener.listen()
        with socket.create_connection(listener.getsockname()) as held:
            taken = held.getsockname()[1]  # a connection's own end holds it, no listener
            # the first life draws a free port; the second life's first start, this one
            draws: list[int | None] = [None, taken]
            monkeypatch.setattr(
                server_mod, "free_port", lambda: (draws.pop(0) if draws else None) or real()
            )
            notes: list[str] = []
            one, d1, _ = per_request(
                make_adapter, tmp_path, K, 1, window=FORCED, requests=200, notes=notes
            )
    assert f"port {taken} was taken before the server listened on it: starting it again" in notes
    aside = tmp_path / f"run-{K}-1" / f"lifetime-2.port-{taken}-taken" / "server.stderr"
    assert "Address already in use" in aside.read_text()
    monkeypatch.undo()
    two, d2, _ = per_request(make_adapter, tmp_path, 2 * K, 1, window=FORCED, requests=200)
    assert abs((two - one) - LOOP_COST) <= 0.001 * LOOP_COST, (one, two, d1.lifetimes, d2.lifetimes)


@pytest.mark.slow
@pytest.mark.parametrize("concurrency", [1, 8])
def test_loop_cost_recovered_under_perf(
    make_adapter: AdapterMaker, tmp_path: Path, concurrency: int
) -> None:
    from icount.backends import perf

    probe = perf.counter_probe()
    if not probe.usable:
        pytest.skip(f"perf cannot count instructions:u on this machine: {probe.why}")
    one, _, _ = per_request(make_adapter, tmp_path, K, concurrency, "perf", requests=20000)
    two, _, _ = per_request(make_adapter, tmp_path, 2 * K, concurrency, "perf", requests=20000)
    assert abs((two - one) - LOOP_COST) <= 0.001 * LOOP_COST, (one, two)


@pytest.mark.slow
def test_a_failed_ptrace_preflight_switches_to_the_differential_method(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where vgdb cannot reach the idle server, the session falls back and says why."""
    from icount.backends import callgrind_server

    monkeypatch.setattr(
        callgrind_server.CallgrindServer,
        "preflight",
        lambda self: "ptrace: Operation not permitted",
    )
    value, detail, outcome = per_request(make_adapter, tmp_path, K, 1, requests=100)
    assert detail.window == "differential"
    assert outcome.window is not None and outcome.window.name == "differential"
    assert outcome.window.why == (
        "ptrace: Operation not permitted: differential method over two lifetimes"
    )
    monkeypatch.undo()
    windows, _, _ = per_request(make_adapter, tmp_path, K, 1, requests=100)
    # the two methods agree on the same server (the dump windows carry +27 per window)
    assert abs(value - windows) <= 0.001 * windows, (value, windows)


@pytest.mark.slow
def test_a_cold_start_counts_exactly_the_first_request_beyond_start_up(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    """From exec to the first correct answer: start-up plus exactly one request, so K and
    2K of c-epoll's loop move the figure by 2K, whatever start-up costs."""
    from icount.serve.runs import measure_cold_start

    values = []
    for loop in (K, 2 * K):
        adapter = load_adapter(make_adapter(f"cold-{loop}", "--loop", str(loop)))
        split = cpus_mod.split(None, None)
        opts = CellOptions(backend=backends.create("callgrind"), cpus=split, runs=1)
        with cpus_mod.pinned_self(split.load):
            target = Target(adapter, tmp_path / "build")
            run_dir = tmp_path / f"cold-{loop}"
            outcome = measure_cold_start(target, adapter.paths[0], opts, run_dir, lambda t: None)
        assert outcome.reason is None and outcome.value is not None, outcome.reason
        values.append(outcome.value)
    assert values[0] > 100_000  # the dynamic loader, libc's start, the server's set-up
    # Exact but for the order in which the connection and its bytes reach the server
    # (an epoll round more or less: 12 instructions off once, on a loaded machine), a
    # thing of timing that a cold start, one request, cannot average away as a window
    # of 1000 requests does.
    assert abs((values[1] - values[0]) - LOOP_COST) <= 0.005 * LOOP_COST, values
