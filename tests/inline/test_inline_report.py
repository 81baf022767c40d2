"""`icount inline` on two committed builds of fixtures/callgrind/src/inline.c.

inline-O2 inlines `mix` and `atol` into `main` and `fib` into itself;
inline-O2-noinline (-fno-inline) keeps every call. Golden files hold the three
formats; set ICOUNT_UPDATE_GOLDEN=1 to rewrite them after a deliberate change.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from icount.inline import report, session
from icount.inline.binary import read_binary
from icount.inline.dwarf import read_inline_sites

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "fixtures" / "callgrind" / "inline"
GOLDEN = Path(__file__).parent / "golden"
EXE_A = DATA / "inline-O2"
EXE_B = DATA / "inline-O2-noinline"


def fixture_report(top: int = 20) -> dict[str, Any]:
    opts = session.Options(top=top, exe_a=EXE_A, exe_b=EXE_B)
    return session.compare(
        str(DATA / "O2.callgrind"), str(DATA / "O2-noinline.callgrind"), [], opts
    )


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("ICOUNT_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


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


@pytest.mark.skipif(shutil.which("nm") is None, reason="nm (package binutils) is not installed")
def test_sizes_agree_with_nm() -> None:
    out = subprocess.run(["nm", "-S", str(EXE_B)], capture_output=True, text=True, check=True)
    nm_sizes = {
        parts[3]: int(parts[1], 16)
        for parts in (line.split() for line in out.stdout.splitlines())
        if len(parts) == 4 and parts[2] in "tT"
    }
    info = read_binary(EXE_B)
    for name in ("main", "fib", "mix"):
        assert info.sizes[name] == nm_sizes[name]


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) is not installed")
@pytest.mark.parametrize("exe", [EXE_A, EXE_B])
def test_inline_copies_agree_with_readelf(exe: Path) -> None:
    # Independent count: readelf's DIE dump, inlined_subroutine entries by origin name.
    dump = subprocess.run(
        ["readelf", "--debug-dump=info", str(exe)], capture_output=True, text=True, check=True
    ).stdout
    names = dict(
        re.findall(
            r"<1><([0-9a-f]+)>: Abbrev Number: \d+ \(DW_TAG_subprogram\)\n"
            r"(?:    <[0-9a-f]+> +DW_AT_external *: 1\n)?"
            r"    <[0-9a-f]+> +DW_AT_name *: (?:\(indirect string, offset: 0x[0-9a-f]+\): )?(\S+)",
            dump,
        )
    )
    origins = re.findall(
        r"\(DW_TAG_inlined_subroutine\)\n    <[0-9a-f]+> +DW_AT_abstract_origin: <0x([0-9a-f]+)>",
        dump,
    )
    expected: dict[str, int] = {}
    for off in origins:
        expected[names[off]] = expected.get(names[off], 0) + 1
    sites = read_inline_sites(exe, read_binary(exe).names_at)
    mine: dict[str, int] = {}
    for counter in sites.copies.values():
        for callee, n in counter.items():
            mine[callee] = mine.get(callee, 0) + n
    assert mine == expected
    if exe == EXE_A:
        assert mine["mix"] == 1 and mine["fib"] > 0


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "icount", "inline", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_cli_on_saved_profiles_matches_the_golden_table() -> None:
    done = cli(
        str(DATA / "O2.callgrind"),
        str(DATA / "O2-noinline.callgrind"),
        "--exe-a",
        str(EXE_A),
        "--exe-b",
        str(EXE_B),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (GOLDEN / "inline.txt").read_text()


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.callgrind"
    good = DATA / "O2.callgrind"
    bad.write_bytes(good.read_bytes()[:5000])
    text_file = tmp_path / "notes.txt"
    text_file.write_text("garbage\n")
    cases = [
        ((str(good), str(text_file)), 6, "notes.txt: not a callgrind profile"),
        ((str(bad), str(good)), 6, "bad.callgrind: truncated"),
        ((str(good), str(good), "--", "20"), 2, "arguments after -- apply to programs only"),
        ((str(good), str(good), "--format", "csv"), 2, "unknown format"),
        ((str(good), str(good), "--event", "Dr"), 2, "has no event Dr"),
        ((str(tmp_path / "nope"), str(good)), 4, "command not found"),
    ]
    for args, code, text in cases:
        done = cli(*args)
        assert done.returncode == code, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and text in lines[0], (args, done.stderr)
        assert "Traceback" not in done.stderr


def test_missing_binary_is_a_note_not_a_failure() -> None:
    # The profiles' cmd: lines name a relative path, so no binary is known.
    data = session.compare(
        str(DATA / "O2.callgrind"), str(DATA / "O2-noinline.callgrind"), [], session.Options()
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
    text = report.render_text(data, "table")
    assert "fib -> fib" in text
    assert re.search(r"^mix .* - +\?$", text, re.MULTILINE)  # size "-", DWARF "?"


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


def test_match_key_meets_dwarf_names() -> None:
    from icount.inline.dwarf import match_key

    assert match_key("calc::mix(long)") == "calc::mix"
    assert match_key("calc::Acc<long>::add(long) const") == "calc::Acc<long>::add"
    assert match_key("Foo::operator()(int) &&") == "Foo::operator()"
    assert match_key("(below main)") == "(below main)"
    assert match_key("fib") == "fib"
