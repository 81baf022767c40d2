"""Ground truth for a collected runtime's three figures: c-epoll's `--every N
--every-loop K` runs periodic_work() (K iterations of the 2-instruction loop) on every
Nth request, and with `--every-thread` a second thread runs background_work() instead,
woken by the request. Neither function is in the runtime table: `--collector` names it.
Windows of 1000 requests against N = 7 are not a multiple of it (142 or 143 calls)."""

from __future__ import annotations

from pathlib import Path

import pytest

from icount import backends
from icount import cpus as cpus_mod
from icount.backends.callgrind import CallgrindOptions
from icount.results import UNIT_PER_REQUEST, Cell, Run
from icount.serve.adapter import load_adapter
from icount.serve.cell_options import CellOptions
from icount.serve.runs import RunOutcome, measure_run
from icount.serve.server import Target
from icount.session.options import Warmup

from .conftest import AdapterMaker

N, K = 7, 5000
TRUTH = 2 * K / N  # the collector's instructions per request


def measure(make_adapter: AdapterMaker, tmp_path: Path, name: str, collector: str,
            *flags: str) -> RunOutcome:  # fmt: skip
    adapter = load_adapter(make_adapter(name, *flags))
    split = cpus_mod.split(None, None)
    backend = backends.create("callgrind", CallgrindOptions(collector=(collector,)))
    opts = CellOptions(backend=backend, cpus=split, runs=1, reps=3, requests=1000,
                       warmup=Warmup(100), idle_seconds=0)  # fmt: skip
    with cpus_mod.pinned_self(split.load):
        return measure_run(Target(adapter, tmp_path / "build"), adapter.paths[0], opts,
                           tmp_path / f"run-{name}", None, lambda text: None)  # fmt: skip


def cell_of(outcome: RunOutcome) -> Cell:
    run = Run(outcome.value, outcome.reason is None, outcome.reason, outcome.detail)
    return Cell("c", "plaintext", "callgrind", UNIT_PER_REQUEST, (run,), {}, 1, 0.01)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("collector", "flags"),
    [
        ("periodic_work", ()),
        ("background_work", ("--every-thread",)),
        ("collector_thread", ("--every-thread",)),
    ],
    # the last counts the helper thread whole, through its start function: a call that
    # never returns, counted dump by dump
    ids=["same-thread", "helper-thread-entry", "helper-thread-whole"],
)
def test_the_collector_is_counted_apart_and_the_mutator_exactly(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path, collector: str,
    flags: tuple[str, ...],
) -> None:  # fmt: skip
    base = measure(make_adapter, tmp_path, "k0", collector, "--every", str(N),
                   "--every-loop", "0", *flags)  # fmt: skip
    work = measure(make_adapter, tmp_path, "k", collector, "--every", str(N),
                   "--every-loop", str(K), *flags)  # fmt: skip
    for o in (base, work):
        assert o.reason is None and o.detail is not None and o.value is not None, o.reason
        assert o.detail.runtime == "user"
    assert base.value is not None and work.value is not None
    # the mutator does not see the collector's loop at all
    assert work.value == pytest.approx(base.value, rel=1e-4), (base.value, work.value)
    b, w = cell_of(base).runtime, cell_of(work).runtime
    assert b is not None and w is not None
    collected = w.collector - b.collector
    print(f"mutator {base.value:.2f} vs {work.value:.2f}; collector {collected:.2f} vs "
          f"{TRUTH:.2f} (±{w.half_width:.2f}); total {w.total}")  # fmt: skip
    assert abs(collected - TRUTH) / TRUTH < 0.005
    truth = base.value + b.collector + TRUTH
    assert w.total is not None and abs(w.total - truth) <= w.half_width, (w, truth)
    assert w.total_valid, w.reason
