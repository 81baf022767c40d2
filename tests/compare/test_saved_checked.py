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


@settings(max_examples=200, deadline=None)
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
        (_verdict("unchanged"), "cell 1 (fib): it is unchanged, with no note, but changed +20.00%"),
        (_set("cells", 0, "delta", value=-200), "cell 1 (fib): its delta -200 is not new - base"),
        (_set("cells", 0, "delta_pct", value=-0.2), "its delta_pct -20.00% is not delta / base"),
        (_set("cells", 0, "threshold", value=0.5), "it is regressed but the medians changed"),
        (_set("cells", 0, "new", "min", value=900), "the runs of its two sides overlap"),
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


@settings(max_examples=200, deadline=None)
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
