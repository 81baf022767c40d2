"""The figures of the `icount inline` report, on the committed builds (see common.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from icount.callgrind.parser import parse_bytes
from icount.inline import report
from icount.inline.align import align, side_of
from icount.inline.dwarf import InlineSites

from .common import DATA, fixture_report


def test_report_names_the_inlined_helper_its_calls_and_sites() -> None:
    data = fixture_report(top=0, min_share=0.0)
    assert data["format"] == "icount-inline" and data["version"] == 3
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
    # main netted of what A inlined into it: its self with mix's and atol's in B
    main = {f["name"]: f for f in data["functions"]}["main"]
    absorbed = [r for r in data["only_in_b"] if r["inlined_into_other"] == {"main": 1}]
    assert main["net"]["absorbed"] == sorted(r["name"] for r in absorbed) == ["atol", "mix"]
    assert main["net"]["self_b"] == main["self_b"] + sum(r["self"] for r in absorbed)
    assert main["net"]["self_a"] == main["self_a"] and main["net"]["inlined_in"] == ["a"]


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


def small_report(min_share: float = 0.0) -> dict[str, Any]:
    """main calls helper 5 times in A; B inlined it (5 copies), memcpy twice in both."""
    a_prof = b"events: Ir\nfn=main\n1 10\ncfn=helper\ncalls=5 1\n1 50\nfn=helper\n1 50\n"
    b_prof = b"events: Ir\nfn=main\n1 60\n"
    sites_a, sites_b = InlineSites(), InlineSites()
    for sites, callees in ((sites_a, ["memcpy"] * 2), (sites_b, ["memcpy"] * 2 + ["helper"] * 5)):
        for callee in callees:
            sites.add("main", callee, "x.c:3")
    return report.build_report(
        align(side_of([parse_bytes(a_prof, "a")], "Ir"), side_of([parse_bytes(b_prof, "b")], "Ir")),
        "Ir",
        report.BuildFacts("a", inlines=sites_a),
        report.BuildFacts("b", inlines=sites_b),
        top=20,
        min_share=min_share,
    )


def test_inline_rows_list_every_callee() -> None:
    data = small_report()
    rows = [
        (r["function"], r["callee"], r["copies_a"], r["copies_b"], r["same"])
        for r in data["inline_sites"]
    ]
    assert rows == [("main", "helper", 0, 5, False), ("main", "memcpy", 2, 2, True)]
    assert data["only_in_a"][0]["inlined_into_other"] == {"main": 5}


def test_rows_below_the_share_are_counted_not_listed() -> None:
    everything = fixture_report(top=0, pair="gcc-clang", min_share=0.0)
    assert everything["negligible"] == {"call_changes": 0, "functions": 0}
    cut = fixture_report(top=0, pair="gcc-clang")
    assert cut["min_share"] == report.DEFAULT_MIN_SHARE
    floor = cut["min_share"] * cut["builds"]["a"]["total"]

    def change(f: dict[str, Any]) -> int:
        return max(abs(int(f["self_delta"])), abs(int(f["inclusive_delta"])))

    kept = {f["name"] for f in cut["functions"]}
    assert kept == {f["name"] for f in everything["functions"] if change(f) >= floor}
    assert cut["negligible"]["functions"] == len(everything["functions"]) - len(kept) > 0
    # What is left out is the dynamic loader's and libc's small moves; fib stays first.
    assert cut["functions"][0]["name"] == "fib"
    assert all(change(f) < floor for f in everything["functions"] if f["name"] not in kept)
    assert any(f["name"].startswith("_dl_") for f in everything["functions"])
    assert not any(name.startswith("_dl_") for name in kept)
    # The share never changes a figure, only which rows are listed.
    by_name = {f["name"]: f for f in everything["functions"]}
    assert all(f == by_name[f["name"]] for f in cut["functions"])
    assert cut["total_delta"] == everything["total_delta"]


def test_per_call_costs_explain_fewer_calls_that_save_little() -> None:
    # gcc inlines fib into itself: about a tenth of clang's calls, each doing ten
    # times the work, so the call count alone says little about the cost.
    data = fixture_report(pair="gcc-clang")
    fib = next(f for f in data["functions"] if f["name"] == "fib")
    assert fib["calls_b"] > 8 * fib["calls_a"] > 0
    for side in ("a", "b"):
        calls = fib[f"calls_{side}"]
        assert fib[f"self_per_call_{side}"] == round(fib[f"self_{side}"] / calls, 3)
        assert fib[f"inclusive_per_call_{side}"] == round(fib[f"inclusive_{side}"] / calls, 3)
    assert fib["self_per_call_a"] > 8 * fib["self_per_call_b"]
    # fib's calls: main's one call and the fib -> fib edge, which callgrind_annotate's
    # call tree counts alike.
    edges = {(e["caller"], e["callee"]): e for e in data["call_changes"]}
    for side, name in (("a", "gcc-30.callgrind"), ("b", "clang-30.callgrind")):
        recursive = edges[("fib", "fib")][f"calls_{side}"]
        assert fib[f"calls_{side}"] == recursive + 1
        if shutil.which("callgrind_annotate"):
            assert recursive == annotate_calls(DATA / name, {"fib", "fib'2"})
    # A function not called in one build has no cost per call there.
    mix = next(f for f in fixture_report()["functions"] if f["name"] == "mix")
    assert (mix["calls_a"], mix["self_per_call_a"], mix["self_per_call_b"]) == (0, None, 5.0)
