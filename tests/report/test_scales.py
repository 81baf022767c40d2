"""Scales and labels that read (issue 24's "Chart scales" and "Labels"), read back from
the SVG: an invalid cell does not set the axis, a tiny binary beside libc still has a
bar, a threshold band still shows beside a +-50% change, tall charts repeat their
axis under the last row, labels that share a start still differ, C++ tiles show the
function's name, one "others" tile, rows in the order asked for; and the charts of
the typed models are those of their JSON documents."""

from __future__ import annotations

import dataclasses
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from icount import charts, results
from icount.charts import axis, bars, diverging, sizes, svg
from icount.charts.inputs import DrawnSizes, SizeImage, SizeRow
from icount.compare import model, render
from icount.compare.drawn import CompareRow, DrawnComparison, Side
from icount.compare.thresholds import parse_thresholds
from icount.names import function_name
from icount.results import Results
from icount.shortening import could_be

from .conftest import COMPARE_FIXTURES, FIXTURES, FP, cell

NS = "{http://www.w3.org/2000/svg}"


def parse(text: str) -> ET.Element:
    return ET.fromstring(text.split("\n", 1)[1])


def tip(e: ET.Element) -> str:
    t = e.find(f"{NS}title")
    return t.text or "" if t is not None else ""


def rects(root: ET.Element, cls: str) -> list[ET.Element]:
    legend = {id(e) for g in root.iter(f"{NS}g") if g.get("class") == "legend" for e in g.iter()}
    return [
        e
        for e in root.iter(f"{NS}rect")
        if cls in (e.get("class") or "").split() and id(e) not in legend
    ]


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{NS}text")]


def width(e: ET.Element) -> float:
    return float(e.get("width", 0))


# ---------------------------------------------------------------- results


def huge_invalid() -> Results:
    """64 valid cells of 1.0-1.5M and one invalid at 171.5M (its spread too large),
    as the red team's file: the invalid cell once left 50 of the 64 bars a few pixels."""
    cells = [
        dataclasses.replace(
            cell(f"fib-{i}", [b, b + 3, b - 2], unit=results.UNIT_INSTRUCTIONS), order=i
        )
        for i in range(1, 65)
        for b in [1_000_000 + i * 8_000]
    ]
    bad = cell("huge", [171_500_000, 120_000_000, 230_000_000], unit=results.UNIT_INSTRUCTIONS)
    return Results(FP, (*cells, dataclasses.replace(bad, order=20)))


def test_an_invalid_cell_does_not_set_the_axis() -> None:
    res = huge_invalid()
    root = parse(charts.results_svg(res))
    axis_px = bars.BAR_X1 - bars.BAR_X0
    valid = [b for b in rects(root, "bar") if "median" in tip(b)]
    assert len(valid) == 64
    # medians of 1.0-1.5M on an axis to 2M: every bar at least half of it
    assert min(width(b) for b in valid) >= 0.5 * axis_px
    assert "2.0M" in texts(root) and not any(t.endswith("50M") for t in texts(root))
    (bad,) = rects(root, "bad")
    assert "beyond the axis, which spans the valid cells" in tip(bad)
    assert width(bad) <= axis_px + 0.1  # drawn to the axis's end, not past the chart
    assert any(t.startswith("the axis spans the valid cells") for t in texts(root))


def test_a_tall_chart_repeats_its_axis_under_the_last_row() -> None:
    root = parse(charts.results_svg(huge_invalid()))
    labels = [t for t in root.iter(f"{NS}text") if t.text == "1.0M"]
    assert len(labels) == 2
    top, bottom = sorted(float(t.get("y", 0)) for t in labels)
    last_row = max(float(t.get("y", 0)) for t in root.iter(f"{NS}text") if t.text == "fib-64")
    assert top < 80 and bottom > last_row
    short = parse(charts.results_svg(Results(FP, huge_invalid().cells[:5])))
    ticks = [t for t in texts(short) if t.endswith("M")]  # tick labels and medians
    assert ticks and len(ticks) == len(set(ticks))  # each once: not repeated below


