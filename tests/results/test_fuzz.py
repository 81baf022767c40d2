"""Results files mutated at random: every one loads, or is refused with one
ResultsFileError; what loads renders in every format, compares with the original and
with itself, draws, and saves back to a file that loads to the same cells.

The inputs are real files written by icount (fixtures/results/v1, the same files
rewritten in version 2, fixtures/compare); a mutation replaces one value anywhere in
the document with a value of another kind or at an edge (-0, -0.0, 1e308, 2**63,
strings, NaN/Infinity as JSON tokens, deep nesting), drops a key, or cuts the text.
"""

from __future__ import annotations

import functools
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icount import charts, export, results, results_table
from icount.compare import model, render
from icount.compare.thresholds import DEFAULT_MIN_DELTA, parse_thresholds
from icount.errors import ResultsFileError
from tests.support.mutate import drop, mutated, replace, slots

ROOT = Path(__file__).resolve().parents[2]
ORIGINALS = sorted((ROOT / "fixtures" / "results").glob("v*/*.json")) + sorted(
    (ROOT / "fixtures" / "compare").glob("*.json")
)

EDGES: list[Any] = [
    0, -1, 1, 2**63 - 1, -(2**63), 0.5, -0.5, 1e308, -1e308, 5e-324, "", "x", "a b",
    None, True, False, [], {}, [1], {"a": 1}, "-0", [[[[[]]]]], "\u00b2", 10**18,
    -5, -5.5, "x\nicount: forged", "\x1b[2J", "\u0661",
]  # fmt: skip
RAW_EDGES = ["-0", "-0.0", "0e0", "1e999", "-1e999", "NaN", "Infinity", "-Infinity",
             "1" * 30, "-" + "9" * 25, "[" * 100000 + "]" * 100000, "1.5e-400"]  # fmt: skip
MARK = "\u0000icount-fuzz\u0000"


def _documents() -> list[tuple[Any, results.Results]]:
    """(the document, the results it holds) of every original, in both layouts."""
    docs = []
    for path in ORIGINALS:
        doc, res = json.loads(path.read_text()), results.load(path)
        docs.append((doc, res))
        if doc.get("version") == 1:  # the same cells in today's layout
            docs.append((results.to_json(res), res))
    return docs


EXPLAINED = {
    "spread": 0.02,
    "low": {"window": "run 1 rep 2", "per_request": 100.0},
    "high": {"window": "run 2 rep 1", "per_request": 102.0},
    "functions": [["malloc", 1.5], ["free", -0.5]],
    "explained": 0.5,
}


def _explained(doc: Any) -> Any:
    """The document with the functions behind a spread in its first cell's `extra`,
    as icount serve writes them, so that the mutations reach every field of it."""
    cells = [dict(c) for c in doc["cells"]]
    cells[0]["extra"] = {**cells[0].get("extra", {}), "spread_explained": EXPLAINED}
    return {**doc, "cells": cells}


DOCS = _documents()
DOCS += [(_explained(doc), res) for doc, res in DOCS[:2]]


def _mutate(rng: random.Random) -> tuple[str, results.Results]:
    """(the text of the mutated file, the results of its original)."""
    doc, original = DOCS[rng.randrange(len(DOCS))]
    for _ in range(rng.randint(1, 3)):
        where = rng.choice(slots(doc))
        roll = rng.random()
        if roll < 0.15 and where:
            doc = drop(doc, where)
            continue
        doc = replace(doc, where, MARK if roll < 0.45 else rng.choice(EDGES))
    if rng.random() < 0.5:  # the stored statistics left out, so odd values get past them
        doc = _without_statistics(doc)
    text = json.dumps(doc, indent=1)
    if MARK in text:
        text = text.replace(json.dumps(MARK), rng.choice(RAW_EDGES), 1)
        text = text.replace(json.dumps(MARK), "0")
    if rng.random() < 0.05:
        text = text[: rng.randrange(len(text) + 1)]
    return text, original


STORED = ("median", "min", "max", "spread", "valid", "reason")


