"""The `icount inline` report and its renderers, on the committed builds (see common.py).

Golden files hold the three formats; set ICOUNT_UPDATE_GOLDEN=1 to rewrite them after a
deliberate change.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from icount.inline import report

from .common import DATA, check_golden, fixture_report


@pytest.mark.parametrize("fmt", ["table", "md", "json"])
def test_golden(fmt: str) -> None:
    data = fixture_report()
    text = report.render_json(data) if fmt == "json" else report.render_text(data, fmt, 120)
    check_golden(f"inline.{'txt' if fmt == 'table' else fmt}", text)
    # Same inputs, same bytes.
    again = fixture_report()
    assert (report.render_json(again) if fmt == "json" else report.render_text(again, fmt)) == text


def test_report_names_the_inlined_helper_its_calls_and_sites() -> None:
    data = fixture_report(top=0)
    assert data["format"] == "icount-inline" and data["version"] == 1
    only_b = {r["name"]: r for r in data["only_in_b"]}
    # main calls mix 1000 times (the loop in inline.c) in B; A inlined it.
    assert only_b["mix"]["calls"] == 1000
    assert only_b["mix"]["inlined_into_other"] == {"main": 1}
    edges = {(e["caller"], e["callee"]): e for e in data["call_changes"]}
    assert (edges[("main", "mix")]["calls_a"], edges[("main", "mix")]["calls_b"]) == (0, 1000)
    # fib -> fib calls, counted independently by callgrind_annotate's call tree (gcc
    # turns one of the two recursive calls into a loop even with -fno-inline).
    fib = edges[("fib", "fib")]
    if shutil.which("callgrind_annotate"):
        recursion = {"fib", "fib'2"}
        assert fib["calls_a"] == annotate_calls(DATA / "O2.callgrind", recursion)
        assert fib["calls_b"] == annotate_calls(DATA / "O2-noinline.callgrind", recursion)
    assert 0 < fib["calls_a"] < fib["calls_b"]
    sites = {(r["function"], r["callee"]): r for r in data["inline_sites"]}
    assert sites[("main", "mix")]["copies_a"] == 1 and sites[("main", "mix")]["copies_b"] == 0
    assert sites[("main", "mix")]["lines_a"] == ["inline.c:14"]
    assert sites[("fib", "fib")]["copies_a"] > 0 and sites[("fib", "fib")]["copies_b"] == 0
    # Self-cost deltas add up to the change of the total.
    assert sum(f["self_delta"] for f in data["functions"]) == data["total_delta"]


def annotate_calls(path: Path, names: set[str]) -> int:
    """Calls among `names` from callgrind_annotate --tree=caller ('< caller (Nx)' lines)."""
    out = subprocess.run(
        ["callgrind_annotate", "--tree=caller", "--threshold=100", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    line_re = re.compile(
        r"^\s*[\d,]+ \(\s*[\d.]+%\)\s+([<*>])\s+[^:]+:(.+?)(?: \(([\d,]+)x\))?(?: \[.*\])?$"
    )
    total = 0
    callers: list[tuple[str, int]] = []
    for line in out:
        m = line_re.match(line)
        if m is None:
            callers = []
        elif m.group(1) == "<" and m.group(3):
            callers.append((m.group(2), int(m.group(3).replace(",", ""))))
        elif m.group(1) == "*":
            if m.group(2) in names:
                total += sum(n for c, n in callers if c in names)
            callers = []
    return total


def test_json_is_sorted_and_round_trips() -> None:
    text = report.render_json(fixture_report())
    data = json.loads(text)
    assert json.dumps(data, sort_keys=True, indent=2) + "\n" == text


def test_inline_rows_list_every_callee_and_the_table_only_the_differences() -> None:
    from icount.callgrind.parser import parse_bytes
    from icount.inline.align import align, side_of
    from icount.inline.dwarf import InlineSites

    a_prof = b"events: Ir\nfn=main\n1 10\ncfn=helper\ncalls=5 1\n1 50\nfn=helper\n1 50\n"
    b_prof = b"events: Ir\nfn=main\n1 60\n"
    sites_a, sites_b = InlineSites(), InlineSites()
    for sites, callees in ((sites_a, ["memcpy"] * 2), (sites_b, ["memcpy"] * 2 + ["helper"] * 5)):
        for callee in callees:
            sites.add("main", callee, "x.c:3")
    data = report.build_report(
        align(side_of([parse_bytes(a_prof, "a")], "Ir"), side_of([parse_bytes(b_prof, "b")], "Ir")),
        "Ir",
        report.BuildFacts("a", inlines=sites_a),
        report.BuildFacts("b", inlines=sites_b),
        top=20,
    )
    rows = [
        (r["function"], r["callee"], r["copies_a"], r["copies_b"], r["same"])
        for r in data["inline_sites"]
    ]
    assert rows == [("main", "helper", 0, 5, False), ("main", "memcpy", 2, 2, True)]
    assert data["only_in_a"][0]["inlined_into_other"] == {"main": 5}
    text = report.render_text(data, "table")
    assert "in A, main holds no inlined copy of helper; in B, 5 inlined copies (x.c:3)" in text
    assert "1 inlined callees with as many copies in both builds (see JSON)" in text
    assert "memcpy" not in text
