"""`--warmup auto` and the still-warming check on constructed curves (pure functions)."""

from __future__ import annotations

import itertools

import pytest

from icount.serve import warmup
from icount.serve.warmup import AutoLimits, WarmupFailed


class Curve:
    """A server whose per-request figure at request i is `f(i)`; counts what it serves."""

    def __init__(self, f: object) -> None:
        self.f = f
        self.served = 0
        self.cheap: list[int] = []

    def probe(self, n: int) -> float:
        start = self.served
        self.served += n
        return sum(self.f(i) for i in range(start, start + n)) / n  # type: ignore[operator]

    def warm(self, n: int) -> None:
        self.cheap.append(n)
        self.served += n


def test_probes_double_the_requests_served_until_two_in_a_row_agree() -> None:
    # a JIT-like cost: 2,000 extra per request, halving every 2,000 requests
    server = Curve(lambda i: 1000.0 + 2000.0 * 0.5 ** (i / 2000))
    served, curve = warmup.auto_warmup(server.probe, server.warm, 100, 0.01, lambda s: None)
    assert server.cheap == [100 * 2**k for k in range(len(server.cheap))]  # doubling
    values = [v for _, v in curve]
    assert abs(values[-1] - values[-2]) / values[-1] < 0.005  # agree within half the limit
    assert all(abs(a - b) / b >= 0.005 for a, b in itertools.pairwise(values[:-1]))
    assert values[-1] == pytest.approx(1000.0, rel=0.005)  # where the curve flattens
    assert served == curve[-1][0] == sum(server.cheap) + 100 * len(curve)


def test_a_decay_too_slow_to_flatten_within_the_caps_is_refused_with_a_suggestion() -> None:
    server = Curve(lambda i: 1000.0 + 2000.0 * 0.5 ** (i / 20000))
    with pytest.raises(WarmupFailed) as info:
        warmup.auto_warmup(server.probe, server.warm, 100, 0.01, lambda s: None)
    assert str(info.value).startswith("--warmup auto did not settle within 200000 requests")
    assert str(info.value).endswith("try --warmup 210000")
    assert info.value.curve[-1][0] == 103400  # the next doubling would pass the cap


def test_a_plateau_that_fools_the_probes_is_caught_by_the_reps() -> None:
    """No finite rule sees a drop that starts after it stopped looking; the reps do."""
    server = Curve(lambda i: 3000.0 if i < 650 else max(1000.0, 3000.0 - (i - 650) * 2.0))
    served, _ = warmup.auto_warmup(server.probe, server.warm, 100, 0.01, lambda s: None)
    assert served == 600  # three probes at 3,000 per request: settled, wrongly
    reps = [server.probe(100) for _ in range(3)]
    assert warmup.still_warming(reps, 0.01) is not None


def test_a_flat_curve_with_noisy_windows_settles() -> None:
    """A collector makes warm windows differ by ~0.7%: never two within half the limit,
    but three that stopped falling, within the limit, settle it."""
    probes = iter([1.05e6, 7.0e5, 5.8e5, 5.575e5, 5.533e5, 5.572e5, 5.54e5])
    _, curve = warmup.auto_warmup(
        lambda n: next(probes), lambda n: None, 1000, 0.01, lambda s: None
    )
    values = [v for _, v in curve]
    assert all(abs(a - b) / b >= 0.005 for a, b in itertools.pairwise(values))
    assert values == [1.05e6, 7.0e5, 5.8e5, 5.575e5, 5.533e5, 5.572e5]


def test_windows_noisier_than_the_limit_give_up_naming_the_noise() -> None:
    """Express at 1000-request windows: V8's major collections make windows differ by
    ~9%. The curve stopped falling; the advice is longer windows, not more warm-up."""
    noisy = [5.42e5, 5.93e5, 5.57e5, 6.1e5, 5.5e5, 5.9e5]
    probes = iter([1.05e6, 7.0e5, *noisy, *noisy])
    with pytest.raises(WarmupFailed) as info:
        warmup.auto_warmup(lambda n: next(probes), lambda n: None, 1000, 0.01, lambda s: None)
    message = str(info.value)
    assert message.startswith("--warmup auto did not settle within 200000 requests")
    assert "stopped falling but its windows differ by" in message
    # the last three differ by 10.2%: ten times the limit, twice ten times the window
    assert message.endswith("longer windows (--requests 21000 or more) would average it")


@pytest.mark.parametrize(
    "values",
    [
        [3000.0, 2000.0, 1004.0, 1000.0],  # the last two agree within half the limit
        [3000.0, 1000.0, 1008.0, 999.0],  # three, not falling, within the limit
    ],
)
def test_settled(values: list[float]) -> None:
    assert warmup.settled(values, 0.005)


