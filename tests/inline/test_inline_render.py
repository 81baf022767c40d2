"""Rendering of the `icount inline` report: golden files of the three formats for two
pairs of builds (see common.py). ICOUNT_UPDATE_GOLDEN=1 rewrites them after a
deliberate change; review the diff.
"""

from __future__ import annotations

import json

import pytest

from icount import export
from icount.export import InlineDoc
from icount.inline import render

from .common import check_golden, fixture_report
from .test_inline_report import small_report

FORMATS = {"table": "txt", "md": "md", "json": "json"}


def rendered(data: dict[str, object], fmt: str) -> str:
    return export.render(InlineDoc(data), fmt, 120)


@pytest.mark.parametrize("pair", ["inline", "gcc-clang"])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_golden(pair: str, fmt: str) -> None:
    text = rendered(fixture_report(pair=pair), fmt)
    check_golden(f"{pair}.{FORMATS[fmt]}", text)
    # Same inputs, same bytes.
    assert rendered(fixture_report(pair=pair), fmt) == text


def test_json_is_sorted_and_round_trips() -> None:
    text = render.render_json(fixture_report())
    data = json.loads(text)
    assert json.dumps(data, sort_keys=True, indent=2) + "\n" == text


def test_the_table_lists_the_differences_and_names_what_stayed_the_same() -> None:
    text = export.render(InlineDoc(small_report()), "table")
    assert "in A, main holds no inlined copy of helper; in B, 5 inlined copies (x.c:3)" in text
    # memcpy is inlined alike in both builds: named in the note, not a row.
    assert "Same in both builds: main holds 2 inlined copies of memcpy" in text
    assert text.count("memcpy") == 1


def test_per_call_table_and_the_note_on_left_out_rows() -> None:
    data = fixture_report(pair="gcc-clang")
    text = export.render(InlineDoc(data), "table")
    fib = next(f for f in data["functions"] if f["name"] == "fib")
    rows = [x.split() for x in text.splitlines() if x.startswith("fib ")]
    # fib -> fib (calls), fib per call (calls, then self and incl per call), fib's costs.
    assert len(rows) == 3 and rows[0][:3] == ["fib", "->", "fib"]
    assert rows[1] == [
        "fib",
        "126.1k",
        "1.346M",
        "201.2",
        "19.62",
        "201.2",
        "19.62",
    ]
    assert fib["self_per_call_a"] == 201.177  # 25,359,535 Ir in 126,056 calls
    left_out = data["negligible"]["functions"]
    assert (
        f"{left_out} functions whose self and incl changed by less than 0.10% of A's total "
        "left out (--min-share 0 lists them)"
    ) in text
    assert "_dl_" not in text
    everything = export.render(
        InlineDoc(fixture_report(top=0, pair="gcc-clang", min_share=0)), "table"
    )
    assert "left out" not in everything and "_dl_map_object_deps" in everything
