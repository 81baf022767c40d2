"""perf windows live: the enable/disable protocol on the control fifo run against the
c-epoll server, and a counter that is <not supported> (these VMs) turning the cell
invalid with perf's words."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from icount import backends
from icount import cpus as cpus_mod
from icount.serve.adapter import load_adapter
from icount.serve.cell_options import CellOptions
from icount.serve.runs import RunOutcome, measure_run
from icount.serve.server import Target
from icount.session.options import Warmup

from .conftest import AdapterMaker


def _perf_run(make_adapter: AdapterMaker, tmp_path: Path, event: str) -> RunOutcome:
    if shutil.which("perf") is None:
        pytest.skip("perf is not installed (apt-get install linux-perf)")
    adapter = load_adapter(make_adapter("perf-" + event.replace(":", "-")))
    split = cpus_mod.split(None, None)
    backend = backends.create("perf", backends.settings("perf", {"event": event}))
    opts = CellOptions(
        backend=backend, cpus=split, runs=1, reps=2, requests=3000, warmup=Warmup(200)
    )
    with cpus_mod.pinned_self(split.load):
        return measure_run(
            Target(adapter, tmp_path / "build"),
            adapter.paths[0],
            opts,
            tmp_path / "run",
            None,
            lambda text: None,
        )


@pytest.mark.slow
def test_fifo_protocol_with_a_software_event(make_adapter: AdapterMaker, tmp_path: Path) -> None:
    """enable/disable around each window, ack awaited, intervals summed: task-clock
    (milliseconds of CPU) counts on every machine, PMU or not."""
    outcome = _perf_run(make_adapter, tmp_path, "task-clock")
    assert outcome.reason is None, outcome.reason
    assert outcome.value is not None and outcome.value > 0
    assert outcome.detail is not None and outcome.detail.window == "fifo"
    reps = outcome.detail.reps
    assert len(reps) == 2 == len(outcome.client_rps)
    for rep, rps in zip(reps, outcome.client_rps, strict=True):
        assert rep.requests == 3000
        assert rep.instructions > 0  # msec of task-clock in the window
        # a window of 3000 requests cannot take more CPU time than its wall time allows
        assert rep.instructions / 1000 < 3000 / rps + 0.2


@pytest.mark.slow
def test_unsupported_counter_makes_the_cell_say_so(
    make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    from icount.backends import perf

    if shutil.which("perf") and perf.counter_probe().usable:
        pytest.skip("this machine's PMU counts instructions:u; nothing is <not supported>")
    outcome = _perf_run(make_adapter, tmp_path, "instructions:u")
    value, reason = outcome.value, outcome.reason
    assert value is None
    assert reason is not None and "instructions:u not supported" in reason, reason
    assert "<not supported>" in reason