def test_medians_orders_of_magnitude_apart_get_linear_axes_of_their_own() -> None:
    """A log axis drew 882 as a third of 515k: a bar's length is read as its size, so
    targets of like size share a linear axis from 0, and each group has its own."""
    res = Results(
        FP,
        (
            cell("c-epoll", [3102.2, 3101.9, 3102.5]),
            cell("nginx", [13012.4, 13012.1]),
            cell("python", [312930.0, 313000.0]),
        ),
    )
    root = parse(charts.results_svg(res))
    widths = {tip(b).split(":")[0]: width(b) for b in rects(root, "bar")}
    axis_px = bars.BAR_X1 - bars.BAR_X0
    # python and nginx (24x apart) share an axis, their bars in the ratio of their medians;
    # c-epoll, 101x below python, has its own
    assert widths["python/callgrind"] / widths["nginx/callgrind"] == pytest.approx(
        312965.0 / 13012.25, rel=0.01
    )
    assert widths["python/callgrind"] >= 0.5 * axis_px
    assert widths["c-epoll/callgrind"] >= 0.5 * axis_px
    assert "2 axes, each from 0: targets within 50x share one" in texts(root)
    assert not any("log" in t for t in texts(root))
    assert {"0", "1k", "3k", "100k", "300k"} <= set(texts(root))


def test_rows_keep_the_order_asked_for_not_a_text_sort() -> None:
    names = ["fib-1", "fib-2", "fib-10", "alpha"]
    res = Results(
        FP, tuple(dataclasses.replace(cell(n, [100.0 + k]), order=k) for k, n in enumerate(names))
    )
    shown = [t for t in texts(parse(charts.results_svg(res))) if t in names]
    assert shown == names
    page = charts.report_html([charts.ResultsInput("r.json", res, None)])
    table = page[page.index("<summary>Numbers</summary>") :]
    assert [table.index(f'<td class="l">{n}</td>') for n in names] == sorted(
        table.index(f'<td class="l">{n}</td>') for n in names
    )


# ---------------------------------------------------------------- comparisons


def comparison(changes: dict[str, float], threshold: float = 0.01) -> DrawnComparison:
    rows = []
    for name, pct in changes.items():
        base, new = 100_000.0, 100_000.0 * (1 + pct)
        verdict = "unchanged" if abs(pct) <= threshold else "regressed" if pct > 0 else "improved"
        rows.append(
            CompareRow(
                name,
                "",
                "callgrind",
                "instructions",
                Side(base, base, base, 3),
                Side(new, new, new, 3),
                new - base,
                pct,
                threshold,
                verdict,
                "",
            )
        )
    return DrawnComparison("verdicts", (), tuple(rows), (), None, None)


def test_a_threshold_band_shows_beside_a_change_fifty_times_larger() -> None:
    doc = comparison({"fib": 0.5, "gzip": -0.4, "json": 0.005})
    root = parse(charts.comparison_svg(doc))
    half = (diverging.BAR_X1 - diverging.COUNTS.bar_x0) / 2
    bands = rects(root, "band")
    assert len(bands) == 3 and min(width(b) for b in bands) >= 0.25 * half  # was 2% of it
    assert any(t.startswith("linear within the threshold (±1%), logarithmic") for t in texts(root))
    assert {"+50%", "-50%", "0%"} <= set(texts(root))
    # still a diverging scale: the larger change has the longer bar, on its own side
    (reg,) = rects(root, "reg")
    (imp,) = rects(root, "imp")
    assert width(reg) > width(imp) > 0.5 * half
    assert float(imp.get("x", 0)) + width(imp) == pytest.approx(float(reg.get("x", 0)), abs=0.1)


def test_a_linear_comparison_stays_linear() -> None:
    root = parse(charts.comparison_svg(comparison({"fib": 0.03, "gzip": -0.02}, 0.02)))
    assert not any("logarithmic" in t for t in texts(root))


def test_the_minus_two_and_a_half_percent_tick_is_labelled() -> None:
    root = parse(charts.comparison_svg(comparison({"fib": 0.045, "gzip": -0.03})))
    assert {"-5.0%", "-2.5%", "0%", "+2.5%", "+5.0%"} <= set(texts(root))


