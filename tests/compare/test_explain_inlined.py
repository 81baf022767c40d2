"""`icount compare` says what became of a function that one build's profile lacks: inlined
into its caller, with the copies DWARF shows (counted again here with readelf, an
independent reader), or absent from the binary (icount/compare/inlined.py). Two builds
of one C program (gcc -g -O2): `cost` is always_inline in A and noinline in B, and only
B has `extra_work`. Where the binary measured cannot be trusted to be the one read
(rebuilt since, gone, no build-id recorded) nothing is said, and the comparison still
gives its verdict."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from icount import build_label, results
from icount.compare import explain, inlined, model, render
from icount.compare.thresholds import Thresholds
from icount.results import UNIT_INSTRUCTIONS, UNIT_PER_REQUEST, Cell, Results, Run
from icount.results.cell_profile import PER_RUN, cell_profile
from icount.window_profile import FunctionCost, WindowProfile
from tests.conftest import Icount
from tests.support.cli import run_icount_here

T = Thresholds(0.01, (), 10)
K = 1000  # cost(n) loops n times; handle calls cost(K) and cost(K + 7)
SOURCE = r"""
#ifdef INLINE
#define COST static inline __attribute__((always_inline))
#else
#define COST static __attribute__((noinline))
__attribute__((noinline)) void extra_work(void) { for (long i = 500; i; i--) __asm__ volatile(""); }
#endif
COST long cost(long n) {
    long s = 0;
    for (long i = n; i; i--) { s += i; __asm__ volatile("" : "+r"(s)); }
    return s;
}
__attribute__((noinline)) long handle(long n) { return cost(n) + cost(n + 7); }
int main(int argc, char **argv) {
    (void)argv;
#ifndef INLINE
    extra_work();
#endif
    return (int)(handle(KK * argc) & 1);
}
"""


def _gcc(out: Path, *flags: str) -> Path:
    if shutil.which("gcc") is None or shutil.which("readelf") is None:
        pytest.skip("gcc and readelf are not installed (scripts/setup.sh installs them)")
    src = out.with_suffix(".c")
    src.write_text(SOURCE)
    subprocess.run(["gcc", "-g", "-O2", *flags, "-o", str(out), str(src)], check=True)
    return out


def _builds(tmp: Path) -> tuple[Path, Path]:
    return _gcc(tmp / "a", "-DINLINE", f"-DKK={K}"), _gcc(tmp / "b", f"-DKK={3 * K}")


def readelf_inlined(exe: Path, callee: str) -> Counter[str]:
    """Holder -> DW_TAG_inlined_subroutine entries whose abstract origin is `callee`, as
    readelf prints the DIEs: each with its depth, offset, tag and attributes."""
    text = subprocess.run(["readelf", "--debug-dump=info", "--wide", str(exe)],
                          capture_output=True, text=True, check=True).stdout  # fmt: skip
    dies: list[tuple[int, int, str, dict[str, str]]] = []
    for line in text.splitlines():
        if m := re.match(r"\s*<(\d+)><([0-9a-f]+)>: Abbrev Number: \d+ \((\w+)\)", line):
            dies.append((int(m[1]), int(m[2], 16), m[3], {}))
        elif (m := re.match(r"\s*<[0-9a-f]+>\s+(DW_AT_\w+)\s*:\s*(.*)$", line)) and dies:
            dies[-1][3][m[1]] = m[2].strip()
    by_offset = {off: attrs for _, off, _, attrs in dies}

    def name(attrs: dict[str, str]) -> str:
        if "DW_AT_name" in attrs:  # "(strp) (offset: 0x63): main", "(string) int"
            return re.sub(r"^\(\w+\) (\(offset: \w+\): )?", "", attrs["DW_AT_name"])
        origin = re.search(r"<0x([0-9a-f]+)>", attrs.get("DW_AT_abstract_origin", ""))
        return name(by_offset.get(int(origin[1], 16), {})) if origin else ""

    out: Counter[str] = Counter()
    holder: dict[int, str] = {}  # depth -> the concrete function open at that depth
    for depth, _, tag, attrs in dies:
        if tag == "DW_TAG_subprogram" and "DW_AT_low_pc" in attrs:
            holder = {depth: name(attrs)}
        elif tag == "DW_TAG_inlined_subroutine" and name(attrs) == callee and holder:
            out[next(iter(holder.values()))] += 1
    return out


def _profile(costs: dict[str, float]) -> WindowProfile:
    return WindowProfile({k: FunctionCost(v, v, 1) for k, v in costs.items()}, top=10)


# self instructions per run of each build as callgrind would give them; the totals differ
BASE = {"main": 10.0, "handle": 6032.0}
NEW = {"main": 10.0, "handle": 20.0, "cost": 18031.0, "extra_work": 1003.0}


def _cell(exe: Path, costs: dict[str, float], **params: object) -> Cell:
    runs = (Run(sum(costs.values()) + 100000, True),) * 2
    return Cell("prog", "", "callgrind", UNIT_INSTRUCTIONS, runs,
                params or {"argv": [str(exe)]}, 2, 0.01,
                extra={"build": build_label.label_of(str(exe))},
                profile=cell_profile([(_profile(costs), 1)], PER_RUN))  # fmt: skip


def _compare(base: Results, new: Results, tmp: Path) -> model.Comparison:
    src_base, src_new = tmp / "base.json", tmp / "new.json"
    return inlined.annotate(model.compare(base, new, T), base, new, src_base, src_new)


def _moves(c: model.Comparison) -> dict[str, explain.Move]:
    (row,) = c.rows
    assert row.explained is not None
    return {m.name: m for m in row.explained.moves}


def test_the_inlined_function_is_said_inlined_into_its_caller_with_readelfs_count(
    tmp_path: Path,
) -> None:
    a, b = _builds(tmp_path)
    sites = readelf_inlined(a, "cost")
    assert sites == {"handle": 2}  # handle calls cost twice; B holds no inlined copy
    assert readelf_inlined(b, "cost") == {}
    c = _compare(Results({}, (_cell(a, BASE),)), Results({}, (_cell(b, NEW),)), tmp_path)
    assert c.rows[0].verdict is model.Verdict.REGRESSED
    moves = _moves(c)
    assert moves["cost"].elsewhere == explain.Elsewhere("base", (("handle", sites["handle"]),))
    assert moves["extra_work"].elsewhere == explain.Elsewhere("base", ())  # no code for it in A
    assert moves["handle"].elsewhere is None  # in both profiles
    text = "\n".join(render.build_table(c).notes)
    assert "cost - -> 18,031 (+18,031; 138.5% of the cell's change; base: inlined into " \
        "handle (2 sites))" in text  # fmt: skip
    assert "extra_work - -> 1,003 (+1,003; 7.7% of the cell's change; base: absent from " \
        "its binary)" in text  # fmt: skip
    # handle's move net of cost, which A inlined into it: 6,032 -> 20 + 18,031
    assert (
        "handle 6,032 -> 20 (-6,012, -99.7%; -46.2% of the cell's change; with cost "
        "inlined into it: 6,032 -> 18,051 (+12,019, x2.99; instead of handle's and cost's "
        "moves))" in text
    )
    assert moves["handle"].net == explain.Net(("cost",), 6032.0, 18051.0)
    md = render.render_md(c)
    assert "  - `cost` - -> 18,031 (+18,031; 138.5% of the cell's change; base: inlined into " \
        "handle (2 sites))\n" in md  # fmt: skip
    doc = render.to_json(c)["cells"][0]["explained"]["functions"]
    assert {m["function"]: m.get("other_build") for m in doc} == {
        "cost": {"side": "base", "state": "inlined", "into": [{"function": "handle", "sites": 2}]},
        "handle": None,
        "extra_work": {"side": "base", "state": "absent", "into": []},
    }
    # the other way round, the new build is the one that inlined it
    back = _compare(Results({}, (_cell(b, NEW),)), Results({}, (_cell(a, BASE),)), tmp_path)
    assert _moves(back)["cost"].elsewhere == explain.Elsewhere("new", (("handle", 2),))


def test_a_binary_rebuilt_gone_or_without_a_build_id_says_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = _builds(tmp_path)
    base, new = Results({}, (_cell(a, BASE),)), Results({}, (_cell(b, NEW),))
    with monkeypatch.context() as m:  # DWARF past the bound is not read
        m.setattr(inlined, "MAX_DEBUG_INFO", 100)
        assert _moves(_compare(base, new, tmp_path))["cost"].elsewhere is None
    assert _moves(_compare(base, new, tmp_path))["cost"].elsewhere is not None
    _gcc(a, "-DINLINE", f"-DKK={K + 1}")  # another build at the path measured
    assert inlined.build_id(a) != base.cells[0].extra["build"]["build_id"]
    rebuilt = _compare(base, new, tmp_path)
    assert _moves(rebuilt)["cost"].elsewhere is None
    assert "other_build" not in json.dumps(render.to_json(rebuilt))
    a.unlink()
    assert _moves(_compare(base, new, tmp_path))["cost"].elsewhere is None
    a = _gcc(a, "-DINLINE", f"-DKK={K}", "-Wl,--build-id=none")
    assert inlined.build_id(a) is None
    unlabelled = Results({}, (_cell(a, BASE),))
    assert "build_id" not in unlabelled.cells[0].extra["build"]
    gone = _compare(unlabelled, new, tmp_path)
    assert _moves(gone)["cost"].elsewhere is None
    assert gone.rows[0].verdict is model.Verdict.REGRESSED  # the verdict as without DWARF


def test_a_serve_cells_binary_is_found_from_its_provenance(tmp_path: Path) -> None:
    """As `icount serve` records it: the adapter among the provenance's targets, its
    binary in RESULTS.artifacts/build/NAME."""
    a, b = _builds(tmp_path)
    adapter = tmp_path / "prog" / "adapter.toml"
    adapter.parent.mkdir()
    adapter.write_text('start = ["{build}/srv", "--port", "{port}"]\nbinary = "{build}/srv"\n'
                       '[[paths]]\nname = "json"\ntarget = "/json"\n')  # fmt: skip
    sides = []
    for side, exe, costs in (("base", a, BASE), ("new", b, NEW)):
        built = tmp_path / f"{side}.artifacts" / "build" / "prog" / "srv"
        built.parent.mkdir(parents=True)
        shutil.copy(exe, built)
        cell = _cell(built, costs, target="/json")
        cell = Cell(cell.name, "json", cell.backend, UNIT_PER_REQUEST, cell.runs, cell.params,
                    2, 0.01, extra=cell.extra, profile=cell.profile)  # fmt: skip
        res = Results({}, (cell,))
        (tmp_path / f"{side}.json").write_text(results.results_json(res))
        plan = {"plan": {"targets": [str(adapter)]}}
        (tmp_path / f"{side}.provenance.json").write_text(json.dumps(plan))
        sides.append(res)
    moves = _moves(_compare(sides[0], sides[1], tmp_path))
    assert moves["cost"].elsewhere == explain.Elsewhere("base", (("handle", 2),))
    # through the CLI, and into the report of the saved comparison
    done = run_icount_here(["compare", str(tmp_path / "base.json"), str(tmp_path / "new.json"),
                            "-f", "json", "-o", str(tmp_path / "cmp.json")])  # fmt: skip
    assert done.returncode == 3, done.stderr
    page = tmp_path / "cmp.html"
    done = run_icount_here(["report", str(tmp_path / "cmp.json"), "-o", str(page), "-q"])
    assert done.returncode == 0, done.stderr
    said = "<code>cost</code> - -&gt; 18,031 (+18,031; 138.5% of the cell&#x27;s change; base: " \
        "inlined into handle (2 sites))"  # fmt: skip
    assert said in page.read_text()
    args = ["--compare", str(tmp_path / "base.json"), str(tmp_path / "new.json")]
    done = run_icount_here(["report", *args, "-o", str(page), "-q"])
    assert done.returncode == 0, done.stderr
    assert said in page.read_text()  # the report of the results files says it too
    (tmp_path / "base.provenance.json").unlink()  # the targets no longer recorded
    assert _moves(_compare(sides[0], sides[1], tmp_path))["cost"].elsewhere is None


@pytest.mark.slow
def test_measured_builds_name_the_inlined_function_and_its_sites(
    need_valgrind: None, icount: Icount, tmp_path: Path
) -> None:
    a, b = _builds(tmp_path)
    sites = readelf_inlined(a, "cost")
    for exe, out in ((a, "a.json"), (b, "b.json")):
        done = icount("run", "--runs", "2", "--name", "prog", "-o", str(tmp_path / out), "-q",
                      "--", str(exe))  # fmt: skip
        assert done.returncode == 0, done.stderr
    args = [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    done = icount("compare", *args, "-f", "json")
    assert done.returncode == 3, done.stderr
    (row,) = json.loads(done.stdout)["cells"]
    moves = {m["function"]: m for m in row["explained"]["functions"]}
    # cost's own instructions: at least the two loops' 2K + 7 iterations of two instructions
    assert moves["cost"]["base"] is None and moves["cost"]["new"] >= 2 * (2 * 3 * K + 7)
    assert moves["cost"]["other_build"] == {
        "side": "base",
        "state": "inlined",
        "into": [{"function": "handle", "sites": sites["handle"]}],
    }
    assert moves["extra_work"]["other_build"]["state"] == "absent"
    # the dynamic loader's and libc's functions are in neither binary: nothing said of them
    assert all("other_build" not in m for n, m in moves.items() if n not in ("cost", "extra_work"))
    text = " ".join(icount("compare", *args).stdout.split())  # the notes wrap at the width
    assert f"base: inlined into handle ({sites['handle']} sites)" in text
