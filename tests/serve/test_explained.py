"""What moves a count, measured: work driven by the clock is recovered by the idle
window, and a function that runs in some windows and not others is named as the cause
of their spread (c-epoll's --tick-* and --every flags, costs known by construction)."""

from __future__ import annotations

from pathlib import Path

import pytest

from icount import backends
from icount import cpus as cpus_mod
from icount.serve import spread
from icount.serve.adapter import load_adapter
from icount.serve.cell_options import CellOptions
from icount.serve.runs import RunOutcome, measure_run
from icount.serve.server import Target
from icount.session.options import Warmup

from .conftest import AdapterMaker


def measure(make_adapter: AdapterMaker, tmp_path: Path, name: str, *flags: str,
            **kw: float) -> RunOutcome:  # fmt: skip
    adapter = load_adapter(make_adapter(name, *flags))
    split = cpus_mod.split(None, None)
    opts = CellOptions(backend=backends.create("callgrind"), cpus=split, runs=1, warmup=Warmup(100),
                       **kw)  # type: ignore[arg-type]  # fmt: skip
    with cpus_mod.pinned_self(split.load):
        return measure_run(Target(adapter, tmp_path / "build"), adapter.paths[0], opts,
                           tmp_path / f"run-{name}", None, lambda text: None)  # fmt: skip


@pytest.mark.slow
def test_the_idle_rate_recovers_work_driven_by_the_clock(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    """Every 10 ms, K iterations of the 2-instruction loop: from K = 10,000 to 20,000 the
    idle rate must grow by 2,000,000 instructions a second (the ticks' own bookkeeping,
    ~290 instructions each, is the same in both). A 10 s pause keeps the window's edges
    (a few tens of ms for vgdb) and the tick phase (one tick in 1,000) well inside 1%."""
    rates = []
    for k in (10_000, 20_000):
        outcome = measure(make_adapter, tmp_path, f"ticks-{k}", "--tick-ms", "10",
                          "--tick-loop", str(k), reps=1, requests=200,
                          idle_seconds=10.0)  # fmt: skip
        # millions a second against 200-request windows: the clock's work while a window
        # opens and closes (tens of ms) is far beyond half the limit of a window, so the
        # run is refused (idle_window.clock_uncertain), its idle window kept with the reason
        assert outcome.detail is not None, outcome.reason
        assert outcome.reason is not None and outcome.reason.startswith("the clock drives")
        idle = outcome.detail.idle
        # the seconds it counted: the 10 asked for, a little more where the machine is busy
        assert idle is not None and 10.0 - 1e-2 <= idle.seconds < 11.0, idle
        rates.append(idle.instructions / idle.seconds)
        # the share of a window it explains is reported: millions a second against a
        # 200-request window that lasts a fraction of a second under callgrind
        assert outcome.detail.time_share is not None and outcome.detail.time_share > 0.01
    grew = rates[1] - rates[0]
    assert abs(grew - 2_000_000) / 2_000_000 < 0.01, rates


@pytest.mark.slow
def test_a_function_that_runs_in_some_windows_is_named_as_the_cause_of_their_spread(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    """periodic_work() runs every 700th request (100,000 instructions): the windows of
    1,000 requests after a 100-request warm-up hold 1, 2 and 1 calls."""
    outcome = measure(make_adapter, tmp_path, "every", "--every", "700", "--every-loop",
                      "50000", reps=3, requests=1000, idle_seconds=0)  # fmt: skip
    assert outcome.reason is None and outcome.detail is not None, outcome.reason
    windows = [
        spread.Window(f"rep {j + 1}", rep, functions)
        for j, (rep, functions) in enumerate(zip(outcome.detail.reps, outcome.functions,
                                                 strict=True))
        if functions is not None
    ]  # fmt: skip
    explained = spread.explain(windows, 0.01)
    assert explained is not None
    assert explained["high"]["window"] == "rep 2"
    name, delta = explained["functions"][0]
    assert name == "periodic_work"
    assert abs(delta - 100.0) < 0.5  # one more call of 100,000 instructions per 1,000
    assert explained["explained"] > 0.99