def test_size_comparison_labels_that_share_a_start_still_differ() -> None:
    labels = [f"server/sections/{s}/file" for s in (".dynamic", ".dynstr", ".dynsym")]
    rows = tuple(
        CompareRow(
            "server",
            lb.removeprefix("server/"),
            "size",
            "bytes",
            Side(480, 480, 480, 1),
            Side(496, 496, 496, 1),
            16,
            16 / 480,
            0.01,
            "regressed",
            "",
        )
        for lb in labels
    )
    root = parse(charts.comparison_svg(DrawnComparison("v", (), rows, (), None, None)))
    shown = [
        t
        for t in root.iter(f"{NS}text")
        if float(t.get("x", 0)) == diverging.LABEL_X and (t.text or "").endswith("/file")
    ]
    assert len(shown) == 3 and len({t.text for t in shown}) == 3
    base = min(float(t.get("x", 0)) for t in root.iter(f"{NS}text") if t.text == "480 B")
    for t, full in zip(shown, labels, strict=True):  # whole where the columns make room
        assert ".dyn" in (t.text or "") and (t.text == full or tip(t) == full)
        assert diverging.LABEL_X + svg.text_px(t.text or "") <= base - svg.text_px("480 B")
    assert {"480 B", "496 B"} <= set(texts(root))  # bytes as icount size writes them


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("server/sections/.dynstr/file", "…/sections/.dynstr/file"),  # whole at 166 px
        ("server/sections/.data.rel.ro/file", "…/.data.rel.ro/file"),
        ("ab/cd", "ab/cd"),
    ],
)
def test_clip_path_keeps_whole_parts_from_the_end(text: str, shown: str) -> None:
    assert svg.clip_path(text, 150) == shown


# ---------------------------------------------------------------- sizes


def image(name: str, rows: dict[str, int]) -> SizeImage:
    total = sum(rows.values())
    return SizeImage(
        name,
        "x86_64",
        "ELF64",
        "shared object",
        total,
        total,
        tuple(SizeRow(lb, b, b) for lb, b in rows.items()),
    )


def test_a_tiny_module_beside_libc_has_a_visible_bar() -> None:
    wasm = image("mod.wasm", {"CODE": 400, "DATA": 300, "[header]": 37})
    libc = image("libc.so.6", {".text": 1_500_000, ".rodata": 250_000, ".data": 179_000})
    root = parse(charts.sizes_svg(DrawnSizes("sections", (wasm, libc), False)))
    segs = rects(root, "seg")
    small = sum(width(s) for s in segs if tip(s).startswith("mod.wasm: "))
    large = sum(width(s) for s in segs if tip(s).startswith("libc.so.6: "))
    axis_px = sizes.BAR_X1 - sizes.BAR_X0
    assert small >= 0.5 * axis_px and large >= 0.5 * axis_px  # each on an axis of its size
    assert any(
        t.startswith("2 axes: the binaries differ in size by more than 20x") for t in texts(root)
    )
    assert "1.5 MiB" in texts(root) or "2.0 MiB" in texts(root)
    assert any(t.endswith(" B") and t != "0" for t in texts(root))  # the module's own axis
    # its sections are named, not all left in "others"
    assert any(tip(s).startswith("mod.wasm: CODE: 400 bytes") for s in segs)


def test_binaries_of_like_size_share_one_axis() -> None:
    a = image("a", {".text": 1000, ".data": 200})
    b = image("b", {".text": 600, ".data": 100})
    root = parse(charts.sizes_svg(DrawnSizes("sections", (a, b), False)))
    assert not any("axes" in t for t in texts(root))
    groups = sizes.size_groups([a, b, image("c", {".text": 10}), image("d", {".text": 15})])
    assert groups == [[0, 1], [2, 3]]
    assert axis.magnitude_groups([0.0, 0.0, 3.0]) == [[0, 1, 2]]  # empty files: one axis


CXX = (
    "std::istreambuf_iterator<char, std::char_traits<char> > std::__cxx11::money_get<char, "
    "std::istreambuf_iterator<char, std::char_traits<char> > >::_M_extract<false>(std::"
    "istreambuf_iterator<char, std::char_traits<char> >, std::ios_base&) const"
)


