"""`icount compare --interleave --base-target A --new-target B` with serve's options
that decide how a run is measured: parsed by serve's parser into serve's typed values,
measured with them, and recorded in the comparison's provenance as serve records a
session's plan; serve's options that make no sense for an interleave refused in one
line. On the fake backend (tests/support/fake_backend.py), in-process."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from icount import results
from icount.interleave import servers as interleave_serve
from icount.session.options import Warmup

from .conftest import Cli
from .test_interleave_control import SERVE, _fake


@pytest.fixture
def targets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Two fake adapters (base and new, 1000 and 1020 a request), and the options every
    interleaved run was measured with."""
    from icount import backends
    from tests.support import fake_backend

    monkeypatch.setitem(backends.REGISTRY, "fake", "tests.support.fake_backend")
    state: dict[str, Any] = {"opts": []}

    def cost(i: int, process: int) -> float:
        return 1000.0 if process % 2 == 0 else 1020.0  # base, new, base, new ...

    monkeypatch.setattr(fake_backend, "CONFIG", fake_backend.FakeConfig(cost=cost))
    from icount.serve.runs import measure_run as real

    def measure_run(target: Any, spec: Any, opts: Any, *args: Any, **kw: Any) -> Any:
        state["opts"].append(opts)
        return real(target, spec, opts, *args, **kw)

    monkeypatch.setattr(interleave_serve, "measure_run", measure_run)
    for arm in ("base", "new"):
        (tmp_path / arm).mkdir()
        (tmp_path / arm / "adapter.toml").write_text(_fake("fake", arm))
        state[arm] = str(tmp_path / arm)
    yield state


def _two_cpus() -> tuple[int, int]:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("a server CPU and a load CPU apart need two CPUs")
    return cpus[0], cpus[1]


def test_serves_options_measure_every_run_and_are_recorded(
    cli: Cli, targets: dict[str, Any], tmp_path: Path
) -> None:
    server, load = _two_cpus()
    given = ["--concurrency", "3", "--max-spread", "2%",
             "--load", "builtin", "--server-cpus", str(server),
             "--load-cpus", str(load), "--max-load", "1000"]  # fmt: skip
    out = tmp_path / "ab.json"
    done = cli("compare", "--interleave", "--base-target", targets["base"], "--new-target",
               targets["new"], "--path", "json", "--pairs", "2", *SERVE, *given, "-f", "json",
               "-o", out)  # fmt: skip
    assert done.code == 3, done.err  # +20 a request, every pair
    (cell,) = json.loads(out.read_text())["cells"]
    assert (cell["path"], cell["verdict"], cell["delta"]) == ("json", "regressed", 20)
    # every run measured with the typed values serve measures a cell with
    assert len(targets["opts"]) == 4
    (opts,) = set(targets["opts"])
    # no windows added for a collected runtime's total: the pairs judge each run's mutator
    assert (opts.concurrency, opts.max_spread, opts.max_windows) == (3, 0.02, opts.reps)
    assert (opts.cpus.server, opts.cpus.load) == ((server,), (load,))
    assert (opts.load_kind, opts.requests, opts.warmup, opts.reps, opts.idle_seconds) == (
        "builtin", 50, Warmup(5), 1, 0.0)  # fmt: skip

    # the provenance beside -o's file records them as serve's records its plan
    plan = json.loads(results.provenance_path(out).read_text())["plan"]
    served = tmp_path / "serve.json"
    done = cli("serve", targets["new"], "--path", "json", "--runs", "1", *SERVE, *given,
               "-o", served)  # fmt: skip
    assert done.code == 0, done.err
    serve_plan = json.loads(results.provenance_path(served).read_text())["plan"]
    skip = {"targets", "cmd", "runs", "only_paths", "cold_start", "memory", "max_windows"}
    for key in set(serve_plan) - skip:
        assert plan[key] == serve_plan[key], key
    assert plan["max_spread"] == "2%" and plan["concurrency"] == 3
    assert (plan["server_cpus"], plan["load_cpus"], plan["load"]) == ([server], [load], "builtin")
    assert (plan["pairs"], plan["paths"], plan["backend"]) == (2, ["json"], "fake")
    assert plan["arms"]["base"]["target"] == plan["arms"]["new"]["target"] == "fake"
    assert plan["arms"]["new"]["requests"] == 50 and plan["arms"]["new"]["warmup"] == 5
    # two builds of one adapter file: their digests differ only in how they start
    assert plan["arms"]["base"]["digest"] != plan["arms"]["new"]["digest"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--jobs", "2"], "--jobs does not go with compare: an interleave's runs take turns"),
        (["--shard", "1/2"], "--shard does not go with compare"),
        (["--resume", "x.json"], "--resume does not go with compare"),
        (["--cold-start"], "--cold-start does not go with compare --interleave"),
        (["--memory"], "--memory does not go with compare --interleave"),
        (["--max-spread", "x"], "--max-spread takes a percentage"),
        (["--processes", "some"], "--processes takes all or root, got 'some'"),
        (["--max-windows", "5"], "--max-windows does not go with compare --interleave"),
        (["--max-extra-seconds", "5"], "--max-extra-seconds does not go with compare"),
        (["--server-cpus", "0", "--load-cpus", "0"], "share CPU 0"),
        # the backend is given them as serve gives them: the fake takes none
        (["--processes", "root"], "--processes needs the perf or callgrind backend, not fake"),
        (["--collector", "gc.*"], "--collector needs the callgrind backend, not fake"),
        (["--load", "siege"], "unknown load generator 'siege'"),
    ],
)
def test_options_refused_in_one_line(
    cli: Cli, targets: dict[str, Any], args: list[str], message: str
) -> None:
    done = cli("compare", "--interleave", "--base-target", targets["base"], "--new-target",
               targets["new"], *SERVE, *args)  # fmt: skip
    assert done.code == 2, done.err
    assert message in done.err
    assert len(done.err.strip().splitlines()) == 1
    assert targets["opts"] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--interleave", "--base-cmd", "true", "--new-cmd", "true", "--concurrency", "2"],
         "--concurrency does not go with --base-cmd"),
        (["--interleave", "--base-cmd", "true", "--new-cmd", "true", "--reps", "3"],
         "--reps does not go with --base-cmd"),  # given, even at its default
        (["a.json", "b.json", "--server-cpus", "0"], "--server-cpus needs --interleave"),
        (["a.json", "b.json", "--jobs", "2"], "--jobs does not go with compare"),
    ],
)  # fmt: skip
def test_serve_options_need_an_interleave_of_servers(
    cli: Cli, args: list[str], message: str
) -> None:
    done = cli("compare", *args)
    assert done.code == 2, done.err
    assert message in done.err
