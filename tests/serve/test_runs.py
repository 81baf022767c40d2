"""The serve method's decisions, through the fake backend (no valgrind, milliseconds):
windows or the differential fallback, warm-up counts, `--warmup auto` settling or
giving up, and answers checked before anything is counted. The fake's counts are
known by construction (tests/support/fake_backend.py), so every figure is exact."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from icount.results.details import WINDOW_DIFFERENTIAL, WINDOW_DUMPS
from icount.serve import adapter as adapters
from icount.serve.cpus import CpuSplit
from icount.serve.runs import CellOptions, RunOutcome, WindowMethod, measure_run
from icount.serve.server import Target
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
    **kw: int,
) -> RunOutcome:
    opts = CellOptions(
        backend=FakeBackend(config), cpus=SPLIT, runs=1, reps=3, requests=100, warmup=warmup, **kw
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


def test_auto_warmup_runs_windows_until_two_agree_and_records_the_curve(
    target: Target, tmp_path: Path
) -> None:
    # A JIT-like cost: 2,000 extra per request, halving every 100 requests.
    config = FakeConfig(cost=lambda i, p: 1000.0 + 2000.0 * 0.5 ** (i / 100), window_cost=0)
    outcome = run(target, tmp_path, config, warmup=None)
    assert outcome.reason is None and outcome.detail is not None
    curve = outcome.detail.warmup_curve
    assert [n for n, _ in curve] == [100 * (i + 1) for i in range(len(curve))]
    values = [v for _, v in curve]
    assert values == sorted(values, reverse=True)  # falling, as constructed
    # stops at the first pair within a quarter of the 1% limit, not before
    assert abs(values[-1] - values[-2]) / values[-1] < 0.0025
    assert all(abs(b - a) / b >= 0.0025 for a, b in itertools.pairwise(values[:-1]))
    assert outcome.detail.warmup == 100 * len(curve)


def test_auto_warmup_that_never_settles_is_refused(target: Target, tmp_path: Path) -> None:
    config = FakeConfig(cost=lambda i, p: 1e6 * 0.9 ** (i / 100), window_cost=0)
    outcome = run(target, tmp_path, config, warmup=None)
    assert outcome.value is None
    assert outcome.reason == (
        "--warmup auto: 30 windows of 100 requests did not settle "
        "(last two differ by 11.11%); give --warmup N"
    )


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