def test_treemap_tiles_show_the_function_name_and_one_others_tile() -> None:
    rows = {CXX: 90_000, "long v8::internal::Heap::Size(int)": 60_000, "[300 others]": 50_000}
    rows |= {f"fn_{k}": 1000 - k for k in range(sizes.TILES + 5)}
    img = image("libstdc++.so.6", rows)
    root = parse(charts.sizes_svg(DrawnSizes("symbols", (img,), False)))
    inside = [t.text or "" for t in root.iter(f"{NS}text") if t.get("class") == "in"]
    assert "std::__cxx11::money_get::_M_extract" in inside
    assert any(t.endswith("::Heap::Size") for t in inside)  # shortened from the left
    assert not any(t.startswith(("std::istreambuf", "long", "int ")) for t in inside)
    others = [s for s in rects(root, "seg") if "others" in tip(s)]
    assert len(others) == 1 and "c9" in (others[0].get("class") or "")
    # the 7 symbols past TILES and the 300 that --top summed: 962 + ... + 956 + 50,000
    assert tip(others[0]).startswith("libstdc++.so.6: 307 others: 307 smaller rows, 56,713 bytes")
    total = sum(
        int(re.findall(r"([\d,]+) bytes in", tip(s))[0].replace(",", ""))
        for s in rects(root, "seg")
    )
    assert total == img.file_bytes


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        (CXX, "std::__cxx11::money_get::_M_extract"),
        ("int v8::internal::Foo::Bar(int)", "v8::internal::Foo::Bar"),
        ("std::foo::operator bool() const", "std::foo::operator bool"),
        ("std::vector<int>::operator new(unsigned long)", "std::vector::operator new"),
        ("(anonymous namespace)::parse(char const*)", "(anonymous namespace)::parse"),
        ("operator new(unsigned long)", "operator new(unsigned long)"),  # no scope: whole
        ("[section .text]", "[section .text]"),
        ("runtime.(*mheap).alloc", "runtime.(*mheap).alloc"),
        ("<T as core::fmt::Debug>::fmt", "<T as core::fmt::Debug>::fmt"),
        ("vtable for std::vector<int>", "vtable for std::vector"),
    ],
)
def test_function_name(name: str, shown: str) -> None:
    assert function_name(name) == shown


# ---------------------------------------------------------------- typed models


def test_charts_of_a_comparison_are_those_of_its_json() -> None:
    base = results.load(COMPARE_FIXTURES / "loop-base.json")
    new = results.load(COMPARE_FIXTURES / "loop-new.json")
    c = model.compare(base, new, parse_thresholds(["0.5%"], 10), [])
    assert charts.comparison_doc(c) == charts.comparison_from_json(render.to_json(c), "c")
    assert charts.comparison_svg(c) == charts.comparison_svg(
        charts.comparison_from_json(render.to_json(c), "c")
    )


@pytest.mark.parametrize("binaries", [("/bin/true",), ("/bin/true", "/bin/ls")])
def test_charts_of_sizes_are_those_of_their_json(binaries: tuple[str, ...]) -> None:
    from icount.size import render as size_render
    from icount.size import report

    items = [b for p in binaries for b in report.breakdowns(Path(p), "sections", 0, False)]
    doc = charts.size_doc(items, "sections")
    assert doc == charts.sizes_from_json(json.loads(size_render.to_json(items, "sections")), "s")
    if len(items) == 2:
        pairs = [(items[0], items[1])]
        diff = charts.size_diff_doc(pairs, "sections")
        text = size_render.diff_json(pairs, "sections")
        assert diff == charts.sizes_from_json(json.loads(text), "d")


def test_binary_sizes_of_very_different_sizes_each_have_a_visible_bar() -> None:
    """serve.json's targets: c-epoll 18,088 and python 17,584 bytes beside nginx's
    1,264,552 (c-epoll's bar was 6 px of 410)."""
    root = parse(charts.results_svg(results.load(FIXTURES / "serve.json")))
    whole = {tip(b).split(" ")[0]: width(b) for b in rects(root, "bar2")}
    axis_px = bars.BAR_X1 - bars.BAR_X0
    assert set(whole) == {"c-epoll", "nginx", "python-asyncio"}
    assert min(whole.values()) >= 0.5 * axis_px
    assert any(
        t.startswith("2 axes: the binaries differ in size by more than 20x") for t in texts(root)
    )
    assert {"0", "20 KiB", "1.5 MiB"} <= set(texts(root))


def test_sort_name_orders_the_rows_by_name_in_natural_order() -> None:
    names = ["fib-10", "fib-2", "alpha", "fib-1"]
    res = Results(
        FP, tuple(dataclasses.replace(cell(n, [100.0 + k]), order=k) for k, n in enumerate(names))
    )
    shown = [t for t in texts(parse(charts.results_svg(res, "name"))) if t in names]
    assert shown == ["alpha", "fib-1", "fib-2", "fib-10"]


