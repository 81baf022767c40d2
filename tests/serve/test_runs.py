"""The serve method's decisions, through the fake backend (no valgrind, milliseconds):
windows or the differential fallback, warm-up counts, `--warmup auto` settling or
giving up, and answers checked before anything is counted. The fake's counts are
known by construction (tests/support/fake_backend.py), so every figure is exact."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from icount.cpus import CpuSplit
from icount.results.details import WINDOW_DIFFERENTIAL, WINDOW_DUMPS, IdleCount
from icount.serve import adapter as adapters
from icount.serve import server as server_mod
from icount.serve import warmup
from icount.serve.cell_options import CellOptions
from icount.serve.runs import RunOutcome, WindowMethod, measure_run
from icount.serve.server import Target
from icount.serve.warmup import AutoLimits
from icount.session.options import Warmup
from tests.support.fake_backend import FakeBackend, FakeConfig

SPLIT = CpuSplit((0,), (0,), "test")
ADAPTER = """
name = "fake"
start = ["true", "--port", "{port}"]
[ready]
target = "/plaintext"
[[paths]]
name = "plaintext"
target = "/plaintext"
[paths.expect]
status = 200
body = "Hello, World!"
[[paths]]
name = "wrong"
target = "/json"
[paths.expect]
body = "not what it answers"
"""


@pytest.fixture
def target(tmp_path: Path) -> Target:
    (tmp_path / "adapter.toml").write_text(ADAPTER)
    return Target(adapters.load_adapter(tmp_path / "adapter.toml"), tmp_path / "build")


def run(
    target: Target,
    tmp_path: Path,
    config: FakeConfig,
    *,
    warmup: int | None = 20,
    window: WindowMethod | None = None,
    path: int = 0,
    **kw: Any,
) -> RunOutcome:
    kw.setdefault("idle_seconds", 0)  # the idle window sleeps: one test asks for it
    opts = CellOptions(
        backend=FakeBackend(config),
        cpus=SPLIT,
        runs=1,
        reps=3,
        requests=100,
        warmup=Warmup(warmup),
        **kw,
    )
    return measure_run(
        target, target.adapter.paths[path], opts, tmp_path / "run", window, lambda text: None
    )


def test_windows_count_exactly_the_requests_between_them(target: Target, tmp_path: Path) -> None:
    config = FakeConfig(cost=lambda i, p: 500.0 + (i % 2), window_cost=27.0)
    outcome = run(target, tmp_path, config)
    assert outcome.reason is None
    assert outcome.window == WindowMethod(WINDOW_DUMPS, "the fake backend takes windows")
    assert outcome.detail is not None
    # 100 requests of 500 or 501 (50 each) + 27 for the window: 50,077 / 100
    assert [r.instructions for r in outcome.detail.reps] == [50077.0] * 3
    assert [r.requests for r in outcome.detail.reps] == [100] * 3
    assert outcome.value == 500.77
    assert outcome.detail.warmup == 20 and outcome.detail.warmup_curve == ()
    assert len(outcome.client_rps) == 3
    # ready probe + verification + warm-up + 3 windows: every request the server answered
    (server,) = config.started
    assert server.requests == 1 + 1 + 20 + 300 and not server.alive()


def test_a_failed_preflight_falls_back_to_two_lifetimes(target: Target, tmp_path: Path) -> None:
    config = FakeConfig(cost=lambda i, p: 700.0, preflight_problem="ptrace: not permitted")
    outcome = run(target, tmp_path, config)
    assert outcome.reason is None
    assert outcome.window is not None and outcome.window.name == WINDOW_DIFFERENTIAL
    assert outcome.window.why == "ptrace: not permitted: differential method over two lifetimes"
    detail = outcome.detail
    assert detail is not None and detail.window == WINDOW_DIFFERENTIAL
    # the preflighting process, then lifetimes of 100 and 200 requests after 22 others
    assert [s.requests for s in config.started] == [1, 122, 222]
    assert detail.lifetimes is not None
    assert detail.lifetimes.requests == (100, 200)
    assert detail.lifetimes.instructions == (122 * 700.0, 222 * 700.0)
    assert outcome.value == 700.0  # (222 - 122) * 700 / 100, exact: no window costs


def test_a_second_life_counting_less_than_the_first_is_an_invalid_run(
    target: Target, tmp_path: Path
) -> None:
    # the 100-request life costs 1000 per request, the 200-request one 100: a difference
    # of lives that no requests can make (a collector or the clock in the first) must not
    # become a negative per-request figure, which no results file may hold
    config = FakeConfig(
        cost=lambda i, p: 1000.0 if p == 1 else 100.0, preflight_problem="ptrace: not permitted"
    )
    outcome = run(target, tmp_path, config)
    assert outcome.value is None and outcome.reason is not None
    assert "counted fewer instructions" in outcome.reason
    assert "the life serving 200 requests" in outcome.reason


def test_a_session_decided_on_lifetimes_starts_no_preflight_process(
    target: Target, tmp_path: Path
) -> None:
    config = FakeConfig()
    outcome = run(target, tmp_path, config, window=WindowMethod(WINDOW_DIFFERENTIAL, "decided"))
    assert outcome.reason is None and outcome.value == 1000.0
    assert len(config.started) == 2  # the two lifetimes only


def test_a_process_that_cannot_be_reached_after_the_decision_is_invalid(
    target: Target, tmp_path: Path
) -> None:
    config = FakeConfig(preflight_problem="vgdb timed out")
    outcome = run(target, tmp_path, config, window=WindowMethod(WINDOW_DUMPS, "decided"))
    assert outcome.value is None
    assert outcome.reason == "fake control failed: vgdb timed out"


def test_a_window_below_the_floor_names_a_daemonizing_server_still_exiting(
    target: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The started process exits 0.3 s after the first window, which counted only it:
    the reason is the daemonizing (waited for), not the floor it tripped. The wait's
    limit is raised to 60 s so that a run that waited it out cannot pass for one that
    saw the exit, however slow the machine."""
    monkeypatch.setattr(server_mod, "EXIT_WAIT_S", 60.0)
    config = FakeConfig(daemon_exit_s=0.3)
    started = time.monotonic()
    outcome = run(target, tmp_path, config)
    assert outcome.value is None and outcome.reason is not None
    assert outcome.reason.startswith(
        "rep 1: the server daemonized: the started process exited 0 and left 100001 "
        "(fake daemon) running (icount stopped it)"
    ), outcome.reason
    assert time.monotonic() - started < 30  # waited for the exit, not the limit


