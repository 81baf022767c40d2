"""Profiles through the fake backend (costs known by construction): a serve run's
windows keep their functions through measure_run and a cell's profile is their median
per request; an `icount run` cell's is its runs' median per run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from icount import measure_command
from icount.backends.protocol import Counted, Server, WindowCount
from icount.cpus import CpuSplit
from icount.measure_command import CommandSpec, RunOptions
from icount.results.cell_profile import PER_REQUEST, PER_RUN, cell_profile
from icount.serve import adapter as adapters
from icount.serve.cell_options import CellOptions
from icount.serve.runs import measure_run
from icount.serve.server import Target
from icount.session.options import Warmup
from icount.window_profile import FunctionCost, WindowProfile
from tests.serve.test_runs import ADAPTER  # its first path answers as expected
from tests.support.fake_backend import FakeBackend, FakeConfig, FakeServer

ALLOCS = 3  # allocator calls of each request


class ProfilingServer(FakeServer):
    """The fake server, its windows' functions handed over as callgrind's are: self =
    inclusive (the fake's functions call nothing), a call per request charged."""

    def open_window(self) -> None:
        super().open_window()
        self.first = self.requests

    def close_window(self) -> WindowCount:
        count = super().close_window()
        served = self.requests - self.first
        assert count.functions is not None
        costs = {name: FunctionCost(v, v, 0 if name == "vgdb" else served)
                 for name, v in count.functions.items()}  # fmt: skip
        profile = WindowProfile(costs, ALLOCS * served, 0, top=5)
        return WindowCount(count.instructions, count.processes, profile, count.runtime)


class ProfilingBackend(FakeBackend):
    def start_server(self, argv: Sequence[str], run_dir: Path, **kw: Any) -> Server:
        return ProfilingServer(argv, run_dir, self.config, bool(kw.get("whole_life")))

    def count_command(self, argv: Sequence[str], run_dir: Path, **kw: Any) -> Counted:
        c = super().count_command(argv, run_dir, **kw)
        assert c.instructions is not None
        main = FunctionCost(c.instructions, c.instructions, 1)
        return Counted(c.instructions, c.returncode, c.timed_out, c.problem, c.processes,
                       WindowProfile({"main": main}, allocations=len(argv), top=5))  # fmt: skip


def test_a_serve_cells_profile_is_its_windows_median_per_request(tmp_path: Path) -> None:
    (tmp_path / "adapter.toml").write_text(ADAPTER)
    target = Target(adapters.load_adapter(tmp_path / "adapter.toml"), tmp_path / "build")
    # even requests cost 500 in handle, odd ones 300 in parse
    config = FakeConfig(cost=lambda i, p: 500.0 if i % 2 == 0 else 300.0,
                        function=lambda i: "handle" if i % 2 == 0 else "parse")  # fmt: skip
    opts = CellOptions(backend=ProfilingBackend(config), cpus=CpuSplit((0,), (0,), "test"),
                       runs=1, reps=3, requests=100, warmup=Warmup(20), idle_seconds=0)  # fmt: skip
    outcome = measure_run(target, target.adapter.paths[0], opts, tmp_path / "run", None,
                          lambda text: None)  # fmt: skip
    assert outcome.reason is None and outcome.detail is not None
    pairs = zip(outcome.detail.reps, outcome.functions, strict=True)
    windows = [(f, rep.requests) for rep, f in pairs if isinstance(f, WindowProfile)]
    assert len(windows) == 3
    p = cell_profile(windows, PER_REQUEST)
    assert p is not None
    # 50 requests of each kind in a window of 100, and the window's own 27 instructions
    assert [(f.name, f.self_ir, f.calls) for f in p.functions] == [
        ("handle", 250.0, 1.0),
        ("parse", 150.0, 1.0),
        ("vgdb", 0.27, 0.0),
    ]
    assert sum(f.self_ir for f in p.functions) == outcome.value == 400.27
    assert p.allocations == ALLOCS and p.others.functions == 0


def test_a_run_cells_profile_is_per_run(tmp_path: Path) -> None:
    opts = RunOptions(backend=ProfilingBackend(), runs=2, cwd=tmp_path)
    res = measure_command.measure([CommandSpec("cmd", ("/bin/true", "a", "b"))], opts,
                                  tmp_path / "artifacts")  # fmt: skip
    (cell,) = res.cells
    assert cell.profile is not None and cell.profile.per == PER_RUN
    assert cell.profile.windows == 2 and cell.profile.allocations == 3.0  # argv's length
    assert [(f.name, f.self_ir) for f in cell.profile.functions] == [("main", 3000.0)]
