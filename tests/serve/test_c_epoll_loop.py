"""Ground truth for the c-epoll target: `--loop K` costs exactly 2 instructions per
iteration under callgrind: the whole-lifetime difference between K and 2K, divided by
requests x K. (Against K=0 a few more instructions appear: entering the loop at all.)"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from icount import procs
from icount.serve import adapter as adapters
from icount.serve.http_client import KeepAliveClient

from .conftest import HOST, free_port

PLAIN = adapters.PathSpec("plaintext", "/plaintext", adapters.Expect(200, {}, b"Hello, World!"))
REQUESTS = 300


def lifetime_ir(target: adapters.Adapter, build: Path, out: Path, loop: int) -> int:
    """Total Ir of one server lifetime serving REQUESTS requests."""
    port = free_port()
    argv = adapters.expand(target.start, port=port, build_dir=build, adapter=target)
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv,
           "--loop", str(loop)]  # fmt: skip
    with procs.spawn(cmd) as child:

        def listening() -> bool:  # a connect, not a request: requests are what we count
            assert child.poll() is None, "valgrind exited early"
            try:
                socket.create_connection((HOST, port), timeout=1).close()
            except OSError:
                return False
            return True

        assert procs.wait_until(listening, 60, interval=0.1)
        with KeepAliveClient(HOST, port, PLAIN, 1, 30.0) as client:
            assert client.run(REQUESTS).ok
        child.stop(grace_s=30)  # SIGTERM: callgrind writes its profile
    totals = [ln for ln in out.read_text().splitlines() if ln.startswith("totals:")]
    return int(totals[0].split()[1])


@pytest.mark.slow
def test_loop_costs_two_instructions_per_iteration(
    c_epoll_adapter: tuple[adapters.Adapter, Path], tmp_path: Path
) -> None:
    if procs.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    target, build = c_epoll_adapter
    k = 5000
    base = lifetime_ir(target, build, tmp_path / "cg.k", k)
    looped = lifetime_ir(target, build, tmp_path / "cg.2k", 2 * k)
    # Lifetimes differ by a few hundred instructions besides the loop (how many readiness
    # connects it took, epoll wake-ups): 0.1% of 3 M is well above that.
    per_iteration = (looped - base) / (REQUESTS * k)
    print(f"K={k} vs 2K: {base} vs {looped} Ir, {per_iteration:.6f} per iteration")
    assert per_iteration == pytest.approx(2.0, rel=1e-3), (base, looped)
