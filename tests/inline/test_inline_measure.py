"""Getting both builds' profiles and binaries (icount/inline/measure.py)."""

from __future__ import annotations

import re

from icount.inline import measure, render

from .common import DATA


def test_missing_binary_is_a_note_not_a_failure() -> None:
    # The profiles' cmd: lines name a relative path, so no binary is known.
    data = measure.compare_builds(
        str(DATA / "O2.callgrind"), str(DATA / "O2-noinline.callgrind"), [], measure.Options()
    )
    for side in ("a", "b"):
        build = data["builds"][side]
        assert (build["symbols"], build["dwarf"]) == (False, False)
        assert build["notes"] == [
            "binary unknown: no sizes or inline sites (pass --exe-" + side + ")"
        ]
    mix = next(r for r in data["only_in_b"] if r["name"] == "mix")
    assert mix["inlined_into_other"] is None and mix["size"] is None
    assert data["inline_sites"] == []
    text = render.render_text(data, "table")
    assert "fib -> fib" in text
    assert re.search(r"^mix .* - +\?$", text, re.MULTILINE)  # size "-", DWARF "?"


def test_labels_tell_the_builds_apart() -> None:
    assert measure.labels("out/fib-gcc", "out/fib-clang") == ("fib-gcc", "fib-clang")
    assert measure.labels("gcc/fib", "clang/fib") == ("gcc/fib", "clang/fib")
    # Equal labels get a prefix in the report.
    data = measure.compare_builds(
        str(DATA / "O2.callgrind"), str(DATA / "O2.callgrind"), [], measure.Options()
    )
    assert (data["builds"]["a"]["label"], data["builds"]["b"]["label"]) == (
        "A: inline/O2.callgrind",
        "B: inline/O2.callgrind",
    )
    assert data["total_delta"] == 0 and data["functions"] == []


def test_is_callgrind_file() -> None:
    assert measure.is_callgrind_file(DATA / "O2.callgrind")
    assert not measure.is_callgrind_file(DATA / "inline-O2")
    assert not measure.is_callgrind_file(DATA / "missing")
