"""`icount interleave`, the command the interleaved modes of `icount compare` became:
`compare --interleave ...` runs it with the same output, exit code and provenance;
`--arrival` measures both server builds under one arrival, recorded as serve records
it; compare of results files refuses the interleave's options, naming them, but for the
four it always took and ignored (a warning now); messages to users of `icount
interleave` name it, not compare. On the fake backend (tests/support/fake_backend.py),
in-process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from icount import results
from icount.session.options import Arrival

from . import test_interleave_options as options
from .conftest import Cli
from .test_interleave_control import SERVE

targets = options.targets  # the fixture: two fake adapters, 1000 and 1020 a request


def _ab(cli: Cli, targets: dict[str, Any], command: list[str], *extra: str | Path) -> Any:
    return cli(*command, "--base-target", targets["base"], "--new-target", targets["new"],
               "--path", "json", "--pairs", "2", *SERVE, *extra)  # fmt: skip


def _provenance(out: Path) -> dict[str, Any]:
    doc = json.loads(results.provenance_path(out).read_text())
    assert isinstance(doc, dict)
    return doc


@pytest.mark.parametrize("arrival", ["idle", "closed"])
def test_both_builds_run_under_the_arrival_asked_for_and_it_is_recorded(
    cli: Cli, targets: dict[str, Any], tmp_path: Path, arrival: str
) -> None:
    out = tmp_path / "ab.json"
    done = _ab(cli, targets, ["interleave"], "--arrival", arrival, "-f", "json", "-o", out)
    assert done.code == 3, done.err  # +20 a request, every pair
    assert {o.arrival for o in targets["opts"]} == {Arrival(arrival)}
    assert len(targets["opts"]) == 4  # two pairs, base then new
    plan = _provenance(out)["plan"]
    assert plan["arrival"] == arrival  # as serve's provenance records what was asked
    # and each arm as a serve cell's params record the arrival it was measured with
    assert [plan["arms"][arm]["arrival"] for arm in ("base", "new")] == [arrival] * 2


def test_without_arrival_both_builds_run_idle_with_the_builtin_client(
    cli: Cli, targets: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "ab.json"
    done = _ab(cli, targets, ["interleave"], "-o", out)
    assert done.code == 3, done.err
    assert {o.arrival for o in targets["opts"]} == {Arrival.IDLE}
    plan = _provenance(out)["plan"]
    assert plan["arrival"] is None  # not asked for: the default, which each arm records
    assert {a["arrival"] for a in plan["arms"].values()} == {"idle"}


def test_compare_interleave_runs_the_command_with_the_same_output(
    cli: Cli, targets: dict[str, Any], tmp_path: Path
) -> None:
    routed = _ab(cli, targets, ["compare", "--interleave"], "-f", "json", "-o", tmp_path / "a")
    direct = _ab(cli, targets, ["interleave"], "-f", "json", "-o", tmp_path / "b")
    assert (routed.code, routed.out, routed.err) == (direct.code, direct.out, direct.err)
    assert routed.code == 3 and routed.err.startswith("icount: error: 1 of 1 cell regressed")
    assert (tmp_path / "a").read_text() == (tmp_path / "b").read_text()
    # the provenance records the command line as it was given
    argv = [_provenance(tmp_path / f)["icount_argv"][:2] for f in "ab"]
    assert argv == [["icount", "compare"], ["icount", "interleave"]]
    assert _provenance(tmp_path / "a")["plan"] == _provenance(tmp_path / "b")["plan"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # compare of results files takes none of the interleave's options (but four)
        (["compare", "a.json", "b.json", "--arrival", "closed", "--pairs", "3", "-c", "2"],
         "--concurrency and --arrival need --interleave"),
        (["compare", "a.json", "b.json", "-c", "2"], "--concurrency needs --interleave"),
        (["compare", "a.json", "b.json", "-j", "2"], "--jobs does not go with compare"),
        # nor does an interleave take compare's options of results files
        (["interleave", "--base-cmd", "a", "--new-cmd", "b", "--ledger", "l.md"],
         "--ledger records a comparison of results files, not an interleave"),
        (["interleave", "--base-cmd", "a", "--new-cmd", "b", "--size-gate", ".text"],
         "--size-gate names rows of `icount size -o` files"),
        (["interleave", "x.json", "--base-cmd", "a", "--new-cmd", "b"],
         "icount interleave measures builds; it takes no results files"),
        (["interleave", "--base-cmd", "a", "--new-cmd", "b", "--arrival", "closed"],
         "--arrival does not go with --base-cmd"),
        (["interleave", "--base-cmd", "a"],
         "icount interleave needs --base-cmd 'CMD' and --new-cmd 'CMD'"),
        (["interleave", "--base-target", "a"],
         "icount interleave needs --base-target ADAPTER and --new-target ADAPTER"),
        (["interleave", "--base-cmd", "a", "--new-cmd", "b", "-j", "2"],
         "--jobs does not go with icount interleave: an interleave's runs take turns"),
        (["interleave", "--base-cmd", "a", "--new-cmd", "b", "--memory"],
         "--memory does not go with icount interleave: peak memory"),
        # compare --interleave alone: what it needs, not interleave's whole help
        (["compare", "--interleave"], "--interleave needs --base-cmd 'CMD' and --new-cmd 'CMD'"),
        (["compare", "--interleave=yes", "--base-cmd", "a", "--new-cmd", "b"],
         "--interleave takes no value"),
        (["compare", "a.json", "b.json", "--interleave=1"], "--interleave takes no value"),
    ],
)  # fmt: skip
def test_each_command_refuses_the_others_options_in_one_line(
    cli: Cli, args: list[str], message: str
) -> None:
    done = cli(*args)
    assert done.code == 2, done.err
    assert message in done.err
    assert len(done.err.strip().splitlines()) == 1
    if args[0] == "interleave":  # its users typed neither compare nor --interleave
        assert "--interleave" not in done.err and "with compare" not in done.err


FILE = Path(__file__).resolve().parents[2] / "fixtures" / "results" / "v1" / "run.json"


@pytest.mark.parametrize(
    ("extra", "warning"),
    [
        (["--backend", "perf"], "--backend does nothing without interleaving"),
        (["--pairs", "3", "--name", "x", "--timeout", "2"],
         "--name, --timeout and --pairs do nothing without interleaving"),
    ],
)  # fmt: skip
def test_compare_of_files_ignores_the_four_interleave_options_it_always_took(
    cli: Cli, extra: list[str], warning: str
) -> None:
    """Scripts pass `--backend callgrind` to their run and compare lines alike: compare
    exits as it does without them, saying in one line that they do nothing."""
    plain = cli("compare", FILE, FILE)
    done = cli("compare", FILE, FILE, *extra)
    assert plain.code == 0 and (done.code, done.out) == (plain.code, plain.out)
    said = done.err.removesuffix(plain.err).splitlines()
    assert said == [f"icount: warning: {warning} (`icount interleave` measures two builds); "
                    "ignored"]  # fmt: skip
    assert cli("compare", FILE, FILE, "--pairs", "0").code == 2  # still checked


def test_compare_interleave_says_size_gate_gates_no_row(cli: Cli, targets: dict[str, Any]) -> None:
    """compare's --size-gate given with --interleave: the comparison runs and gates as
    without it, and the line compare gives for files without size rows says so."""
    done = _ab(cli, targets, ["compare", "--interleave"], "--size-gate", ".text")
    assert done.code == 3, done.err
    line = "icount: --size-gate names rows of `icount size -o` files; these hold none\n"
    assert done.err.count(line) == 1


def test_arrival_idle_needs_the_builtin_client(cli: Cli, targets: dict[str, Any]) -> None:
    done = _ab(cli, targets, ["interleave"], "--arrival", "idle", "--load", "h2load")
    assert done.code == 2, done.err
    assert "--arrival idle needs the built-in client: h2load sends its requests itself" in (
        done.err
    )
    assert targets["opts"] == []  # refused before any server started
