"""Real results files mutated at random, seeded and bounded: each loads with every
figure finite and representable and every text encodable, and then renders in every
results format, or is refused with the project's own error (one line naming the file)
— never another exception.

Beside tests/results/test_fuzz.py (hypothesis, edge values in the cells of the v1 and
compare fixtures) this one reaches the parts those files lack: a measured profile
(tests/compare/runtime/node-json.json) and a shard record, and mutates the way the
hostile-input pass of issue 30 did: hostile names, lone surrogates, subnormal and huge
figures, scaled and negated counts, duplicated list items, dropped keys.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from icount import export, results, shards
from icount.errors import IcountError, ResultsFileError
from icount.export import Kind
from icount.results import Cell, Results, Run
from icount.results.details import CommandDetail
from icount.results.fields import MAX_NUMBER, MIN_NUMBER
from tests.support.mutate import drop, replace, slots

ROOT = Path(__file__).resolve().parents[2]
ORIGINALS = [
    *sorted((ROOT / "fixtures" / "results").glob("v*/*.json")),
    *sorted((ROOT / "fixtures" / "compare").glob("*.json")),
    ROOT / "tests" / "compare" / "runtime" / "node-json.json",
]
N = int(os.environ.get("MUTATIONS", "300"))
SEED = 30

STRINGS = ["", "a/b", "\x1b]8;;x\x07", "\x85\x9b", "\u202e", "\x0c", "\ufffe", "\ud800",
           "\ud83d", "\ud83d\ude00", "new\nline", "<&\"'>", "`", "\u0661\u0662"]  # fmt: skip
NUMBERS: list[Any] = [0, -0.0, -1, 1, 0.5, 5e-324, 1e-300, 2.0**-64, 2.0**-63, 1e308,
                      2**63 - 1, 1e18, 1e14, 10**8, 3, True, None]  # fmt: skip
RAW = ["NaN", "Infinity", "1e309", "-1e309", "1" * 25, "5e-324", "-0"]


def _shard_document() -> Any:
    """The file of shard 2 of 3 of a five-cell session, as icount writes it."""
    planned = [shards.PlannedCell(n, "", "callgrind", {"argv": [n]}, 1.0) for n in "abcde"]
    record = shards.make_record("run", planned, shards.ShardSpec(2, 3, "test"))
    mine = {e.key for e in record.assigned()}
    run = Run(1000.0, True, None, CommandDetail(0, 1))
    cells = tuple(
        Cell(n, "", "callgrind", results.UNIT_INSTRUCTIONS, (run, run), {"argv": [n]}, 2, 0.01,
             order=i)
        for i, n in enumerate("abcde") if (n, "", "callgrind") in mine
    )  # fmt: skip
    return results.to_json(Results({"backend": "callgrind"}, cells, record))


def _documents() -> list[Any]:
    docs = [json.loads(p.read_text()) for p in ORIGINALS]
    return [*docs, _shard_document()]


DOCS = _documents()


def _mutate(rng: random.Random, doc: Any) -> str:
    marks: list[str] = []
    for _ in range(rng.randint(1, 4)):
        where = rng.choice(slots(doc))
        here = _at(doc, where)
        roll = rng.random()
        if where and roll < 0.12:
            doc = drop(doc, where)
        elif isinstance(here, int | float) and not isinstance(here, bool) and roll < 0.45:
            doc = replace(doc, where, rng.choice([-here, here * 1e9, here * 1e-9, here + 0.5]))
        elif isinstance(here, str) and roll < 0.6:
            doc = replace(doc, where, here + rng.choice(STRINGS))
        elif isinstance(here, list) and here and roll < 0.7:
            doc = replace(doc, where, [*here, here[rng.randrange(len(here))]])
        elif roll < 0.8:
            mark = f"\u0000mark{len(marks)}\u0000"
            marks.append(rng.choice(RAW))
            doc = replace(doc, where, mark)
        else:
            doc = replace(doc, where, rng.choice([*NUMBERS, *STRINGS]))
    text = json.dumps(doc)  # ASCII: a lone surrogate is the escape \ud800
    for i, raw in enumerate(marks):
        text = text.replace(json.dumps(f"\u0000mark{i}\u0000"), raw)
    return text


def _at(doc: Any, where: tuple[Any, ...]) -> Any:
    for k in where:
        doc = doc[k]
    return doc


def _sound(value: Any, where: str, stored: bool = True) -> None:
    """Every figure finite, every text encodable, all the way down (dataclasses,
    mappings, sequences); a figure `stored` in the file also within what one may hold
    (derived ones, a ratio of two, may be smaller)."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, float | int):
        if where.endswith("half_width") and value == math.inf:
            return  # a derived interval too few windows give: shown as none, never drawn
        assert math.isfinite(value), where
        if isinstance(value, float) and stored:
            assert value == 0 or MIN_NUMBER <= abs(value) < MAX_NUMBER, (where, value)
        return
    if isinstance(value, str):
        value.encode("utf-8")
        return
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _sound(getattr(value, f.name), f"{where}.{f.name}", stored)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _sound(k, where, stored)
            _sound(v, f"{where}[{k!r}]", stored)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _sound(v, f"{where}[{i}]", stored)


def test_mutated_files_load_sound_or_are_refused_with_our_error(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    path = tmp_path / "mutated.json"
    loaded = refused = 0
    started = time.monotonic()
    for _ in range(N):
        path.write_text(_mutate(rng, DOCS[rng.randrange(len(DOCS))]))
        try:
            res = results.load(path)
        except ResultsFileError as e:
            assert str(e).startswith(f"{path}: ") and "\n" not in str(e)
            refused += 1
            continue
        loaded += 1
        _sound(res, "results")
        for cell in res.cells:  # what tables and compare derive from the runs
            _sound(cell.summary, f"{cell.key}.summary", stored=False)
            _sound(cell.runtime, f"{cell.key}.runtime", stored=False)
        for fmt in export.names(Kind.RESULTS):
            try:
                text = export.render_results(res, fmt, 100)
            except IcountError as e:  # two cells of one key in a keyed format
                assert "\n" not in str(e), fmt
                continue
            text.encode("utf-8")
    # both outcomes are met many times, and the whole stays within a few seconds
    assert loaded > N // 10 and refused > N // 10, (loaded, refused)
    assert time.monotonic() - started < 60


@pytest.mark.parametrize("raw", [r for r in RAW if r != "-0"])
def test_a_raw_edge_in_the_profile_and_the_shard_record_is_refused(
    tmp_path: Path, raw: str
) -> None:
    """The figures of the two parts test_fuzz.py's originals lack, each in turn."""
    path = tmp_path / "edge.json"
    for doc in DOCS[-2:]:
        part = "profile" if "shard" not in doc else "shard"
        numbers = [w for w in slots(doc) if part in w and isinstance(_at(doc, w), int | float)
                   and not isinstance(_at(doc, w), bool)]  # fmt: skip
        assert len(numbers) > 10
        for where in numbers[:: max(1, len(numbers) // 25)]:
            path.write_text(json.dumps(replace(doc, where, "\u0000")).replace('"\\u0000"', raw))
            with pytest.raises(ResultsFileError):
                results.load(path)
