"""The callgrind parser against real valgrind 3.19 files and callgrind_annotate."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from icount.callgrind.parser import parse_bytes, parse_file
from icount.errors import ParseError

from .annotate import annotate, have_annotate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "callgrind"
ALL_FILES = sorted(p.name for p in FIXTURES.glob("*.out*"))
# callgrind_annotate reads one part only: in later parts it takes the cost line of a
# `calls=0` (a call still running from an earlier part) for self cost. The
# multi-part file is checked against callgrind's own totals: lines instead.
ANNOTATE_FILES = [n for n in ALL_FILES if n != "fib-parts.out"]

needs_annotate = pytest.mark.skipif(
    not have_annotate(), reason="callgrind_annotate (package valgrind) is not installed"
)


def self_by_name(path: Path, event: str) -> dict[str, int]:
    prof = parse_file(path)
    col = prof.event_index(event)
    out: dict[str, int] = {}
    for fn, cost in zip(prof.functions, prof.self_cost[:, col].tolist(), strict=True):
        if cost:
            out[fn.name] = out.get(fn.name, 0) + cost
    return out


def test_fixture_set_is_complete() -> None:
    # The cross-checks below are only as good as the variety of files they see.
    assert {
        "fib.out",
        "fib-instr.out",
        "fib-instr-plain.out",
        "fib-cache.out",
        "fib-plain.out",
        "fib-parts.out",
        "threads.out",
        "threads-sep.out-01",
        "threads-sep.out-02",
        "threads-sep.out-03",
    } <= set(ALL_FILES)


@needs_annotate
@pytest.mark.parametrize("name", ANNOTATE_FILES)
def test_totals_equal_callgrind_annotate(name: str) -> None:
    path = FIXTURES / name
    prof = parse_file(path)
    ref = annotate(path)
    # callgrind_annotate shows summary: as PROGRAM TOTALS (it reads one part only,
    # so multi-part files are compared part by part in their own test).
    if len(prof.parts) == 1:
        assert prof.summary is not None
        assert [prof.summary[e] for e in prof.events] == ref.program_totals
    # Its per-function self costs, summed, are the sum of all cost lines.
    for event in prof.events:
        ref_ev = annotate(path, event) if len(prof.events) > 1 else ref
        assert sum(ref_ev.self_by_name.values()) == prof.totals[event]


@needs_annotate
@pytest.mark.parametrize("name", ANNOTATE_FILES)
def test_top_function_self_costs_equal_callgrind_annotate(name: str) -> None:
    path = FIXTURES / name
    prof = parse_file(path)
    for event in prof.events[:3]:
        ref = {n: c for n, c in annotate(path, event).self_by_name.items() if c}
        mine = self_by_name(path, event)
        top = sorted(ref, key=lambda n: (-ref[n], n))[:15]
        assert {n: mine.get(n, 0) for n in top} == {n: ref[n] for n in top}
        assert mine == ref  # and every other function as well


def test_totals_equal_sum_of_self_costs_and_declared_totals() -> None:
    prof = parse_file(FIXTURES / "fib-cache.out")
    assert prof.events == ["Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw"]
    assert prof.self_cost.sum(axis=0).tolist() == [prof.totals[e] for e in prof.events]
    assert all(p.declared for p in prof.parts)
    # The cache simulator's summary: is larger than the cost lines it wrote.
    assert prof.summary is not None and prof.summary["Ir"] >= prof.totals["Ir"]


def test_header_facts() -> None:
    prof = parse_file(FIXTURES / "fib.out")
    assert prof.command is not None and prof.command.endswith("fib 15")
    assert isinstance(prof.pid, int) and prof.pid > 0
    assert prof.creator == "callgrind-3.19.0"
    assert prof.positions == ["line"]
    instr = parse_file(FIXTURES / "fib-instr.out")
    assert instr.positions == ["instr", "line"]


def test_recursion_call_counts_of_fib15() -> None:
    # fib(15) makes 1973 calls to fib; callgrind splits them into fib (from main)
    # and fib'2 (the recursion level) by its default --separate-recs=2.
    prof = parse_file(FIXTURES / "fib.out")
    names = [f.name for f in prof.functions]
    calls = {
        (names[a], names[b]): n
        for a, b, n in zip(prof.call_caller, prof.call_callee, prof.call_count, strict=True)
        if names[b].startswith("fib")
    }
    assert calls == {("main", "fib"): 1, ("fib", "fib'2"): 2, ("fib'2", "fib'2"): 1970}
    assert sum(calls.values()) == 1973


def test_per_thread_files_add_up_to_the_single_file_run() -> None:
    # Same program, two runs: one file for all threads vs one file per thread.
    # The workers' spin() loops are deterministic, so their counts match exactly.
    whole = self_by_name(FIXTURES / "threads.out", "Ir")
    per_thread = [parse_file(FIXTURES / f"threads-sep.out-0{k}") for k in (1, 2, 3)]
    assert [p.parts[0].thread for p in per_thread] == [1, 2, 3]
    spins = [
        self_by_name(FIXTURES / f"threads-sep.out-0{k}", "Ir").get("spin", 0) for k in (1, 2, 3)
    ]
    assert spins[0] == 0 and spins[1] > 0 and spins[2] > spins[1]
    assert sum(spins) == whole["spin"]


@needs_annotate
def test_parts_of_a_combined_file() -> None:
    path = FIXTURES / "fib-parts.out"
    prof = parse_file(path)
    assert [p.number for p in prof.parts] == [1, 2]
    assert prof.totals["Ir"] == sum(p.totals["Ir"] for p in prof.parts)
    # Each part's cost lines were checked against its own totals: line.
    assert all(p.declared for p in prof.parts)
    assert (
        prof.totals["Ir"] == prof.self_cost[:, 0].sum() == sum(p.totals["Ir"] for p in prof.parts)
    )
    # callgrind_annotate shows the last part's summary: as PROGRAM TOTALS, and its
    # self costs exceed the cost lines by exactly the calls=0 costs it misreads.
    ref = annotate(path)
    assert ref.program_totals == [prof.parts[-1].totals["Ir"]]
    text = path.read_text().splitlines()
    zero_calls = sum(
        int(text[i + 1].split()[1]) for i, line in enumerate(text) if line.startswith("calls=0 ")
    )
    assert zero_calls > 0
    assert sum(ref.self_by_name.values()) == prof.totals["Ir"] + zero_calls


def test_compressed_and_plain_files_agree() -> None:
    # fib-plain.out (no compression) runs fib(10) under the same options as the
    # compressed fib-parts.out's two parts put together.
    plain = parse_file(FIXTURES / "fib-plain.out")
    parts = parse_file(FIXTURES / "fib-parts.out")
    assert plain.totals == parts.totals
    assert self_by_name(FIXTURES / "fib-plain.out", "Ir") == self_by_name(
        FIXTURES / "fib-parts.out", "Ir"
    )


def test_inclusive_cost_of_main_and_roots() -> None:
    prof = parse_file(FIXTURES / "fib.out")
    incl = prof.inclusive_cost()[:, 0]
    names = [f.name for f in prof.functions]
    main = names.index("main")
    fib = names.index("fib")
    # main's inclusive cost is its self cost plus its call costs, one of which is fib.
    calls_from_main = prof.call_cost[prof.call_caller == main, 0].sum()
    assert incl[main] == prof.self_cost[main, 0] + calls_from_main
    fib_edge = np.flatnonzero((prof.call_caller == main) & (prof.call_callee == fib))
    assert incl[fib] == prof.call_cost[fib_edge, 0].sum()
    assert incl.max() <= prof.totals["Ir"]


def test_hand_written_example_from_the_format_manual() -> None:
    # The "Extended Example" of valgrind's cl-format.html, with name compression.
    text = b"""# callgrind format