def test_one_of_a_thing_is_said_in_the_singular() -> None:
    res = Results(FP, (cell("only", [100.0, 100.0]),))
    root = parse(charts.results_svg(res))
    label = root.find(f"{NS}title")
    assert label is not None and "1 cell, 1 valid" in (label.text or "")
    page = charts.report_html([charts.ResultsInput("r.json", res, None)])
    assert "1 cell, 1 valid" in page and "1 cells" not in page
    assert sizes.row_word("compileunits") == "compile unit" and sizes.row_word("crates") == "crate"


def test_a_size_diff_heads_its_percentages_relative_not_verdict() -> None:
    old = image("srv", {".text": 1000, ".data": 100})
    new = image("srv", {".text": 1100, ".data": 100, ".bss": 8})
    root = parse(charts.sizes_svg(DrawnSizes("sections", (old, new), True)))
    assert "relative" in texts(root) and "verdict" not in texts(root)
    assert {"+10.00%", "new"} <= set(texts(root))
    assert any("2 sections changed" in t for t in texts(root))


def test_section_names_that_clip_alike_are_shown_from_where_they_differ() -> None:
    """shapes.o's sections (size-diff.json) once read `.rela.data…o6SquareE` twice
    and `.rela.data…eo5ShapeE` twice; `.data.rel.ro.local…` differs at its start."""
    names = [
        ".rela.data.rel.ro.local._ZTVN3geo6SquareE",
        ".rela.data.rel.ro._ZTIN3geo6SquareE",
        ".data.rel.ro.local._ZTVN3geo6SquareE",
        ".data.rel.ro._ZTIN3geo6SquareE",
        ".rela.data.rel.ro._ZTIN3geo5ShapeE",
        ".rela.data.rel.ro._ZTVN3geo5ShapeE",
    ]
    shown = svg.distinct_clips(names, diverging.BYTES.label_w)
    assert len(set(shown)) == len(names)
    assert all(svg.text_px(s) <= diverging.BYTES.label_w for s in shown)
    for short, name in zip(shown, names, strict=True):  # none could be read as another
        assert not any(could_be(short, other) for other in names if other != name), short


def test_a_tall_stack_of_binaries_repeats_its_axis_below() -> None:
    images = tuple(image(f"lib{k}.so", {".text": 100_000 + k, ".data": 5000}) for k in range(20))
    root = parse(charts.sizes_svg(DrawnSizes("sections", images, False)))
    ticks = ("50 KiB", "100 KiB", "150 KiB")
    assert all(texts(root).count(t) == 2 for t in ticks)  # above and under the bars
    few = parse(charts.sizes_svg(DrawnSizes("sections", images[:3], False)))
    assert all(texts(few).count(t) == 1 for t in ticks)


def _coordinates(root: ET.Element) -> list[float]:
    return [float(e.get(k, 0)) for e in root.iter() for k in ("x", "y", "width") if e.get(k)]


def test_any_changes_and_thresholds_draw_inside_the_chart() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    change = st.floats(-0.999, 1e9, allow_nan=False)

    @settings(max_examples=150, deadline=None)
    @given(st.lists(change, min_size=1, max_size=8), st.floats(1e-9, 10))
    def check(changes: list[float], threshold: float) -> None:
        doc = comparison({f"c{k}": v for k, v in enumerate(changes)}, threshold)
        root = parse(charts.comparison_svg(doc))
        assert all(-1 <= x <= diverging.WIDTH + 1 for x in _coordinates(root) if x)
        ticks = [t for t in texts(root) if t.endswith("%") and t[0] in "+-0"]
        assert "0%" in ticks

    check()


def test_any_medians_draw_inside_the_chart() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=100, deadline=None)
    @given(st.lists(st.floats(0, 1e15, allow_nan=False), min_size=1, max_size=6), st.booleans())
    def check(medians: list[float], with_invalid: bool) -> None:
        cells = [cell(f"t{k}", [m, m]) for k, m in enumerate(medians)]
        if with_invalid:
            cells.append(cell("bad", [1e15, 1.0]))
        root = parse(charts.results_svg(Results(FP, tuple(cells))))
        xs = [float(b.get("x", 0)) + width(b) for b in rects(root, "bar")]
        assert all(bars.BAR_X0 <= x <= bars.BAR_X1 + 1 for x in xs)

    check()
