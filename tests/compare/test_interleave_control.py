"""Interleaved comparisons with a control arm, and of two server builds: the logic, on
the fake backend (tests/support/fake_backend.py: counts by construction) and on a
measuring function that returns known figures. Measured under callgrind:
test_interleave_measured.py."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from icount.compare.control import ControlArm, Rounds, judged
from icount.compare.model import Pair, Verdict, compare_pairs
from icount.compare.thresholds import parse_thresholds
from icount.interleave.turns import round_order, rounds

from .conftest import Cli

LIMITS = parse_thresholds([], 10)


def test_rounds_rotate_with_a_control_and_keep_base_then_new_without() -> None:
    assert [round_order(i, False) for i in range(3)] == [("base", "new")] * 3
    assert [round_order(i, True) for i in range(4)] == [
        ("base", "new", "control"),
        ("new", "control", "base"),
        ("control", "base", "new"),
        ("base", "new", "control"),
    ]
    ran: list[tuple[str, int]] = []

    def measure(arm: str, i: int) -> tuple[float | None, str | None]:
        ran.append((arm, i))
        return {"base": 1000.0, "new": 1010.0, "control": 1000.0 + 10 * i}[arm], None

    done = rounds(measure, 3, True)
    assert ran == [("base", 1), ("new", 1), ("control", 1), ("new", 2), ("control", 2),
                   ("base", 2), ("control", 3), ("base", 3), ("new", 3)]  # fmt: skip
    assert done.pairs == (Pair(1000, 1010),) * 3 and done.failed is None
    assert done.control == ControlArm((1010.0, 1020.0, 1030.0))


def test_a_drifting_control_makes_a_change_within_it_unclaimable() -> None:
    pairs = (Pair(1000, 1011),) * 3
    (row,) = compare_pairs("c", "fake", "instructions", pairs, None, LIMITS).rows
    assert row.verdict is Verdict.REGRESSED
    drifting = ControlArm((1000.0, 1010.0, 1020.0))  # drift 20/1010 = 1.98%
    assert drifting.drift is not None and float(drifting.drift) == pytest.approx(20 / 1010)
    assert drifting.first_last is not None and float(drifting.first_last) == 0.02
    out = judged(row, Rounds(pairs, drifting))
    assert out.verdict is Verdict.UNCHANGED
    assert out.why == (
        "the change +1.10% is within the control drift 1.98% over 3 rounds (max-min over "
        "median), first->last +2.00%: not claimable"
    )
    steady = judged(row, Rounds(pairs, ControlArm((1000.0, 1000.0, 1000.0))))
    assert steady.verdict is Verdict.REGRESSED
    assert (
        steady.why == "control drift 0.00% over 3 rounds (max-min over median), first->last 0.00%"
    )
    # a change exactly at the drift is not claimable either: exact, as thresholds are
    at = judged(row, Rounds(pairs, ControlArm((1000.0, 1011.0, 1000.0))))  # 11/1000
    assert at.verdict is Verdict.UNCHANGED
    below = judged(row, Rounds(pairs, ControlArm((1000.0, 1010.0, 1000.0))))
    assert below.verdict is Verdict.REGRESSED
    failed = judged(row, Rounds(pairs, ControlArm((1000.0, None), "control run 2: boom")))
    assert failed.verdict is Verdict.UNCHANGED
    assert failed.why.startswith("the control failed (control run 2: boom)")


def test_a_failed_run_stops_the_rounds_and_says_which_arm() -> None:
    def measure(arm: str, i: int) -> tuple[float | None, str | None]:
        if (arm, i) == ("control", 2):
            return None, "exited with status 1"
        return 1000.0, None

    done = rounds(measure, 3, True)
    # round 2 ran new, then the control, which failed: base was not run
    assert done.pairs == (Pair(1000, 1000), Pair(None, 1000))
    assert done.failed is None
    assert done.control == ControlArm((1000.0, None), "control run 2: exited with status 1")


# ------------------------------------------------------------------ the CLI, fake backend


def _fake(name: str, arm: str) -> str:
    """The serve tests' fake adapter, named `name`, its start line saying which arm it is."""
    from tests.serve.test_session import FAKE_ADAPTER

    start = json.dumps(["true", "--port", "{port}", "--arm", arm])
    text = FAKE_ADAPTER.replace('name = "fake"', f"name = {json.dumps(name)}")
    return text.replace('start = ["true", "--port", "{port}"]', f"start = {start}")