@pytest.mark.parametrize(
    "values",
    [
        [1004.0, 1000.0],  # three probes at least, whatever they read
        [3000.0, 1009.0, 1003.0, 997.0],  # still falling, probe after probe
        [3000.0, 1012.0, 1000.0, 1011.0],  # noisier than the limit
        [3000.0, 0.0, 0.0, 0.0],  # nothing counted is not a settled count
    ],
)
def test_not_settled(values: list[float]) -> None:
    assert not warmup.settled(values, 0.005)


def test_windows_just_past_the_limit_get_a_longer_window_than_the_one_in_use() -> None:
    flat = [1000.0, 1010.1, 1000.0, 1010.2, 1000.0, 1010.1]  # just over 1% apart
    probes = iter([3000.0, 2000.0, *flat, *flat])
    with pytest.raises(WarmupFailed) as info:
        warmup.auto_warmup(lambda n: next(probes), lambda n: None, 1000, 0.01, lambda s: None)
    assert str(info.value).endswith("longer windows (--requests 2100 or more) would average it")


def test_the_time_cap_gives_up_with_the_curve_and_a_suggestion() -> None:
    clock = iter(range(0, 10_000, 100))
    server = Curve(lambda i: 1e6 / (1 + i))
    with pytest.raises(WarmupFailed) as info:
        warmup.auto_warmup(server.probe, server.warm, 100, 0.01, lambda s: None,
                           AutoLimits(10**9, 250.0), lambda: float(next(clock)))  # fmt: skip
    assert "did not settle within 250 s" in str(info.value)
    assert len(info.value.curve) == 3  # the clock reads 100, 200, 300 s after each probe
    assert str(info.value).endswith(f"try --warmup {warmup.suggest(info.value.curve[-1][0])}")


@pytest.mark.parametrize(("served", "n"), [(0, 1000), (300, 1000), (2000, 4000), (12345, 25000)])
def test_suggested_warmups_are_readable(served: int, n: int) -> None:
    assert warmup.suggest(served) == n


def test_still_warming_needs_a_steady_fall_of_half_the_limit_over_three_reps() -> None:
    assert warmup.still_warming([1.22e6, 1.11e6, 0.7e6], 0.01) is not None  # Express at 100
    assert warmup.still_warming([100.6, 100.3, 100.0], 0.01) is not None  # 0.6%: still
    assert warmup.still_warming([55600, 55580, 55570], 0.01) is None  # 0.05%: settled
    assert warmup.still_warming([100.0, 98.0, 99.0], 0.01) is None  # not monotone
    assert warmup.still_warming([1.22e6, 0.7e6], 0.01) is None  # two reps: trend or noise?


def test_reps_far_from_the_settling_probe_mean_auto_stopped_too_soon() -> None:
    # the Express run that settled on its plateau: probe 610.6k, reps 542k, 557k, 592k
    curve = [(1000, 1.05e6), (11000, 609899.5), (20000, 610563.7)]
    why = warmup.moved_after_settling(curve, [542342.3, 557019.3, 592554.1], 0.01)
    assert why is not None and "610564 per request, the reps after it 557019 (8.77% apart" in why
    assert why.endswith("use --warmup 80000 or longer windows (--requests)")
    # Node: probe 55,605, reps within 0.1%
    assert (
        warmup.moved_after_settling([(37000, 55605.3)], [55552.7, 55560.1, 55549.0], 0.01) is None
    )
    assert warmup.moved_after_settling([], [1.0], 0.01) is None  # a fixed warm-up: no probe


@pytest.mark.parametrize("program", ["node", "/usr/bin/node", "nodejs", "bun", "java", "pypy3"])
def test_jit_runtimes_are_known(program: str) -> None:
    assert warmup.is_jit(program)


@pytest.mark.parametrize("program", ["nginx", "python3", "/usr/bin/python3.11", "c-epoll"])
def test_other_servers_are_not_jit_runtimes(program: str) -> None:
    assert not warmup.is_jit(program)


def test_still_warming_needs_every_step_of_the_fall_and_names_a_setting_not_yet_refused() -> None:
    # three windows that fell by chance: one step of 0.02%, too small to be a trend
    assert warmup.still_warming([101.0, 100.02, 100.0], 0.01) is None
    why = warmup.still_warming([101.0, 100.5, 100.0], 0.01, 270_000)
    # past what auto would serve: no advice back to auto, twice the warm-up tried
    assert why is not None and why.endswith("use --warmup 540000")
    why = warmup.still_warming([101.0, 100.5, 100.0], 0.01, 4000, auto=True)
    assert why is not None and why.endswith("use --warmup 8000")
    why = warmup.still_warming([101.0, 100.5, 100.0], 0.01, 100)
    assert why is not None and why.endswith("use --warmup auto or --warmup 1000")