def _without_statistics(doc: Any) -> Any:
    cells = doc.get("cells") if isinstance(doc, dict) else None
    if not isinstance(cells, list):
        return doc
    bare = [{k: v for k, v in c.items() if k not in STORED} if isinstance(c, dict) else c
            for c in cells]  # fmt: skip
    return {**doc, "cells": bare}


def _must_hold(path: Path, original: results.Results) -> None:
    try:
        res = results.load(path)
    except ResultsFileError as e:
        assert str(path) in str(e) and "\n" not in str(e)
        return
    for cell in res.cells:  # what loads is what a measurement can make
        for run in cell.runs:
            assert run.value is None or run.value >= 0
            assert run.value is not None or not run.valid
    for fmt in ("table", "md", "csv", "json"):
        _no_unnumbers(export.render_results(res, fmt, 100))
    results_table.explaining_notes(res.cells)
    limits = parse_thresholds([], DEFAULT_MIN_DELTA)
    for base, new in ((res, res), (original, res), (res, original)):
        comparison = model.compare(base, new, limits, [])
        for fmt in ("table", "md", "json", "csv", "benchmark-json"):
            _no_unnumbers(export.render_comparison(comparison, fmt, 100))
        charts.comparison_svg(charts.comparison_from_json(render.to_json(comparison), "x"))
        model.gate(comparison, True)
    charts.results_svg(res)
    again = path.with_name("again.json")
    results.save(again, res, None, overwrite=True)
    assert results.load(again).sorted() == res.sorted()


