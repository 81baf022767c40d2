"""`icount inline` from source to report: two builds compiled here, run under callgrind."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "fixtures" / "callgrind" / "src" / "inline.c"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed"),
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed"),
]


def build(out: Path, *flags: str, source: Path = SOURCE, compiler: str = "gcc") -> Path:
    subprocess.run([compiler, "-O2", "-g", *flags, "-o", str(out), str(source)], check=True)
    return out


def icount_inline(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "icount", "inline", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def test_inline_report_of_two_fresh_builds(tmp_path: Path) -> None:
    a = build(tmp_path / "inlined")
    b = build(tmp_path / "noinline", "-fno-inline")
    keep = tmp_path / "profiles"
    done = icount_inline(
        str(a),
        str(b),
        "--format",
        "json",
        "--keep-profiles",
        "profiles",  # relative to cwd: the builds run elsewhere, the folder must not move
        "--top",
        "0",
        "--min-share",
        "0",
        "--",
        "15",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["builds"]["a"]["label"] == "inlined" and data["builds"]["b"]["label"] == "noinline"
    # The helper gcc inlined in A appears only in B's profile, called 1000 times by
    # main there (the loop in inline.c) and 0 times in A...
    only_b = {r["name"]: r for r in data["only_in_b"]}
    assert only_b["mix"]["calls"] == 1000
    edges = {(e["caller"], e["callee"]): e for e in data["call_changes"]}
    assert (edges[("main", "mix")]["calls_a"], edges[("main", "mix")]["calls_b"]) == (0, 1000)
    # ...and A's DWARF shows where it went: one inlined copy in main.
    assert only_b["mix"]["inlined_into_other"] == {"main": 1}
    sites = {(r["function"], r["callee"]): r for r in data["inline_sites"]}
    assert (sites[("main", "mix")]["copies_a"], sites[("main", "mix")]["copies_b"]) == (1, 0)
    # Recursive inlining of fib into itself in A: fewer fib -> fib calls than B.
    assert sites[("fib", "fib")]["copies_a"] > 0
    assert edges[("fib", "fib")]["calls_a"] < edges[("fib", "fib")]["calls_b"]
    # The totals are those of the kept profiles, and the self deltas add up to them.
    from icount.callgrind.parser import parse_file

    total_a = parse_file(keep / "a.callgrind").totals["Ir"]
    total_b = parse_file(keep / "b.callgrind").totals["Ir"]
    assert (data["builds"]["a"]["total"], data["builds"]["b"]["total"]) == (total_a, total_b)
    assert sum(f["self_delta"] for f in data["functions"]) == total_b - total_a
    # Sizes come from each build's own symbol table.
    fns = {f["name"]: f for f in data["functions"]}
    assert fns["mix"]["size_a"] is None and fns["mix"]["size_b"] > 0


def test_a_failing_workload_is_one_line(tmp_path: Path) -> None:
    script = tmp_path / "fails"
    script.write_text("#!/bin/sh\nexit 3\n")
    script.chmod(0o755)
    good = build(tmp_path / "good")
    done = icount_inline(str(good), str(script), cwd=tmp_path)
    assert done.returncode == 5, done.stderr
    lines = [x for x in done.stderr.splitlines() if x.startswith("icount: error")]
    assert len(lines) == 1 and "fails" in lines[0], done.stderr


def test_scripts_get_a_note_instead_of_sizes(tmp_path: Path) -> None:
    for name, word in (("one", "hi"), ("two", "hello")):
        script = tmp_path / name
        script.write_text(f"#!/bin/sh\necho {word}\n")
        script.chmod(0o755)
    done = icount_inline("./one", "./two", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    for side in ("a", "b"):
        build = data["builds"][side]
        assert build["symbols"] is False
        assert any("not an ELF or Mach-O file" in n for n in build["notes"])


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_cpp_names_meet_their_dwarf(tmp_path: Path) -> None:
    # callgrind says calc::mix(long); DWARF knows the static helper as calc::mix.
    source = SOURCE.with_name("inline.cpp")
    a = build(tmp_path / "a", source=source, compiler="g++")
    b = build(tmp_path / "b", "-fno-inline", source=source, compiler="g++")
    done = icount_inline(str(a), str(b), "--format", "json", "--", "1000", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    only_b = {r["name"]: r for r in data["only_in_b"]}
    assert only_b["calc::mix(long)"]["calls"] == 1000
    assert only_b["calc::mix(long)"]["inlined_into_other"] == {"calc::run(long)": 1, "main": 1}
    assert only_b["calc::Acc<long>::add(long)"]["calls"] == 1000
    assert only_b["calc::run(long)"]["inlined_into_other"] == {"main": 1}