events: Instructions

fl=(1) file1.c
fn=(1) main
16 20
cfn=(2) func1
calls=1 50
16 400
cfi=(2) file2.c
cfn=(3) func2
calls=3 20
16 400

fn=(2)
51 100
cfi=(2)
cfn=(3)
calls=2 20
51 300

fl=(2)
fn=(3)
20 700
"""
    prof = parse_bytes(text, "example")
    names = [f.name for f in prof.functions]
    assert prof.totals == {"Instructions": 820}
    assert not prof.parts[0].declared
    incl = dict(zip(names, prof.inclusive_cost()[:, 0].tolist(), strict=True))
    assert incl == {"main": 820, "func1": 400, "func2": 700}
    files = {f.name: f.file for f in prof.functions}
    assert files == {"main": "file1.c", "func1": "file1.c", "func2": "file2.c"}
    counts = {
        (names[a], names[b]): n
        for a, b, n in zip(prof.call_caller, prof.call_callee, prof.call_count, strict=True)
    }
    assert counts == {("main", "func1"): 1, ("main", "func2"): 3, ("func1", "func2"): 2}


def test_subposition_compression_example_and_missing_costs() -> None:
    text = b"""# callgrind format
positions: instr line
events: ticks other
fn=func
0x80001234 90 1
+3 * 5
+1 +1 6 2
-4 -1
"""
    prof = parse_bytes(text, "example")
    assert prof.totals == {"ticks": 12, "other": 2}


@pytest.mark.parametrize("name", ALL_FILES)
def test_bulk_path_and_line_loop_agree(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    loop = parse_bytes(data, name, method="lines")
    compressed = re.search(rb"^fn=\(\d+\)", data, re.MULTILINE) is not None
    if not compressed:
        # Plain names are for the line loop; "auto" falls back to it.
        with pytest.raises(ParseError, match="bulk parser declined"):
            parse_bytes(data, name, method="bulk")
    fast = parse_bytes(data, name, method="bulk" if compressed else "auto")
    assert fast.functions == loop.functions
    assert fast.self_cost.tolist() == loop.self_cost.tolist()
    for attr in ("call_caller", "call_callee", "call_count", "call_cost"):
        assert getattr(fast, attr).tolist() == getattr(loop, attr).tolist()
    assert (fast.parts, fast.totals, fast.summary) == (loop.parts, loop.totals, loop.summary)


def test_instruction_positions_decode_like_the_uncompressed_file() -> None:
    # Two runs of one binary with the same options, one with --compress-pos=no
    # --compress-strings=no: every (function, address, line) must get the same cost.
    def per_position(name: str) -> Counter[tuple[str, bool, tuple[int, ...]]]:
        prof = parse_file(FIXTURES / name, keep_lines=True)
        assert prof.lines is not None and prof.positions == ["instr", "line"]
        lines = prof.lines
        out: Counter[tuple[str, bool, tuple[int, ...]]] = Counter()
        for fn, edge, pos, cost in zip(
            lines.function.tolist(),
            lines.edge.tolist(),
            lines.positions.tolist(),
            lines.costs[:, 0].tolist(),
            strict=True,
        ):
            out[(prof.functions[fn].name, edge >= 0, tuple(pos))] += cost
        return out

    compressed = per_position("fib-instr.out")
    plain = per_position("fib-instr-plain.out")
    assert compressed == plain
    # Addresses are real: main's instructions lie in one small range of the binary.
    main = sorted(pos[0] for (name, _, pos) in compressed if name == "main")
    assert 0 < main[-1] - main[0] < 4096
