"""Which cells of two `icount size -o` files compare gates (icount/compare/size_gate.py)."""

from __future__ import annotations

from icount.compare import model
from icount.compare import size_gate as gate
from icount.compare.thresholds import Thresholds
from icount.results import Cell, Results, Run
from icount.size import report
from icount.size.model import Breakdown, Row
from icount.tables import render_terminal


def _sizes(by: str, rows: list[tuple[str, int, int]], fmt: str = "ELF64") -> Results:
    rs = [Row(label, f, v) for label, f, v in rows]
    b = Breakdown("prog", "x86_64", fmt, "executable", sum(r.file for r in rs), rs)
    return report.to_results([b], by)


def _gated(base: Results, new: Results, *items: str) -> tuple[dict[str, str], list[str]]:
    _, c, said = gate.select(model.compare(base, new, Thresholds()), items)
    return {r.path: r.verdict.value for r in c.rows}, said


BASE = [(".text", 1000, 1000), (".debug_info", 5000, 0), ("[padding]", 100, 0)]
# .text +2%, the DWARF doubled: the VM total moves by the .text alone
NEW = [(".text", 1020, 1020), (".debug_info", 10_000, 0), ("[padding]", 100, 0)]


def test_the_vm_total_gates_by_default() -> None:
    verdicts, said = _gated(_sizes("sections", BASE), _sizes("sections", NEW))
    assert verdicts == {"total/vm": "regressed"}
    assert said[0].startswith("5 size cells do not gate")


def test_named_rows_gate_and_debug_sections_only_when_named_as_such() -> None:
    base, new = _sizes("sections", BASE), _sizes("sections", NEW)
    verdicts, _ = _gated(base, new, "*")
    assert set(verdicts) == {
        "total/vm", "total/file", "sections/.text/file", "sections/.text/vm",
        "sections/[padding]/file",
    }  # fmt: skip
    verdicts, _ = _gated(base, new, ".text", ".debug_*")
    assert verdicts["sections/.debug_info/file"] == "regressed" and "total/file" not in verdicts
    verdicts, _ = _gated(base, new, "total/file")
    assert verdicts == {"total/vm": "regressed", "total/file": "regressed"}


def test_globs_split_on_commas_and_unused_ones_are_said() -> None:
    base, new = _sizes("sections", BASE), _sizes("sections", NEW)
    verdicts, said = _gated(base, new, ".text,.rodata", "sections/[[]padding]/file")
    assert {"sections/.text/file", "sections/[padding]/file"} <= set(verdicts)
    assert said[1:] == ["--size-gate '.rodata' named no size row"]


def test_labels_with_slashes_match_whole() -> None:
    base = _sizes("packages", [("net/http", 300, 300), ("main", 10, 10)])
    new = _sizes("packages", [("net/http", 400, 400), ("main", 10, 10)])
    verdicts, _ = _gated(base, new, "net/*")
    assert verdicts == {
        "total/vm": "regressed", "packages/net/http/file": "regressed",
        "packages/net/http/vm": "regressed",
    }  # fmt: skip


def test_a_file_that_maps_nothing_gates_its_file_total() -> None:
    """Wasm: every VM figure 0."""
    base = _sizes("sections", [("CODE", 1000, 0)], fmt="WebAssembly")
    new = _sizes("sections", [("CODE", 1100, 0)], fmt="WebAssembly")
    verdicts, _ = _gated(base, new)
    assert verdicts == {"total/file": "regressed"}


def test_other_backends_cells_are_untouched() -> None:
    def counts(value: float) -> Results:
        run = (Run(value=value, valid=True),)
        cell = Cell("fib", "", "callgrind", "instructions", run, {}, 1, 0.05)
        return Results({"backend": "callgrind"}, (cell,))

    c = model.compare(counts(100), counts(200), Thresholds())
    assert gate.select(c, ()) == (c, c, [])
    assert gate.select(c, (".text",)).said == [
        "--size-gate names rows of `icount size -o` files; these hold none"
    ]


def test_rows_that_do_not_gate_are_still_shown_and_say_so() -> None:
    """The table, the PR comment and JSON show what changed (.data grew the VM total);
    only the gate leaves those rows out."""
    from icount.compare import render

    base = _sizes("sections", [(".text", 1000, 1000), (".data", 100, 100), (".bss", 0, 50)])
    new = _sizes("sections", [(".text", 1000, 1000), (".data", 4000, 4000), (".bss", 0, 50)])
    shown, gated, _ = gate.select(model.compare(base, new, Thresholds()), ())
    assert [r.path for r in gated.rows] == ["total/vm"]
    assert model.gate(gated, False) is not None  # the total regressed: exit 3
    verdicts = {r.path: (r.verdict.value, r.why) for r in shown.rows}
    assert verdicts["sections/.data/vm"] == ("unchanged", "not gated (regressed)")
    assert verdicts["sections/.text/vm"] == ("unchanged", "not gated")
    assert verdicts["total/vm"] == ("regressed", "")
    table = "\n".join(render_terminal(t) for t in render.tables(shown))
    assert "not gated (regressed)" in table and "sections/.data/vm" in table
    assert "1 regression, 6 not gated (threshold" in table
    md = render.render_md(shown)
    bullets = [line for line in md.splitlines() if line.startswith("- **")]
    assert len(bullets) == 1 and "total/vm" in bullets[0]
    assert "prog/sections/.data/vm" in md.split("<details>")[1]
    cells = {c["path"]: c for c in render.to_json(shown)["cells"]}
    assert cells["sections/.data/vm"]["delta"] == 3900
    assert cells["sections/.data/vm"]["why"] == "not gated (regressed)"


def test_a_moved_row_that_does_not_gate_fails_nothing() -> None:
    """Only .data grew past its threshold; the VM total within it: exit 0."""
    base = _sizes("sections", [(".text", 100_000, 100_000), (".data", 100, 100)])
    new = _sizes("sections", [(".text", 100_000, 100_000), (".data", 200, 200)])
    shown, gated, _ = gate.select(model.compare(base, new, Thresholds()), ())
    assert model.gate(gated, True) is None
    assert model.gate(shown, True) is None  # as shown, nothing regressed either
    assert shown.count(model.Verdict.REGRESSED) == 0
