"""Ground truth for work the clock leaves for the next request (issue 29, lighttpd's
once-a-second step): lazy_clock_server.c (built here with cc) spends a known amount per
request; the first pass of its loop in each new second of the wall clock runs a small
tick and marks a cache stale, and the next request rebuilds it, as lighttpd's
`connection_periodic_maint` leaves its stat cache to the next request. An idle window
with no request sees the tick and never the rebuild, so a window's count grew with the
seconds it spanned, that is with the machine's load. Under idle arrival the idle window
is sent a request every 0.25 s (serve/idle_window.py), its rate holds the rebuilds too,
and the cell must read what the same server reads without the clock's work, within
0.1%, with the machine idle and with every CPU busy."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from icount.serve.runs import RunOutcome
from icount.session.options import Arrival, Warmup

from .conftest import measure_c_server
from .test_clock_driven import busy

SOURCE = Path(__file__).with_name("lazy_clock_server.c")
LOOP = 5000  # 10,000 instructions of spin() a request beside the server's own
# a rebuild of 30,000 instructions once a second: 0.14% of a 2000-request window a step,
# lighttpd's 2,945 against 6.57M (0.045%) made large enough that a window's steps are
# plainly more than the 0.1% asked; a tick of 1,000 the idle window sees alone
TICK_LOOP, REBUILD_LOOP = 500, 15_000
REBUILD = 2 * REBUILD_LOOP
REQUESTS = 2000
LIMIT = 0.001  # issue 29: the same figure idle and busy, within 0.1%


@pytest.fixture(scope="module")
def lazy_server(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("cc") is None:
        pytest.skip("cc is not installed (scripts/setup.sh installs gcc)")
    out = tmp_path_factory.mktemp("lazy-clock-server") / "lazy_clock_server"
    subprocess.run(["cc", "-O2", "-o", str(out), str(SOURCE)], check=True, timeout=120)
    return out


def measure(server: Path, folder: Path, name: str, tick: int, rebuild: int) -> RunOutcome:
    argv = [str(server), "--port", "{port}", "--loop", str(LOOP), "--tick-loop", str(tick),
            "--rebuild-loop", str(rebuild)]  # fmt: skip
    # the default idle window (1 s) and idle arrival, as `icount serve` runs them
    return measure_c_server(argv, folder, name, reps=3, requests=REQUESTS,
                            warmup=Warmup(100), arrival=Arrival.IDLE)  # fmt: skip


@pytest.fixture(scope="module")
def truth(lazy_server: Path, tmp_path_factory: pytest.TempPathFactory) -> float:
    """The same server with no tick and no rebuild: its windows agree to a few
    instructions whatever the load."""
    o = measure(lazy_server, tmp_path_factory.mktemp("truth"), "no-clock", 0, 0)
    assert o.reason is None and o.value is not None and o.detail is not None, o.reason
    assert not o.detail.clock_subtracted
    return o.value


@pytest.mark.slow
@pytest.mark.parametrize("loaded", [False, True], ids=["idle", "busy"])
def test_work_the_clock_leaves_to_a_request_reads_the_same_idle_and_loaded(
    need_valgrind: None, lazy_server: Path, truth: float, tmp_path: Path, loaded: bool
) -> None:
    with busy(0 if loaded else None):
        o = measure(lazy_server, tmp_path, "lazy", TICK_LOOP, REBUILD_LOOP)
    d = o.detail
    assert d is not None and d.idle is not None
    raw = sorted(r.per_request for r in d.reps)[1]
    rate = d.idle.instructions / d.idle.seconds
    print(f"\n{loaded=}: {o.value} vs {truth:.2f} ({o.reason}); raw "
          f"{[round(r.per_request, 1) for r in d.reps]}; seconds {[r.seconds for r in d.reps]}; "
          f"idle {d.idle}; rate {rate:.0f}/s; share {d.time_share}")  # fmt: skip
    # the idle window was sent its requests, their own work taken out at the reps' figure
    assert d.idle.requests == 4 and d.idle.served == pytest.approx(4 * raw, rel=LIMIT)
    # it saw the tick and the rebuild of the one second its requests spanned, about
    assert REBUILD / 1.5 < rate < REBUILD * 1.5, rate
    # the clock's work is more than the limit of the median window: not subtracted, the
    # figure would be off by more than 0.1%
    assert (raw - truth) / truth > LIMIT, (raw, truth)
    assert d.clock_subtracted and o.reason is None and o.value is not None, o.reason
    assert abs(o.value - truth) / truth < LIMIT, (o.value, truth)
