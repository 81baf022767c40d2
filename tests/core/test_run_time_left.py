"""`icount run`'s time left (measure_command.measure): each command's runs left at what
its own runs took (icount/eta.py), on a fake clock that each run moves by its own
seconds, not the mean of every run so far."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from icount import cache_sim, measure_command
from icount import memory as memory_peaks
from icount.backends.protocol import Counted
from icount.measure_command import CommandSpec, RunOptions
from tests.support.fake_backend import FakeBackend, FakeConfig


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Timed(FakeBackend):
    """The fake backend, each command's run taking its last argument's seconds."""

    def __init__(self, clock: Clock) -> None:
        super().__init__(FakeConfig())
        self.clock = clock

    def count_command(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        timeout: float | None,
    ) -> Counted:
        self.clock.now += float(argv[-1])
        if argv[-2] == "fails":
            return Counted(None, 1, False, None)
        return super().count_command(argv, run_dir, env=env, cwd=cwd, timeout=timeout)


class Told:
    """A progress that shows the time left it is told (progress.Paced): each line with it."""

    def __init__(self) -> None:
        self.left: float | None = None
        self.lines: list[tuple[str, float | None]] = []

    def time_left(self, seconds: float | None) -> None:
        self.left = seconds

    def __call__(self, text: str, done: int, total: int) -> None:
        self.lines.append((text, self.left))


def measure(
    specs: list[CommandSpec],
    tmp_path: Path,
    clock: Clock | None = None,
    *,
    memory: bool = False,
    cache_sim: bool = False,
) -> Told:
    clock, told = clock or Clock(), Told()
    opts = RunOptions(Timed(clock), 3, cwd=tmp_path, memory=memory, cache_sim=cache_sim)
    measure_command.measure(specs, opts, tmp_path / "artifacts", told, clock=clock)
    return told


def test_a_commands_runs_left_take_what_its_own_runs_took(tmp_path: Path) -> None:
    told = measure([CommandSpec("small", ("prog", "1")), CommandSpec("big", ("prog", "10"))],
                   tmp_path)  # fmt: skip
    runs = [(text, left) for text, left in told.lines if ": run " in text]
    assert runs == [
        ("small: run 1/3", None),  # nothing has ended yet
        ("small: run 2/3", 2 * 1.0 + 3 * 1.0),  # big not begun: the mean run so far
        ("small: run 3/3", 1 * 1.0 + 3 * 1.0),
        ("big: run 1/3", 3 * 1.0),
        # its own 10 s a run; the runs done so far (13 s for 4) would say 6.5 s
        ("big: run 2/3", 2 * 10.0),
        ("big: run 3/3", 1 * 10.0),  # 23 s for 5 runs would say 4.6 s
    ]


def test_a_failed_run_ends_its_command_and_says_nothing_of_what_a_run_takes(
    tmp_path: Path,
) -> None:
    told = measure([CommandSpec("bad", ("prog", "fails", "50")), CommandSpec("ok", ("prog", "2"))],
                   tmp_path)  # fmt: skip
    runs = [(text, left) for text, left in told.lines if ": run " in text]
    assert runs == [
        ("bad: run 1/3", None),
        ("ok: run 1/3", None),  # the failed run's 50 s is no run's cost
        ("ok: run 2/3", 2 * 2.0),
        ("ok: run 3/3", 1 * 2.0),
    ]


TWO_ONE_SECOND = [CommandSpec("a", ("prog", "1")), CommandSpec("b", ("prog", "1"))]


def test_a_commands_memory_runs_count_in_the_time_left_of_those_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()

    def native_runs(*args: object) -> dict[str, object]:
        clock.now += 30.0
        return {"peak_rss_bytes": [1, 1, 1]}

    monkeypatch.setattr(memory_peaks, "command_peaks", native_runs)
    told = measure(TWO_ONE_SECOND, tmp_path, clock, memory=True)
    assert told.lines == [
        ("a: run 1/3", None),
        ("a: run 2/3", 2 * 1.0 + 3 * 1.0),
        ("a: run 3/3", 1 * 1.0 + 3 * 1.0),
        ("a: peak memory, native", 3 * 1.0),  # its own native runs not yet timed
        ("b: run 1/3", 3 * 1.0 + 30.0),  # a's 33 s for 3 runs; was 3 s
        # its own rate from here, whose native runs count only once they have ended
        ("b: run 2/3", 2 * 1.0),
        ("b: run 3/3", 1 * 1.0),
        ("b: peak memory, native", 0.0),
        ("done", 0.0),
    ]


def test_a_commands_cache_simulation_counts_in_the_time_left_of_those_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()

    def simulate(*args: object) -> dict[str, object]:
        clock.now += 12.0
        return {}

    monkeypatch.setattr(cache_sim, "simulate", simulate)
    lines = dict(measure(TWO_ONE_SECOND, tmp_path, clock, cache_sim=True).lines)
    assert lines["a: cache simulation"] == 3 * 1.0
    assert lines["b: run 1/3"] == 3 * 1.0 + 12.0