# 200 draws meet each class of mutation (a dropped key, a raw edge, an edge value, the
# statistics left out, a cut: the rarest, 1 in 20) ten times or more; FUZZ_N=5000 hunts longer.
@settings(
    max_examples=int(__import__("os").environ.get("FUZZ_N", "200")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.integers(min_value=0, max_value=2**32))
def test_mutated_results_files_load_or_are_refused(tmp_path: Path, seed: int) -> None:
    text, original = _mutate(random.Random(seed))
    path = tmp_path / "fuzz.json"
    path.write_text(text)
    _must_hold(path, original)


@functools.cache
def number_slots() -> list[tuple[int, tuple[Any, ...]]]:
    """(document, slot) for each kind of numeric slot among the first 12 of the first
    cell of every original, once per layout and kind of cell (unit, backend): run 2's
    value is read and drawn as run 1's is, so the 192 placements come down to the 55
    kinds among them, each still met by every edge."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for i, (doc, _) in enumerate(DOCS):
        first = doc["cells"][0]
        numbers = [w for w in slots(doc) if w[:2] == ("cells", 0) and _is_number(doc, w)]
        for where in numbers[:12]:
            shape = tuple("#" if isinstance(k, int) else k for k in where[2:])
            kind = (doc.get("version"), first.get("unit"), first.get("backend"), shape)
            if kind not in seen:
                seen.add(kind)
                out.append((i, where))
    return out


@pytest.mark.parametrize("raw", RAW_EDGES)
def test_every_raw_edge_in_every_number_slot_of_a_cell(tmp_path: Path, raw: str) -> None:
    """The edges the red-team found (-0, infinities, huge integers), in every kind of
    numeric slot of a cell (number_slots), deterministically."""
    assert len(number_slots()) >= 50
    for i, where in number_slots():
        doc, original = DOCS[i]
        edged = _without_statistics(replace(doc, where, MARK))
        text = json.dumps(edged).replace(json.dumps(MARK), raw)
        path = tmp_path / "edge.json"
        path.write_text(text)
        _must_hold(path, original)


def _no_unnumbers(text: str) -> None:
    """No figure printed is an infinity or NaN ('+inf%' was called a regression)."""
    words = set(re.findall(r"[A-Za-z]+", text.lower()))
    assert not words & {"inf", "infinity", "nan"}, text


def _is_number(doc: Any, where: tuple[Any, ...]) -> bool:
    for k in where:
        doc = doc[k]
    return isinstance(doc, int | float) and not isinstance(doc, bool)


def test_a_comparison_never_prints_an_infinite_change(tmp_path: Path) -> None:
    """A base median of 5e-324 made the change +inf%, called a regression: such a file
    is refused on loading, and a comparison of such cells made in memory still prints
    no infinite change."""
    from icount.results import Cell, Results, Run
    from icount.results.details import CommandDetail

    def cell(value: float) -> Results:
        runs = tuple(Run(value, True, None, CommandDetail(0)) for _ in range(3))
        unit = results.UNIT_INSTRUCTIONS
        return Results({}, (Cell("a", "", "callgrind", unit, runs, {}, 3, 0.01),))

    base = tmp_path / "base.json"
    results.save(base, cell(5e-324), None, overwrite=True)
    with pytest.raises(ResultsFileError, match="run 1: value 5e-324 is too small to be any"):
        results.load(base)
    comparison = model.compare(cell(5e-324), cell(1000.0), parse_thresholds([], DEFAULT_MIN_DELTA))
    for fmt in ("table", "md", "json", "csv", "benchmark-json"):
        _no_unnumbers(export.render_comparison(comparison, fmt, 100))
    assert comparison.rows[0].delta_pct is None


@pytest.mark.parametrize("value", ["1e300", "-1e300", "9.3e18"])
def test_a_run_value_beyond_64_bits_is_refused(tmp_path: Path, value: str) -> None:
    doc, _ = DOCS[0]
    where = next(w for w in slots(doc) if w[-1:] == ("value",) and _is_number(doc, w))
    path = tmp_path / "big.json"
    path.write_text(json.dumps(replace(doc, where, MARK)).replace(json.dumps(MARK), value))
    with pytest.raises(ResultsFileError, match="is beyond any count icount measures"):
        results.load(path)


def test_negative_zero_is_read_as_zero(tmp_path: Path) -> None:
    doc, _ = DOCS[0]
    where = next(w for w in slots(doc) if w[-1:] == ("max_spread",))
    for raw in ("-0", "-0.0"):
        edged = _without_statistics(replace(doc, where, MARK))
        path = tmp_path / "zero.json"
        path.write_text(json.dumps(edged).replace(json.dumps(MARK), raw))
        with pytest.raises(ResultsFileError, match=r"max_spread 0(\.0)? is not a spread limit"):
            results.load(path)
    runs = [w for w in slots(doc) if w[-1:] == ("value",) and _is_number(doc, w)]
    edged = _without_statistics(replace(doc, runs[0], MARK))
    path.write_text(json.dumps(edged).replace(json.dumps(MARK), "-0.0"))
    assert '"value": -0' not in results.results_json(results.load(path))


@pytest.mark.parametrize("raw", ["1.5", '"17 KiB"', "true", "-1", "1e3", "[]", "null"])
def test_binary_sizes_must_be_byte_counts(tmp_path: Path, raw: str) -> None:
    doc, _ = next(d for d in DOCS if "binary_bytes" in json.dumps(d[0]))
    where = next(w for w in slots(doc) if w[-1:] == ("binary_bytes",))
    path = tmp_path / "size.json"
    path.write_text(json.dumps(replace(doc, where, MARK)).replace(json.dumps(MARK), raw))
    with pytest.raises(ResultsFileError, match=r"cell\.extra\.binary_bytes"):
        results.load(path)


def _comparison_documents() -> list[Any]:
    """The JSON of comparisons of the originals, one forced past a fingerprint
    difference (its `forced` list filled), as `icount report` reads them back."""
    limits = parse_thresholds([], DEFAULT_MIN_DELTA)
    docs = []
    for _, res in DOCS[:4]:
        forced = [model.FieldDifference("cpu_model", "a", "b")]
        docs.append(render.to_json(model.compare(res, res, limits, forced)))
    return docs


COMPARISONS = _comparison_documents()


@settings(max_examples=int(__import__("os").environ.get("FUZZ_N", "200")) // 2, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_mutated_comparison_files_load_or_are_refused(seed: int) -> None:
    """`forced` given as a number raised TypeError in `icount report`."""
    from icount.errors import ParseError

    rng = random.Random(seed)
    doc = mutated(COMPARISONS[rng.randrange(len(COMPARISONS))], rng, EDGES)
    try:
        drawn = charts.comparison_from_json(doc, "cmp.json")
    except ParseError as e:
        assert str(e).startswith("cmp.json: ") and "\n" not in str(e)
        return
    charts.comparison_svg(drawn)