SERVE = ["--backend", "fake", "--requests", "50", "--warmup", "5", "--reps", "1",
         "--idle-seconds", "0", "-q"]  # fmt: skip


@pytest.fixture
def arms(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Three fake adapters (base, new, control) in folders of different lengths, and
    the argv of every server the fake started; `costs` sets each arm's cost, by the
    control servers started before it."""
    from icount import backends
    from tests.support import fake_backend

    started: list[list[str]] = []
    state: dict[str, Any] = {"started": started, "costs": {}}

    def cost(i: int, process: int) -> float:
        arm = started[process][-1]
        controls = sum(1 for a in started[:process] if a[-1] == "control")
        return float(state["costs"][arm](controls))

    monkeypatch.setitem(backends.REGISTRY, "fake", "tests.support.fake_backend")
    monkeypatch.setattr(fake_backend, "CONFIG", fake_backend.FakeConfig(cost=cost))
    real = fake_backend.FakeBackend.start_server

    def start(self: Any, argv: Sequence[str], run_dir: Path, **kw: Any) -> Any:
        started.append(list(argv))
        return real(self, argv, run_dir, **kw)

    monkeypatch.setattr(fake_backend.FakeBackend, "start_server", start)
    for arm, folder in (("base", "b"), ("new", "a-much-longer-folder"), ("control", "c")):
        d = tmp_path / folder
        d.mkdir()
        name = "fake-new" if arm == "new" else f"fake-{arm}"
        (d / "adapter.toml").write_text(_fake(name, arm))
        state[arm] = str(d)
    yield state


def _interleave(cli: Cli, arms: dict[str, Any], *extra: str) -> Any:
    return cli("compare", "--interleave", "--base-target", arms["base"], "--new-target",
               arms["new"], "--control-target", arms["control"], "--pairs", "3", *SERVE,
               *extra)  # fmt: skip


def test_servers_interleave_with_a_drifting_control_claim_nothing(
    cli: Cli, arms: dict[str, Any]
) -> None:
    # new costs +2% a request; the control 2% more each round it has run in: 4% drift
    arms["costs"] = {"base": lambda k: 1000, "new": lambda k: 1020,
                     "control": lambda k: 1000 + 20 * k}  # fmt: skip
    done = _interleave(cli, arms, "-f", "json")
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    assert doc["mode"] == "interleave" and doc["pairs"] == []  # two cells: pairs per cell
    assert [(c["name"], c["path"], c["verdict"]) for c in doc["cells"]] == [
        ("fake-new", "plaintext", "unchanged"),
        ("fake-new", "json", "unchanged"),
    ]
    for j, (cell, shown) in enumerate(zip(doc["cells"], ("3.92%", "3.70%"), strict=True)):
        r = cell["rounds"]
        # every request costs its arm's figure, and the window's 27 spread over 50
        assert [(p["base"], p["new"]) for p in r["pairs"]] == [(1000.54, 1020.54)] * 3
        # the control's counter goes on from cell to cell, as a file's would
        first = 1000.54 + 60 * j
        assert r["control"]["values"] == [first, first + 20, first + 40]
        assert r["control"]["drift"] == pytest.approx(40 / (first + 20))
        assert r["control"]["first_last"] == pytest.approx(40 / first)
        assert "not claimable" in cell["why"] and f"control drift {shown}" in cell["why"]
    # the same run order for every cell, rotated round by round
    order = [a[-1] for a in arms["started"]]
    rotation = ["base", "new", "control", "new", "control", "base", "control", "base", "new"]
    assert order == rotation * 2
    # every arm ran its program from one path: the link in the cell's work dir
    programs = {a[0] for a in arms["started"][:9]}
    assert len(programs) == 1 and programs.pop().endswith("/bin/true")

    table = _interleave(cli, arms)
    assert table.code == 0
    text = " ".join(table.out.split())  # titles and notes wrap at the table's width
    assert "fake-new/plaintext: interleaved rounds (order rotated)" in text
    # (the fake's control servers go on counting from one invocation to the next)
    assert "fake-new/json: the change +2.00% is within the control drift 3.33%" in text
    assert "control drift 3.33% over 3 rounds (max-min over median), first->last +3.39%" in text
    for fmt in ("md", "csv", "junit", "benchmark-json", "svg"):
        out = _interleave(cli, arms, "-f", fmt).out
        assert "is within the control drift" in out and "not claimable" in out, fmt
    bmf = json.loads(_interleave(cli, arms, "-f", "bmf").out)
    control = bmf["fake-new/json (control)"]["instructions-per-request"]
    assert control["upper_value"] - control["lower_value"] == pytest.approx(40)


def test_servers_interleave_with_a_steady_control_gate_on_the_change(
    cli: Cli, arms: dict[str, Any]
) -> None:
    arms["costs"] = {"base": lambda k: 1000, "new": lambda k: 1020, "control": lambda k: 1000}
    done = _interleave(cli, arms, "--path", "json", "-f", "json")
    assert done.code == 3, done.err
    doc = json.loads(done.out)
    (cell,) = doc["cells"]
    assert (cell["path"], cell["verdict"], cell["delta"]) == ("json", "regressed", 20)
    assert cell["why"] == (
        "control drift 0.00% over 3 rounds (max-min over median), first->last 0.00%"
    )
    assert [p["ratio"] for p in doc["pairs"]] == [pytest.approx(1020.54 / 1000.54)] * 3
    assert len(arms["started"]) == 9  # only the path asked for


def test_a_failed_control_fails_the_interleave(
    cli: Cli, arms: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from icount.serve import server

    monkeypatch.setattr(server, "EXIT_WAIT_S", 0.05)  # the fake stays alive: waits it out

    def boom(k: int) -> float:
        return 50.0  # below the fake's floor of 100 a request: the run is invalid

    arms["costs"] = {"base": lambda k: 1000, "new": lambda k: 1020, "control": boom}
    done = _interleave(cli, arms, "--path", "json")
    assert done.code == 5
    assert "the control failed (control run 1:" in done.out
    assert "icount: error: fake-new/json: control run 1:" in done.err


def test_commands_interleave_with_a_control(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake counts a command as 1000 per argument: new has one more than base."""
    from icount import backends

    monkeypatch.setitem(backends.REGISTRY, "fake", "tests.support.fake_backend")
    done = cli("compare", "--interleave", "--backend", "fake", "--base-cmd", "true a",
               "--new-cmd", "true a b", "--control-cmd", "true a", "--pairs", "2",
               "-q")  # fmt: skip
    assert done.code == 3, done.err
    text = " ".join(done.out.split())
    assert "interleaved rounds (order rotated)" in text
    assert "control drift 0.00% over 2 rounds" in text
    lines = [line.split() for line in done.out.splitlines()]
    assert ["1", "2.000k", "3.000k", "1.5000", "2.000k"] in lines


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--control-cmd", "true"], "--control-cmd needs --interleave"),
        (["--interleave", "--base-cmd", "true", "--new-cmd", "true", "--control-cmd", "true",
          "--pairs", "1"], "--control-cmd needs --pairs 2 or more"),
        (["--interleave", "--base-target", "x", "--new-cmd", "true"],
         "--new-cmd does not go with --base-target"),
        (["--interleave", "--base-cmd", "true", "--new-cmd", "true", "--path", "json"],
         "--path does not go with --base-cmd"),
        (["--interleave", "--base-target", "x"], "--interleave needs --base-target ADAPTER and"),
        (["--interleave", "--base-cmd", "true", "--new-cmd", "true", "--control-target", "x"],
         "--base-cmd does not go with --control-target"),
    ],
)  # fmt: skip
def test_usage_errors(cli: Cli, args: list[str], message: str) -> None:
    done = cli("compare", *args)
    assert done.code == 2
    assert message in done.err


def test_paths_and_control_paths_are_checked_before_anything_runs(
    cli: Cli, arms: dict[str, Any], tmp_path: Path
) -> None:
    arms["costs"] = {"base": lambda k: 1000, "new": lambda k: 1000, "control": lambda k: 1000}
    done = _interleave(cli, arms, "--path", "nope")
    assert done.code == 2 and "--path nope: neither target has that path" in done.err
    one = tmp_path / "one"
    one.mkdir()
    text = _fake("one", "control")
    (one / "adapter.toml").write_text(text[: text.index('[[paths]]\nname = "json"')])
    arms["control"] = str(one)
    done = _interleave(cli, arms)
    assert done.code == 2 and "has no path 'json', which base and new are compared on" in done.err
    assert arms["started"] == []
