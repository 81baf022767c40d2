"""Long and hostile-but-realistic labels for every picture icount draws: long C++
symbols, long paths, three builds of one program (O2/lzbench, O3/lzbench,
O2lto/lzbench), sections whose names share a start and an end
(`[section .debug_str (compressed)]`), several backends and collected runtimes.
Each builder returns what the report page takes (charts.Input)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from icount import charts
from icount.charts.history import HistoryInput
from icount.charts.inputs import DrawnSizes, SizeImage, SizeRow
from icount.compare import model
from icount.compare.thresholds import parse_thresholds
from icount.history.render import build
from icount.history.store import Entry
from icount.results import Cell, Results
from icount.results.cell_profile import PER_RUN, CellProfile, Edge, FunctionRow, Others
from icount.results.details import WINDOW_DUMPS, Rep, ServeDetail
from tests.compare.runtime_cells import derived, node_cell, of

from .conftest import FP, cell

BUILDS = ("build/O2/lzbench", "build/O3/lzbench", "build/O2lto/lzbench")
PATHS = (
    "-b1 -e lz4/silesia/mozilla",
    "-b1 -e lz4hc,1,9/silesia/mozilla",
    "--verify -e zstd,1,22 benchmarks/silesia/x-ray",
)
CXX = (
    "std::_Rb_tree<std::__cxx11::basic_string<char, std::char_traits<char>, "
    "std::allocator<char> >, std::pair<std::__cxx11::basic_string<char> const, int> "
    ">::_M_insert_unique(std::pair<std::__cxx11::basic_string<char> const, int>&&)",
    "llvm::SelectionDAGISel::SelectCodeCommon(llvm::SDNode*, unsigned char const*, unsigned int)",
    "v8::internal::compiler::PipelineImpl::OptimizeGraph(v8::internal::compiler::Linkage*)",
    "LZ4_compress_HC_continue_destSize_extState_fastReset_withDictionary_12345678",
    "std::vector<std::unique_ptr<llvm::MachineBasicBlock>>::_M_realloc_insert",
    "runtime.(*mheap).allocSpan",
    "main",
)
SECTIONS = (
    ".text",
    "[section .debug_str (compressed)]",
    "[section .debug_info (compressed)]",
    "[section .debug_line (compressed)]",
    ".rela.data.rel.ro.local._ZTVN3geo6SquareE",
    ".rela.data.rel.ro._ZTIN3geo6SquareE",
    ".data.rel.ro",
    ".eh_frame",
    ".gcc_except_table.llvm.1234567890",
    ".rodata.str1.1",
    ".dynstr",
    ".bss",
)


def results() -> Results:
    """Three builds of lzbench with long paths, a long C++ name, two backends (so the
    backend is in each row's label), an invalid cell, warm-up curves and a profile."""
    curve = ((1000, 9000.5), (2000, 3400.25), (3000, 3110.0))
    detail = ServeDetail(WINDOW_DUMPS, 3000, (Rep(3102000, 1000),), warmup_curve=curve)
    cells: list[Cell] = []
    for b, build_ in enumerate(BUILDS):
        binary = {
            "binary": build_,
            "binary_bytes": 1_234_567 * (b + 1),
            "binary_text_bytes": 765_432,
        }
        for p, path in enumerate(PATHS):
            base = 1_000_000_000.0 * (1 + b) + 37_000_000.0 * p
            cells.append(cell(build_, [base, base + 1234.5, base - 987.25], path, extra=binary))
    big = {"binary": "a/long/path/to/the/binary", "binary_bytes": 987_654_321}
    cells.append(
        cell(CXX[0], [98_765.0, 98_770.0], "a-path-as-long-as/the/name/before/it", extra=big)
    )
    perf = dataclasses.replace(cell(CXX[1], [4_321_987.0, 4_322_001.5]), backend="perf")
    cells.append(perf)
    cells.append(cell(CXX[2], [2_222_222.5, 2_222_333.0], failed="status 500, expected 200"))
    # a name from a file icount did not write: its escape sequence is drawn escaped, wider
    cells.append(cell("server\x1b[31m-with-an-escape\u202e-and-bidi", [5000.0, 5001.0], "json"))
    warm = cell("node-express-application-server", [3102.2, 3101.9], PATHS[2], detail=detail)
    cells.append(dataclasses.replace(warm, profile=profile(1.0)))
    return Results(FP, tuple(dataclasses.replace(c, order=i) for i, c in enumerate(cells)))


def profile(scale: float) -> CellProfile:
    rows = tuple(
        FunctionRow(n, round(scale * 100 * (10 - i), 3), round(scale * 150 * (10 - i), 3), 1.0)
        for i, n in enumerate(CXX)
    )
    edges = tuple(Edge(CXX[-1], n, 90.0 * scale * (7 - i)) for i, n in enumerate(CXX[:-1]))
    return CellProfile(PER_RUN, 3, len(rows), rows, Others(0, 0.0, 0.0), 1.0, 1.0, edges)


def runtime() -> Results:
    """A collected runtime's cells under long names (the stacked bars)."""
    c = node_cell()
    return of(
        [
            dataclasses.replace(c, name=BUILDS[0] + "/node-express", path=PATHS[0]),
            dataclasses.replace(derived(c, compiler=2e6), name=BUILDS[1] + "/node", path=PATHS[2]),
        ]
    )


def _times(c: Cell, factor: float, plus: float = 0.0) -> Cell:
    runs = tuple(
        dataclasses.replace(r, value=r.value * factor + plus) if r.value is not None else r
        for r in c.runs
    )
    return dataclasses.replace(c, runs=runs)


# each cell's change, base to new: every verdict, one change far beyond the threshold
CHANGES = (1.0, 1.05, 0.9, 1.3, 1.0, 1.001, 0.7, 1.02, 1.0, 1.5, 1.2, 1.0, 1.0, 1.1, 1.0)


def comparison() -> charts.DrawnComparison:
    base = results()
    new = Results(FP, tuple(_times(c, f) for c, f in zip(base.cells, CHANGES, strict=False)))
    limits = parse_thresholds(["1%"], 10)
    return charts.comparison_doc(model.compare(base, new, limits, []))


def _image(name: str, scale: float, shift: int = 0) -> SizeImage:
    rows = tuple(
        SizeRow(s, int(scale * (900_000 - 61_000 * i)) + shift * (i % 3), 0)
        for i, s in enumerate(SECTIONS)
    )
    total = sum(r.file_bytes for r in rows)
    return SizeImage(name, "x86_64", "ELF", "executable", total, total, rows)


def sizes() -> DrawnSizes:
    return DrawnSizes("sections", tuple(_image(b, 1 + k / 4) for k, b in enumerate(BUILDS)), False)


def symbols() -> DrawnSizes:
    rows = tuple(SizeRow(s, 40_000 // (i + 1), 0) for i, s in enumerate(CXX))
    total = sum(r.file_bytes for r in rows)
    img = SizeImage(BUILDS[2], "x86_64", "ELF", "executable", total, total, rows)
    return DrawnSizes("symbols", (img,), False)


def size_diff() -> DrawnSizes:
    return DrawnSizes("sections", (_image(BUILDS[0], 1.0), _image(BUILDS[2], 1.0, 4321)), True)


def history() -> HistoryInput:
    loaded = []
    for i in range(6):
        moved = tuple(_times(c, 1.0, 1000.0 * i) for c in results().cells)
        loaded.append((Entry(i + 1, f"{i:02x}" * 20, Path(f"e{i}")), Results(FP, moved)))
    return HistoryInput("icount-history/" + "long-branch-name/" * 3, build(loaded))


def items() -> list[charts.Input]:
    """Every kind of section, with every kind of picture."""
    return [
        charts.ResultsInput("lzbench-O2-O3-O2lto-serve-and-command.json", results(), None),
        charts.ResultsInput("node-express-runtime.json", runtime(), None),
        charts.ComparisonInput("base-O2-against-O3-and-O2lto.json", comparison()),
        charts.SizesInput("size-sections-three-builds.json", sizes()),
        charts.SizesInput("size-symbols-cxx.json", symbols()),
        charts.SizesInput("size-diff-O2-to-O2lto.json", size_diff()),
        history(),
    ]
