"""Results files whose contents no measurement makes are refused on loading, with one
line naming the cell and the field: a valid run without a value, negative counts, a
malformed `spread_explained`; and a file of many tiny values is refused before it is
parsed, in bounded memory."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from icount import results
from icount.errors import ResultsFileError
from icount.stats import spread_reason, summarize

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "fixtures" / "compare" / "loop-base.json"
SERVE = ROOT / "fixtures" / "results" / "v1" / "serve.json"
STORED = ("median", "min", "max", "spread", "valid", "reason")


def _bare(doc: dict[str, Any]) -> dict[str, Any]:
    """The document without its stored statistics, so odd runs get past that check."""
    for c in doc["cells"]:
        for k in STORED:
            c.pop(k, None)
    return doc


def _refusal(tmp_path: Path, doc: Any) -> str:
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsFileError) as info:
        results.load(path)
    text = str(info.value)
    assert text.startswith(f"{path}: malformed results file: ") and "\n" not in text
    return text.removeprefix(f"{path}: malformed results file: ")


def test_a_valid_run_without_a_value_is_refused(tmp_path: Path) -> None:
    doc = _bare(json.loads(BASE.read_text()))
    doc["cells"][0]["runs"][1]["value"] = None
    text = _refusal(tmp_path, doc)
    assert text == "cell loop/callgrind: run 2: valid, but it has no value (null)"


def test_the_cell_a_refusal_names_has_its_controls_escaped(tmp_path: Path) -> None:
    """A name from the file went into the message as it was: a newline in it made a
    second line that read as icount's own."""
    doc = _bare(json.loads(BASE.read_text()))
    doc["cells"][0]["name"] = "x\nicount: forged"
    doc["cells"][0]["runs"][1]["value"] = None
    text = _refusal(tmp_path, doc)
    assert text == "cell x\\nicount: forged/callgrind: run 2: valid, but it has no value (null)"


def test_a_cell_named_twice_is_named_escaped(tmp_path: Path) -> None:
    doc = json.loads(BASE.read_text())
    doc["cells"][0]["name"] = "x\nicount: forged"
    doc["cells"].append(doc["cells"][0])
    path = tmp_path / "twice.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsFileError) as info:
        results.load(path)
    assert str(info.value) == f"{path}: cell x\\nicount: forged/callgrind appears twice"


@pytest.mark.parametrize("values", [[-100.0] * 3, [-5, 5, 5], [5, 5, -0.5]])
def test_negative_counts_are_refused(tmp_path: Path, values: list[float]) -> None:
    doc = _bare(json.loads(BASE.read_text()))
    for run, v in zip(doc["cells"][0]["runs"], values, strict=True):
        run["value"] = v
    first = next(i for i, v in enumerate(values) if v < 0)
    assert _refusal(tmp_path, doc).startswith(f"cell loop/callgrind: run {first + 1}: value -")


@pytest.mark.parametrize(
    ("field", "where"),
    [("instructions", "rep.instructions"), ("requests", "rep.requests")],
)
def test_negative_rep_figures_of_a_serve_cell_are_refused(
    tmp_path: Path, field: str, where: str
) -> None:
    doc = _bare(json.loads(SERVE.read_text()))
    cell = doc["cells"][0]
    cell["runs"][0]["detail"]["reps"][0][field] = -3
    text = _refusal(tmp_path, doc)
    name = "/".join(p for p in (cell["name"], cell["path"], cell["backend"]) if p)
    assert text.startswith(f"cell {name}: run 1: ") and where in text


