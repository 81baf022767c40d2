"""A saved comparison is checked on load (issue 30): `icount report` re-derives each
cell's delta and verdict from its medians and threshold, and the summary and verdict line
from the cells, and refuses a file that contradicts itself in one line (exit 6) instead
of drawing 'improved' under '1 regression'."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icount import charts
from icount.compare import model, render, saved
from icount.compare.thresholds import parse_thresholds
from icount.errors import ExitCode, ParseError
from tests.compare.conftest import Cli, cell, res

GOLDEN = Path(__file__).resolve().parent / "golden"


def _check(doc: dict[str, Any]) -> None:
    saved.check(doc, charts.comparison_from_json(doc, "cmp.json"), "cmp.json")


def _saved(c: model.Comparison) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(json.dumps(render.to_json(c)))
    return doc


@pytest.mark.parametrize("name", ["forced", "runtime", "interleave", "mixed"])
def test_every_golden_comparison_agrees_with_itself(name: str) -> None:
    _check(json.loads((GOLDEN / f"{name}.json").read_text()))


_RUNS = st.lists(st.integers(0, 2_000_000), min_size=1, max_size=4)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(_RUNS, _RUNS), min_size=0, max_size=5),
    st.sampled_from(["1%", "0.5%", "0.7%", "5%", "0.001%"]),
    st.sampled_from([0.0, 10.0, 1000.0]),
)
def test_whatever_compare_writes_loads(
    sides: list[tuple[list[int], list[int]]], threshold: str, min_delta: float
) -> None:
    base = res(*(cell(f"c{i}", b) for i, (b, _) in enumerate(sides)), cell("gone", [5]))
    new = res(*(cell(f"c{i}", n) for i, (_, n) in enumerate(sides)), cell("added", [5]))
    _check(_saved(model.compare(base, new, parse_thresholds([threshold], min_delta))))


def _regressed() -> dict[str, Any]:
    base = res(cell("fib", [1000, 1000, 1000]), cell("loop", [5000, 5000, 5000]))
    new = res(cell("fib", [1200, 1200, 1200]), cell("loop", [5010, 5010, 5010]))
    doc = _saved(model.compare(base, new, parse_thresholds([], 10)))
    assert doc["summary"]["regressed"] == 1 and doc["verdict_line"].startswith("1 regression")
    return doc


def _verdict(v: str) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        d["cells"][0]["verdict"] = v

    return edit


def _set(*path: Any, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        target = d
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        # the reproducer: drawn as 'improved' under '1 regression'
        (_verdict("improved"), "cell 1 (fib): it is improved but the medians changed +20.00%"),
        (_verdict("unchanged"), "cell 1 (fib): it is unchanged but the medians changed +20.00%"),
        (_set("cells", 0, "delta", value=-200), "cell 1 (fib): its delta -200 is not new - base"),
        (_set("cells", 0, "delta_pct", value=-0.2), "its delta_pct -20.00% is not delta / base"),
        (_set("cells", 0, "threshold", value=0.5), "it is regressed but the medians changed"),
        (
            _set("cells", 0, "new", "min", value=900),
            "makes it unchanged (within the measured spread",
        ),
        (_set("cells", 0, "new", value=None), "it is regressed without figures on both sides"),
        (_set("cells", 1, "verdict", value="regressed"), "cell 2 (loop): it is regressed but"),
        (_set("cells", 1, "verdict", value="missing in new"), "it is missing in new but has a"),
        (_set("summary", "regressed", value=0), "its summary counts 0 regressed where its cells"),
        (_set("verdict_line", value="1 improved, 1 unchanged (threshold 1%)"), "its verdict line"),
    ],
)
def test_a_contradiction_is_refused_in_one_line(
    edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    doc = _regressed()
    _check(copy.deepcopy(doc))
    edit(doc)
    with pytest.raises(ParseError) as err:
        _check(doc)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_report_refuses_a_forged_comparison(cli: Cli, tmp_path: Path) -> None:
    doc = _regressed()
    doc["cells"][0]["verdict"] = "improved"
    doc["summary"] |= {"regressed": 0, "improved": 1}
    doc["verdict_line"] = "1 improved, 1 unchanged (threshold 1%, min delta 10)"
    path = tmp_path / "cmp.json"
    path.write_text(json.dumps(doc))
    done = cli("report", path, "-o", tmp_path / "r.html", "-q")
    assert done.code == ExitCode.BAD_INPUT
    assert done.err.startswith(f"icount: error: {path}: cell 1 (fib): it is improved but the")
    assert len(done.err.splitlines()) == 1
    assert not (tmp_path / "r.html").exists()
    path.write_text(json.dumps(_regressed()))
    assert cli("report", path, "-o", tmp_path / "r.html", "-q").code == ExitCode.OK


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 3000), st.integers(0, 3000)), min_size=1, max_size=6),
    st.sampled_from(["1%", "0.7%", "10%", "0.001%"]),
)
def test_whatever_an_interleave_writes_loads(pairs: list[tuple[int, int]], threshold: str) -> None:
    from icount.compare.rounds import Pair

    # around 1000 by ones, a ratio at 1% or 0.7% exactly is often the median
    done = [Pair(float(b), float(n)) for b, n in pairs]
    c = model.compare_pairs("cmd", "callgrind", "instructions", done, None,
                            parse_thresholds([threshold], 0))  # fmt: skip
    _check(_saved(c))


@pytest.mark.parametrize("rerun", [1_000_100, 1_050_000])
def test_a_confirmed_or_unconfirmed_rerun_loads(rerun: int) -> None:
    import dataclasses

    from icount.compare.confirm import _confirmed

    limits = parse_thresholds([], 10)
    base, first = cell("fib", [1_000_000] * 3), cell("fib", [1_030_000] * 3)
    c = model.compare(res(base), res(first), limits)
    again = model.judge(base, cell("fib", [rerun] * 2), limits)
    row = _confirmed(c.rows[0], again, 2)
    doc = _saved(dataclasses.replace(c, rows=(row,)))
    assert doc["cells"][0]["verdict"] == ("unchanged" if rerun < 1_010_000 else "regressed")
    _check(doc)
    doc["cells"][0]["verdict"] = "improved"  # against its rerun too
    doc["summary"] = {"improved": 1}
    doc["verdict_line"] = "1 improved (threshold 1%, min delta 10)"
    with pytest.raises(ParseError, match="it is improved but its rerun changed"):
        _check(doc)


SAVED = Path(__file__).resolve().parent / "saved"


def test_an_interleave_with_a_failed_run_loads() -> None:
    """compare --interleave under callgrind, whose second new run exited 1 (review2 H1):
    both sides keep the runs that completed, and no delta."""
    doc = json.loads((SAVED / "interleave-failed-run.json").read_text())
    assert doc["cells"][0]["verdict"] == "invalid in new" and doc["cells"][0]["base"]
    _check(doc)
    doc["cells"][0]["delta"] = 268001.0
    with pytest.raises(ParseError, match="it is invalid in new but has a delta"):
        _check(doc)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3000) | st.none(), st.integers(0, 3000) | st.none()),
        min_size=0,
        max_size=5,
    ),
    st.sampled_from([None, model.Verdict.INVALID_IN_BASE, model.Verdict.INVALID_IN_NEW]),
)
def test_whatever_a_failed_or_zero_interleave_writes_loads(
    pairs: list[tuple[int | None, int | None]], failed: model.Verdict | None
) -> None:
    from icount.compare.rounds import Pair

    done = [Pair(None if b is None else float(b), None if n is None else float(n))
            for b, n in pairs]  # fmt: skip
    why = None if failed is None else (failed, "new run 2: exited with status 1")
    c = model.compare_pairs("cmd", "callgrind", "instructions", done, why,
                            parse_thresholds(["1%"], 10))  # fmt: skip
    _check(_saved(c))


def test_an_interleave_whose_base_counted_0_and_a_unit_change_load() -> None:
    from icount.compare.rounds import Pair

    zero = model.compare_pairs("cmd", "callgrind", "instructions", [Pair(0.0, 5.0)], None,
                               parse_thresholds([], 10))  # fmt: skip
    assert zero.rows[0].verdict is model.Verdict.INVALID_IN_BASE and zero.rows[0].base
    _check(_saved(zero))
    units = model.compare(res(cell("fib", [1000])), res(cell("fib", [900], unit="bytes")),
                          parse_thresholds([], 10))  # fmt: skip
    assert units.rows[0].verdict is model.Verdict.INVALID_IN_NEW and units.rows[0].new
    _check(_saved(units))


def test_an_interleaved_change_is_its_pairs() -> None:
    """The review's forgery: delta_pct and median_ratio set to +90% beside pairs of
    1.0142 drew '+90.00%' (review2 M1)."""
    doc = json.loads((SAVED / "interleave-forged-pct.json").read_text())
    with pytest.raises(ParseError, match=r"its delta_pct \+90.00% is not its pairs' median"):
        _check(doc)
    doc = json.loads((GOLDEN / "interleave.json").read_text())
    doc["pairs"][0]["ratio"] = 1.5
    with pytest.raises(ParseError, match="its pairs are not readable"):
        _check(doc)


def test_a_total_change_is_its_totals() -> None:
    """The review's forgery: a total's delta_pct set to -75% was drawn (review2 M1)."""
    doc = json.loads((SAVED / "runtime-forged-total.json").read_text())
    with pytest.raises(ParseError, match=r"its total's delta_pct -75.00% is not its totals'"):
        _check(doc)


@pytest.mark.parametrize("line", [
    "1 regression, 1 unchanged (ignore: flaky)",
    "1 regression, 1 unchanged (threshold 50%, min delta 10)",
    "1 regression, 1 unchanged (threshold 1%, min delta 10) [FORCED]",
])  # fmt: skip
def test_the_verdict_line_is_icounts_whole(line: str) -> None:
    doc = _regressed()
    _check(copy.deepcopy(doc))
    doc["verdict_line"] = line
    with pytest.raises(ParseError, match="its verdict line"):
        _check(doc)


def test_a_line_counted_before_within_threshold_loads() -> None:
    doc = _saved(model.compare(res(cell("fib", [1000] * 3)), res(cell("fib", [1005] * 3)),
                               parse_thresholds([], 0)))  # fmt: skip
    assert doc["verdict_line"].startswith("1 within threshold (")
    _check(copy.deepcopy(doc))
    doc["verdict_line"] = doc["verdict_line"].replace("within threshold", "unchanged")
    _check(doc)


def test_a_float_verdict_at_the_threshold_loads() -> None:
    """A file written when the threshold was compared in floats: +0.7% exactly judged
    regressed (review2 L7)."""
    doc = _saved(model.compare(res(cell("fib", [1000] * 3)), res(cell("fib", [1007] * 3)),
                               parse_thresholds(["0.7%"], 0)))  # fmt: skip
    doc["cells"][0]["verdict"] = "regressed"
    doc["summary"] |= {"regressed": 1, "unchanged": 0}
    doc["verdict_line"] = "1 regression (threshold 0.7%, min delta 0)"
    _check(doc)


def test_a_serve_interleave_of_several_cells_loads() -> None:
    """Each cell judged on its own rounds, one against a control that drifted, one whose
    control failed before anything ran (unchanged, no figures), as
    icount/interleave/servers.py writes them."""
    from icount.compare.control import judged
    from icount.compare.rounds import ControlArm, Pair, Rounds

    limits = parse_thresholds([], 10)
    pairs = (Pair(1000.0, 1100.0), Pair(1001.0, 1102.0), Pair(999.0, 1099.0))
    rows = []
    for path, control in (("a", None), ("b", ControlArm((1000.0, 1200.0, 1000.0)))):
        (row,) = model.compare_pairs("srv", "callgrind", "instructions/request", pairs, None,
                                     limits, path).rows  # fmt: skip
        rows.append(judged(row, Rounds(pairs, control)))
    (none,) = model.compare_pairs("srv", "callgrind", "instructions/request", (),
                                  (model.Verdict.UNCHANGED, ""), limits, "c").rows  # fmt: skip
    rows.append(judged(none, Rounds((), ControlArm((), "control: cannot start"))))
    assert [r.verdict.value for r in rows] == ["regressed", "unchanged", "unchanged"]
    _check(_saved(model.Comparison(tuple(rows), limits, pairs=())))
