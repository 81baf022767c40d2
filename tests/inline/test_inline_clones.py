"""`icount inline` pairs a function one build lacks with the compiler's copy of it the
other build has (`LZ4_compress_fast` and `LZ4_compress_fast.constprop.0`), both ways."""

from __future__ import annotations

from icount.inline import render, report
from icount.inline.align import EdgeStats, FunctionStats, Side, align
from icount.inline.dwarf import InlineSites
from icount.tables import render_terminal


def _side(functions: dict[str, int]) -> Side:
    stats = {n: FunctionStats(v, v, 1) for n, v in functions.items()}
    return Side(sum(functions.values()), stats, {("main", n): EdgeStats(1, v) for n, v in
                                                  functions.items() if n != "main"})  # fmt: skip


A = {"main": 1000, "LZ4_compress_fast": 90000, "helper.part.0": 4000}
B = {"main": 1000, "LZ4_compress_fast.constprop.0": 88000, "helper.part.0": 4000}


def test_a_function_and_its_copy_in_the_other_build_name_each_other() -> None:
    data = report.build_report(
        align(_side(A), _side(B)), "Ir", report.BuildFacts("a"),
        report.BuildFacts("b", inlines=InlineSites()), top=0, min_share=0.0,
    )  # fmt: skip
    (only_a,) = data["only_in_a"]
    (only_b,) = data["only_in_b"]
    assert (only_a["name"], only_a["copies_in_other"]) == (
        "LZ4_compress_fast",
        ["LZ4_compress_fast.constprop.0"],
    )
    assert (only_b["name"], only_b["copies_in_other"]) == (
        "LZ4_compress_fast.constprop.0",
        ["LZ4_compress_fast"],
    )
    text = "\n".join(render_terminal(t, 200) for t in render.tables(data))
    # A's row: B's DWARF was read and holds no inlined copy, but B has the copy;
    # B's row: A's DWARF was not read
    assert "-; as LZ4_compress_fast.constprop.0" not in text
    assert "as LZ4_compress_fast.constprop.0" in text
    assert "?; as LZ4_compress_fast" in text
    assert "as NAME: B has the same function as a compiler's copy" in text