@pytest.mark.parametrize(
    "explained",
    [5, "x", [], {}, {"spread": 0.1, "low": 3, "high": {}, "functions": []},
     {"spread": 0.1, "low": {"window": "a", "per_request": 1.0},
      "high": {"window": "b", "per_request": "1"}, "functions": []},
     {"spread": 0.1, "low": {"window": "a", "per_request": 1.0},
      "high": {"window": "b", "per_request": 2.0}, "functions": [["f"]]},
     {"spread": -1, "low": {"window": "a", "per_request": 1.0},
      "high": {"window": "b", "per_request": 2.0}, "functions": []}],
)  # fmt: skip
def test_spread_explained_is_checked(tmp_path: Path, explained: Any) -> None:
    doc = _bare(json.loads(BASE.read_text()))
    doc["cells"][0]["extra"]["spread_explained"] = explained
    text = _refusal(tmp_path, doc)
    assert text.startswith("cell loop/callgrind: ") and "spread_explained" in text


def test_a_well_formed_spread_explained_loads_and_is_noted(tmp_path: Path) -> None:
    from icount import results_table

    doc = _bare(json.loads(BASE.read_text()))
    doc["cells"][0]["extra"]["spread_explained"] = {
        "spread": 0.02,
        "low": {"window": "run 1 rep 2", "per_request": 100.0},
        "high": {"window": "run 2 rep 1", "per_request": 102.0},
        "functions": [["malloc", 1.5]],
        "explained": 0.75,
    }
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(doc))
    (note,) = results_table.explaining_notes(results.load(path).cells)
    assert note.startswith("loop/callgrind: windows differ by 2.00% (run 2 rep 1")


def test_runs_differing_around_a_median_of_zero_say_so_in_every_format() -> None:
    s = summarize([0.0, 0.0, 5.0])
    assert spread_reason(s, 0.01) == (
        "runs range 0-5 around a median of 0 over 3 runs: no spread can be taken"
    )
    assert summarize([0.0, 0.0]).spread == 0


def _table_under_limit(path: Path, limit: int) -> subprocess.CompletedProcess[str]:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "icount", "table", str(path)],
        preexec_fn=cap,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


GIB = 1 << 30


def _padded(tmp_path: Path, lists: int) -> Path:
    doc = json.loads(BASE.read_text())
    doc["cells"][0]["params"]["pad"] = [[]] * lists
    path = tmp_path / "padded.json"
    path.write_text(json.dumps(doc, separators=(",", ":")))
    return path


def test_a_file_of_tiny_values_is_refused_before_parsing_in_bounded_memory(
    tmp_path: Path,
) -> None:
    """60 MiB of `[],` (under the byte cap) parsed would take ~1.6 GB."""
    path = _padded(tmp_path, 20_000_000)
    assert path.stat().st_size < results.MAX_RESULTS_BYTES
    done = _table_under_limit(path, GIB)
    assert done.returncode == 6, done.stderr
    assert done.stderr == (
        f"icount: error: {path}: holds more than 4,000,000 values, too many for an icount "
        "results file\n"
    )


def test_a_file_just_under_the_value_bound_loads_in_bounded_memory(tmp_path: Path) -> None:
    done = _table_under_limit(_padded(tmp_path, 1_990_000), GIB)
    assert done.returncode == 0, done.stderr
    assert "loop" in done.stdout


def test_a_file_beyond_the_byte_cap_is_refused_unread(tmp_path: Path) -> None:
    """A 249 MB file: refused from its size (a sparse file, nothing is written)."""
    path = tmp_path / "huge.json"
    with path.open("wb") as f:
        f.truncate(249_000_000)
    done = _table_under_limit(path, GIB)
    assert done.returncode == 6, done.stderr
    assert "249000000 bytes is too large for an icount results file" in done.stderr


def test_a_runtime_working_more_than_its_window_counted_is_refused(tmp_path: Path) -> None:
    """Collector, compiler and scheduler are inside a window's count: more made the
    mutator (the count less them) negative."""
    doc = json.loads((ROOT / "tests" / "compare" / "runtime" / "node-json.json").read_text())
    cell = next(c for c in doc["cells"] if c.get("profile"))
    rep = cell["runs"][0]["detail"]["reps"][0]
    rep["collector"] = rep["instructions"]
    rep["compiler"] = 1000
    text = _refusal(tmp_path, doc)
    assert text.startswith("cell node-http/json/callgrind: run 1: the runtime's own work in a rep")