def test_a_live_server_below_the_floor_is_refused_by_the_floor(
    target: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Requests costing 10 instructions: uncounted work, said so once the wait for an
    exit (EXIT_WAIT_S) shows the server is still running."""
    monkeypatch.setattr(server_mod, "EXIT_WAIT_S", 0.05)  # the fake stays alive: waits it out
    config = FakeConfig(cost=lambda i, p: 10.0)
    outcome = run(target, tmp_path, config)
    assert outcome.value is None
    assert outcome.reason == (
        "rep 1: the requests were served by processes icount did not count: 10.3 "
        "instructions per request in the 1 counted process, below the floor of 100 that "
        "any real request path exceeds (a server whose workers escaped counting?)"
    )


def test_auto_warmup_probes_with_cheap_warmup_between_until_the_curve_settles(
    target: Target, tmp_path: Path
) -> None:
    # A JIT-like cost: 2,000 extra per request, halving every 300 requests.
    config = FakeConfig(cost=lambda i, p: 1000.0 + 2000.0 * 0.5 ** (i / 300), window_cost=0)
    outcome = run(target, tmp_path, config, warmup=None)
    assert outcome.reason is None and outcome.detail is not None
    curve = outcome.detail.warmup_curve
    # probes of 100 requests, cheap warm-up of 100, 200, 400 ... between them
    assert [n for n, _ in curve][:4] == [100, 300, 600, 1100]
    values = [v for _, v in curve]
    assert values == sorted(values, reverse=True)  # falling, as constructed
    assert warmup.settled(values, 0.01 / 2)  # the last three within half the limit...
    assert not warmup.settled(values[:-1], 0.01 / 2)  # ...and not one probe earlier
    assert outcome.detail.warmup == curve[-1][0]
    # instrumentation off for each stretch of cheap warm-up; windows switch it back on
    assert config.instrumented.count(False) == len(curve) - 1
    # the reps after it agree: no longer warming up
    assert outcome.value is not None and abs(outcome.value - 1000.0) / 1000.0 < 0.01


def test_auto_warmup_that_does_not_settle_within_its_caps_is_refused(
    target: Target, tmp_path: Path
) -> None:
    config = FakeConfig(cost=lambda i, p: 1000.0 + 1e6 / (1 + i / 100), window_cost=0)
    outcome = run(target, tmp_path, config, warmup=None, auto_limits=AutoLimits(3000, 60.0))
    assert outcome.value is None and outcome.reason is not None
    assert outcome.reason.startswith("--warmup auto did not settle within 3000 requests: ")
    assert "the count went from " in outcome.reason
    # probes end at 100, 300, 600, 1100 and 2000; the next would pass the cap
    assert "per request over 2000 requests" in outcome.reason
    assert outcome.reason.endswith("try --warmup 4000")
    # the curve stays with the invalid run, for the user to see where it was going
    assert outcome.detail is not None and outcome.detail.reps == ()
    assert [n for n, _ in outcome.detail.warmup_curve] == [100, 300, 600, 1100, 2000]
    assert outcome.detail.warmup == 2000


def test_reps_that_contradict_the_probe_auto_settled_on_are_refused(
    target: Target, tmp_path: Path
) -> None:
    """A plateau the probes settle on, then a fall (Express's shape, shortened): the
    reps read a third of the probe, and the run says auto stopped too soon."""
    config = FakeConfig(cost=lambda i, p: 3000.0 if i < 700 else 1000.0, window_cost=0)
    outcome = run(target, tmp_path, config, warmup=None)
    assert outcome.value is None and outcome.reason is not None
    assert outcome.reason.startswith(
        "the count moved after --warmup auto settled: its last probe read 3000 per request"
    ), outcome.reason
    assert "on a plateau it later fell from" in outcome.reason
    # what the refused run counted stays with it: the curve and the reps
    assert outcome.detail is not None and len(outcome.detail.reps) == 3
    assert [v for _, v in outcome.detail.warmup_curve][-1] == 3000.0


def test_reps_that_agree_with_the_probe_auto_settled_on_are_valid(
    target: Target, tmp_path: Path
) -> None:
    config = FakeConfig(cost=lambda i, p: 3000.0 if i < 100 else 1000.0, window_cost=0)
    outcome = run(target, tmp_path, config, warmup=None)
    assert outcome.reason is None and outcome.value == 1000.0


def test_reps_that_keep_falling_are_refused_as_still_warming_up(
    target: Target, tmp_path: Path
) -> None:
    """A fixed warm-up too short for a JIT-like server: the reps fall window after window."""
    config = FakeConfig(cost=lambda i, p: 1000.0 + 4000.0 * 0.5 ** (i / 100), window_cost=0)
    outcome = run(target, tmp_path, config, warmup=10)
    assert outcome.value is None and outcome.reason is not None
    assert outcome.reason.startswith(
        "still warming up: each window counted less than the one before"
    )
    # a setting these rules have not refused: auto, or more warm-up than was tried
    assert "use --warmup auto or --warmup 1000" in outcome.reason


def test_reps_that_differ_but_do_not_fall_are_a_valid_run_with_each_windows_functions(
    target: Target, tmp_path: Path
) -> None:
    """Work every 250th request (a collector): windows of 100 differ by it, and the run
    keeps each window's functions for the cell's explanation."""
    config = FakeConfig(
        cost=lambda i, p: 1000.0 + (5e4 if i % 250 == 0 else 0.0),
        function=lambda i: "gc_cycle" if i % 250 == 0 else "handle_request",
        window_cost=0,
    )
    outcome = run(target, tmp_path, config)
    assert outcome.reason is None and outcome.detail is not None
    # ready + verify + 20 warm-up: the reps serve requests 22-121, 122-221, 222-321
    assert outcome.detail.per_request == (1000.0, 1000.0, 1500.0)
    assert [f and f.get("gc_cycle") for f in outcome.functions] == [None, None, 51000.0]


def test_auto_warmup_needs_windows(target: Target, tmp_path: Path) -> None:
    config = FakeConfig(preflight_problem="ptrace: not permitted")
    outcome = run(target, tmp_path, config, warmup=None)
    assert outcome.reason == "--warmup auto needs counting windows, which this machine cannot take"


def test_a_wrong_answer_is_refused_before_anything_is_counted(
    target: Target, tmp_path: Path
) -> None:
    config = FakeConfig()
    outcome = run(target, tmp_path, config, path=1)
    assert outcome.value is None and outcome.detail is None
    assert outcome.reason is not None
    assert outcome.reason.startswith("wrong answer from /json: body differs at byte 0")
    assert config.started[0].windows == 0  # no window was opened


def test_an_idle_window_after_the_reps_measures_the_rate_of_clock_driven_work(
    target: Target, tmp_path: Path
) -> None:
    # the fake's only work without requests is its window cost: 27 in the idle window
    config = FakeConfig(cost=lambda i, p: 1000.0, window_cost=27.0)
    outcome = run(target, tmp_path, config, idle_seconds=0.2)
    assert outcome.reason is None and outcome.detail is not None
    # nothing to take out: the seconds asked for, so that the file is the same every time
    assert outcome.detail.idle == IdleCount(27.0, 0.2)
    # 135 instructions/s against ~100,027 per window lasting well under a second
    assert outcome.detail.time_share is None


def test_auto_warmup_records_the_collectors_curve_beside_the_mutators(
    target: Target, tmp_path: Path
) -> None:
    """The curve follows the mutator (falling for 300 requests, then 1000); the
    collector's work (10,000 every 7th request: 14 or 15 per probe) is recorded at the
    same points, and does not hold warm-up back."""
    config = FakeConfig(
        cost=lambda i, p: 1000.0 + (500.0 if i < 300 else 0.0),
        collector=lambda i: 10_000.0 if i % 7 == 0 else 0.0,
    )
    outcome = run(target, tmp_path, config, warmup=None)
    assert outcome.reason is None and outcome.detail is not None, outcome.reason
    d = outcome.detail
    assert [n for n, _ in d.runtime_curve] == [n for n, _ in d.warmup_curve]
    assert {v for _, v in d.runtime_curve} <= {1400.0, 1500.0}
    assert d.warmup_curve[-1][1] == 1000.27  # the mutator with the fake's window cost
    assert d.to_json()["runtime_curve"] == [[n, v] for n, v in d.runtime_curve]


def test_a_clock_share_the_window_edges_leave_uncertain_is_refused() -> None:
    """Opening and closing a window holds the server; the clock's work due meanwhile
    runs after, inside the window or not, which no subtraction can place: where rate x
    that time is the spread limit of a window or more the run is refused, however well
    its windows agree (every window is off alike)."""
    from icount.results.details import WINDOW_DUMPS, IdleCount, Rep, ServeDetail
    from icount.serve.idle_window import clock_uncertain

    def detail(subtracted: bool) -> ServeDetail:
        # 12.7M instructions a window of 1.0 s counted; the idle clock 2M a second
        reps = tuple(Rep(12_700_000, 1000, seconds=1.0) for _ in range(3))
        return ServeDetail(WINDOW_DUMPS, 100, reps, None, idle=IdleCount(2_000_000, 1.0),
                           time_share=0.16, clock_subtracted=subtracted)  # fmt: skip

    held_200ms = (1.2, 1.2, 1.2)  # 400k of clock work a window: 3.1% of it
    why = clock_uncertain(detail(True), held_200ms, 0.01)
    assert why is not None and "200 ms opening and closing" in why and "3.15%" in why, why
    assert "longer windows (--requests)" in why
    assert clock_uncertain(detail(True), held_200ms, 0.07) is None  # under half of 7%
    assert clock_uncertain(detail(True), held_200ms, 0.06) is not None  # 3.15% >= 3%
    assert clock_uncertain(detail(True), (1.01, 1.01, 1.01), 0.01) is None  # 20k: 0.16%
    assert clock_uncertain(detail(False), held_200ms, 0.01) is None  # nothing taken out


def test_the_idle_rate_leaves_out_the_runtimes_work_counted_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Go's idle window is mostly its scheduler (sysmon, netpoll), which each rep counts
    apart from the mutator already: in the clock's rate too, it was taken out twice (a
    rep of 1M with 50k of scheduler read 9,000 a request where 9,500 is the mutator)."""
    import types

    from icount.backends.protocol import WindowCount
    from icount.results.details import Rep
    from icount.runtimes import RuntimeWork
    from icount.serve import idle_window as idle_mod

    class Idle:
        opened_at, close_latency_s = 100.0, 0.0

        def open_window(self) -> None:
            pass

        def close_window(self) -> WindowCount:  # 1 s idle: 50k, 45k of them the scheduler
            return WindowCount(50_000, runtime=RuntimeWork("go", scheduler=45_000))

    monkeypatch.setattr(idle_mod, "time", types.SimpleNamespace(sleep=lambda s: None,
                        monotonic=lambda: 101.0))  # fmt: skip
    reps = [Rep(1_000_000, 100, scheduler=50_000.0, collector=0.0, compiler=0.0, seconds=1.0)]
    idle, share = idle_mod.idle_window(Idle(), 1.0, reps, [1.0])  # type: ignore[arg-type]
    assert idle == IdleCount(5_000, 1.0)  # the mutator's clock only
    assert share == 0.005
