"""The charts as SVG: golden files, byte-stability, and what each chart must show
(one mark per figure, each with its exact figure as title), read back from the SVG."""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from icount import charts, results
from icount.charts import axis, inputs, sizes, svg
from icount.charts.bars import cell_label
from icount.compare import model, render
from icount.compare.thresholds import parse_thresholds
from icount.results import Results

from .conftest import (
    COMPARE_FIXTURES,
    FIXTURES,
    constructed_results,
    golden,
    load_json,
    mixed_comparison_json,
)

NS = "{http://www.w3.org/2000/svg}"


def loop_comparison_json() -> dict[str, object]:
    """The real fixtures of icount compare (a 2-instruction loop, +1.42%)."""
    base = results.load(COMPARE_FIXTURES / "loop-base.json")
    new = results.load(COMPARE_FIXTURES / "loop-new.json")
    return render.to_json(model.compare(base, new, parse_thresholds([], 10), []))


def size_doc(name: str) -> inputs.DrawnSizes:
    return charts.sizes_from_json(load_json(FIXTURES / name), name)


SVGS: dict[str, Callable[[], str]] = {
    "serve.svg": lambda: charts.results_svg(results.load(FIXTURES / "serve.json")),
    "constructed.svg": lambda: charts.results_svg(constructed_results()),
    "compare-mixed.svg": lambda: charts.comparison_svg(
        charts.comparison_from_json(mixed_comparison_json(), "mixed")
    ),
    "compare-loop.svg": lambda: charts.comparison_svg(
        charts.comparison_from_json(loop_comparison_json(), "loop")
    ),
    "size-sections.svg": lambda: charts.sizes_svg(size_doc("size-sections.json")),
    "size-symbols.svg": lambda: charts.sizes_svg(size_doc("size-symbols.json")),
    "size-diff.svg": lambda: charts.sizes_svg(size_doc("size-diff.json")),
    "size-diff-symbols.svg": lambda: charts.sizes_svg(size_doc("size-diff-symbols.json")),
}


def parse(text: str) -> ET.Element:
    return ET.fromstring(text.split("\n", 1)[1] if text.startswith("<?xml") else text)


def marks(root: ET.Element, cls: str) -> list[ET.Element]:
    """Elements whose class list holds `cls`, outside legends."""
    legend = {id(e) for g in root.iter(f"{NS}g") if g.get("class") == "legend" for e in g.iter()}
    return [
        e
        for e in root.iter()
        if cls in (e.get("class") or "").split() and id(e) not in legend and e.tag != f"{NS}text"
    ]


def tip(e: ET.Element) -> str:
    t = e.find(f"{NS}title")
    assert t is not None and t.text, f"{e.tag} {e.attrib} has no title"
    return t.text


@pytest.mark.parametrize("name", sorted(SVGS))
def test_golden_and_byte_stable(name: str) -> None:
    text = SVGS[name]()
    assert SVGS[name]() == text  # a rerun gives the same bytes
    golden(name, text)
    parse(text)  # well-formed XML


@pytest.mark.parametrize("name", sorted(SVGS))
def test_every_mark_has_a_title(name: str) -> None:
    root = parse(SVGS[name]())
    legend = {id(e) for g in root.iter(f"{NS}g") if g.get("class") == "legend" for e in g.iter()}
    defs = {id(e) for d in root.iter(f"{NS}defs") for e in d.iter()}
    drawn = 0
    for e in root.iter():
        if e.tag not in (f"{NS}rect", f"{NS}circle", f"{NS}path", f"{NS}polyline"):
            continue
        if id(e) in legend or id(e) in defs or e.get("fill", "").startswith("url("):
            continue  # swatches, pattern tiles and pattern overlays on a titled mark
        tip(e)
        drawn += 1
    assert drawn > 0


def test_results_order_of_cells_does_not_matter() -> None:
    res = results.load(FIXTURES / "serve.json")
    shuffled = Results(res.fingerprint, tuple(reversed(res.cells)))
    assert charts.results_svg(shuffled) == charts.results_svg(res)


def test_results_bars_whiskers_and_dots_carry_the_exact_figures() -> None:
    res = results.load(FIXTURES / "serve.json")
    root = parse(charts.results_svg(res))
    rects = [b for b in marks(root, "bar") if b.tag == f"{NS}rect"]
    bars = {tip(b).split(":")[0]: tip(b) for b in rects if ": median " in tip(b)}
    text_bars = [b for b in rects if ": text " in tip(b)]
    counted = [c for c in res.cells if c.unit == results.UNIT_PER_REQUEST]
    assert len(bars) == len(counted)  # one bar per cell
    assert len(rects) == len(bars) + len(text_bars)  # and the binaries' text sizes
    for c in counted:
        s = c.summary
        assert s is not None
        t = bars[cell_label(c)]
        assert f"median {svg.exact(s.median)} instructions/request" in t
        assert f"min {svg.exact(s.min)}, max {svg.exact(s.max)}" in t
    dots = [tip(d) for d in marks(root, "dot")]
    assert len(dots) == sum(len(c.values) for c in counted)
    for c in counted:
        for i, r in enumerate(c.runs, 1):
            assert f"{cell_label(c)} run {i}: {svg.exact(r.value or 0)}" in dots
    assert len(marks(root, "wh")) == len(counted)


def test_bar_length_is_proportional_to_the_median() -> None:
    res = results.load(FIXTURES / "serve.json")
    root = parse(charts.results_svg(res))
    rects = [b for b in marks(root, "bar") if "median" in tip(b)]
    ratios = {
        float(b.get("width", 0))
        / float(re.findall(r"median ([\d,.]+)", tip(b))[0].replace(",", ""))
        for b in rects
    }
    assert max(ratios) / min(ratios) < 1.01  # rounding of the coordinates only


def test_invalid_cells_are_hatched_with_their_reason_and_print_no_figure() -> None:
    res = constructed_results()
    text = charts.results_svg(res)
    root = parse(text)
    invalid = [c for c in res.cells if not c.valid]
    assert len(invalid) == 3
    bad = marks(root, "bad")
    assert len(bad) == len(invalid)
    for c in invalid:
        assert any(cell_label(c) in tip(b) and "not valid" in tip(b) for b in bad)
        assert f"not valid: {c.reason}"[:40] in text
    legend = {id(e) for g in root.iter(f"{NS}g") if g.get("class") == "legend" for e in g.iter()}
    overlays = [
        e
        for e in root.iter(f"{NS}rect")
        if e.get("fill") == "url(#icu0-hatch)" and id(e) not in legend
    ]
    assert len(overlays) == len(invalid)
    # The spread-too-large cell has a median, but the chart prints "-" as the table does.
    nginx_json = next(c for c in res.cells if cell_label(c) == "nginx/json/callgrind")
    assert nginx_json.summary is not None
    medians = [t.text for t in root.iter(f"{NS}text")]
    assert "13.24k" not in medians and "-" in medians


def test_binary_sizes_as_bars_with_exact_bytes() -> None:
    root = parse(charts.results_svg(results.load(FIXTURES / "serve.json")))
    whole = [tip(b) for b in marks(root, "bar2")]
    assert sorted(whole) == [
        "c-epoll (c-epoll): 18,088 bytes",
        "nginx (nginx): 1,264,552 bytes",
        "python-asyncio (python3.11): 17,584 bytes",
    ]
    text = [tip(b) for b in marks(root, "bar") if ": text " in tip(b)]
    assert "nginx: text 783,455 bytes" in text


def test_comparison_one_bar_per_change_coloured_and_named_by_verdict() -> None:
    doc = charts.comparison_from_json(mixed_comparison_json(), "mixed")
    root = parse(charts.comparison_svg(doc))
    with_change = [r for r in doc.rows if r.delta_pct is not None]
    by_class = {cls: marks(root, cls) for cls in ("reg", "imp", "same", "band")}
    assert len(by_class["band"]) == len(doc.rows)  # the threshold, on every row
    assert sum(len(by_class[c]) for c in ("reg", "imp", "same")) == len(with_change)
    verdicts = [r.verdict for r in doc.rows]
    assert len(by_class["reg"]) == verdicts.count("regressed") == 1
    assert len(by_class["imp"]) == verdicts.count("improved") == 1
    texts = [t.text for t in root.iter(f"{NS}text")]
    for r in doc.rows:  # the verdict is written on every row: colour is not the only cue
        assert r.verdict in texts
    # Regressions are hatched too.
    assert any(e.get("fill") == "url(#ic-hatch)" for e in root.iter(f"{NS}rect"))
    fib = next(tip(b) for b in by_class["reg"])
    assert fib.startswith("fib, base median 1,000,010, new median 1,030,010, delta +30,000")


def test_comparison_scale_is_diverging_and_linear() -> None:
    doc = charts.comparison_from_json(mixed_comparison_json(), "mixed")
    root = parse(charts.comparison_svg(doc))
    bars = marks(root, "reg") + marks(root, "imp") + marks(root, "same")
    zero = {float(b.get("x", 0)) + float(b.get("width", 0)) for b in marks(root, "imp")}
    zero |= {float(b.get("x", 0)) for b in marks(root, "reg")}
    assert len(zero) == 1  # improvements end where regressions start: at 0
    (x0,) = zero
    per_pct = set()
    for b in bars:
        pct = float(re.findall(r"change ([-+][\d.]+)%", tip(b))[0])
        if abs(pct) > 1:  # tiny bars are widened to 1 px to stay visible
            per_pct.add(float(b.get("width", 0)) / abs(pct))
            side = float(b.get("x", 0)) < x0
            assert side == (pct < 0)
    assert len(per_pct) == 2 and max(per_pct) / min(per_pct) < 1.02  # coordinate rounding


def _bytes_in(title: str) -> int:
    return int(re.findall(r"([\d,]+) bytes in the file", title)[0].replace(",", ""))


def test_stacked_sections_add_up_to_the_file_size() -> None:
    doc = size_doc("size-sections.json")
    root = parse(charts.sizes_svg(doc))
    segs = marks(root, "seg")
    for img in doc.images:
        own = [tip(s) for s in segs if tip(s).startswith(f"{img.name}: ")]
        assert (
            sum(_bytes_in(t) for t in own) == img.file_bytes == sum(r.file_bytes for r in img.rows)
        )


def test_treemap_tiles_are_proportional_and_do_not_overlap() -> None:
    doc = size_doc("size-symbols.json")
    root = parse(charts.sizes_svg(doc))
    tiles = []
    for s in marks(root, "seg"):
        x, y, w, h = (float(s.get(k, 0)) for k in ("x", "y", "width", "height"))
        tiles.append((x, y, w, h, _bytes_in(tip(s))))
    (img,) = doc.images
    assert sum(t[4] for t in tiles) == img.file_bytes
    total_area = sizes.TREE_W * sizes.TREE_H
    for x, _, w, h, b in tiles:
        assert abs(w * h - total_area * b / img.file_bytes) <= 0.06 * (w + h) + 0.01
        assert x >= sizes.LABEL_X - 0.1 and x + w <= sizes.LABEL_X + sizes.TREE_W + 0.1


@pytest.mark.parametrize("name", ["size-diff.json", "size-diff-symbols.json"])
def test_size_diff_shows_the_largest_changes_with_exact_bytes(name: str) -> None:
    raw = load_json(FIXTURES / name)
    rows = raw["diff"][0]["rows"]
    changed = [r for r in rows if r["old_file_bytes"] != r["new_file_bytes"]]
    root = parse(charts.sizes_svg(size_doc(name)))
    bars = marks(root, "reg") + marks(root, "imp")
    assert len(bars) == min(len(changed), sizes.DIFF_ROWS)
    biggest = max(changed, key=lambda r: abs(r["new_file_bytes"] - r["old_file_bytes"]))
    a, b = biggest["old_file_bytes"], biggest["new_file_bytes"]
    assert any(tip(x).startswith(f"{biggest['label']}: {a:,} -> {b:,} bytes") for x in bars)


# ---------------------------------------------------------------- building blocks


def test_squarify_tiles_exactly() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    @given(st.lists(st.integers(1, 10**9), min_size=1, max_size=60))
    def check(values: list[int]) -> None:
        values = sorted(values, reverse=True)
        rects = sizes.squarify([float(v) for v in values], 0, 0, 300, 200)
        assert len(rects) == len(values)
        assert math.isclose(sum(w * h for _, _, w, h in rects), 300 * 200, rel_tol=1e-6)
        for (x, y, w, h), v in zip(rects, values, strict=True):
            assert x >= -1e-6 and y >= -1e-6 and x + w <= 300 + 1e-6 and y + h <= 200 + 1e-6
            assert math.isclose(w * h, 60000 * v / sum(values), rel_tol=1e-6, abs_tol=1e-6)
        for i, (x, y, w, h) in enumerate(rects):  # no two tiles overlap
            for x2, y2, w2, h2 in rects[i + 1 :]:
                ox = min(x + w, x2 + w2) - max(x, x2)
                oy = min(y + h, y2 + h2) - max(y, y2)
                assert ox <= 1e-6 or oy <= 1e-6

    check()


@pytest.mark.parametrize(
    ("lo", "hi", "ticks"),
    [
        (0, 31578.8, (0, 10000, 20000, 30000, 40000)),
        (0, 883.1, (0, 200, 400, 600, 800, 1000)),
        (0, 0, (0, 0.2, 0.4, 0.6, 0.8, 1.0)),
        (7800, 7920, (7800, 7825, 7850, 7875, 7900, 7925)),
    ],
)
def test_linear_ticks_are_round_and_cover_the_data(
    lo: float, hi: float, ticks: tuple[float, ...]
) -> None:
    s = axis.linear(lo, hi, 0, 100)
    assert s.ticks == ticks
    assert s(s.lo) == 0 and s(s.hi) == 100


def test_tick_labels() -> None:
    s = axis.linear(0, 31578.8, 0, 100)
    assert [axis.si_labels(s)(t) for t in s.ticks] == ["0", "10k", "20k", "30k", "40k"]
    b = axis.bytes_scale(1264552, 0, 100)
    assert [axis.bytes_labels(b)(t) for t in b.ticks] == ["0", "0.5 MiB", "1.0 MiB", "1.5 MiB"]
    p = axis.symmetric(0.0165, 0, 100, 2)
    assert [axis.percent_labels(p)(t) for t in p.ticks] == ["-2%", "-1%", "0%", "+1%", "+2%"]


def test_exact_and_coordinates_are_fixed_format() -> None:
    assert svg.exact(2107284.0) == "2,107,284"
    assert svg.exact(13240.25) == "13,240.25"
    assert svg.exact(851.135) == "851.135"
    assert svg.n(-0.04) == "0" and svg.n(12.0) == "12" and svg.n(3.14159) == "3.1"
    assert svg.clip("abcdefghijklmnopqrstuvwxyz", 60) == "abcdef…"
    assert svg.clip("geo::Square::~Square()", 80, middle=True) == "…~Square()"
    assert svg.esc('<a href="x">&') == "&lt;a href=&quot;x&quot;&gt;&amp;"


def test_labels_with_markup_are_escaped() -> None:
    from .conftest import FP, cell

    res = Results(FP, (cell("<script>alert(1)</script>", [100.0, 100.0]),))
    text = charts.results_svg(res)
    assert "<script" not in text and "&lt;script&gt;" in text
    parse(text)


def test_fixtures_exist() -> None:
    for name in ("serve.json", "serve.provenance.json", "node-warmup.json", "record.sh"):
        assert (FIXTURES / name).is_file()
    assert Path(COMPARE_FIXTURES / "loop-base.json").is_file()


# ---------------------------------------------------------------- reading the inputs


def test_warmup_curves_are_the_runs_recorded_curves() -> None:
    from icount.charts.warmup import warmup_curves
    from icount.results.details import WINDOW_DUMPS, Rep, ServeDetail

    from .conftest import cell

    detail = ServeDetail(
        WINDOW_DUMPS, 600, (Rep(55000, 1),), warmup_curve=((100, 900.0), (600, 400.5))
    )
    assert warmup_curves(cell("node", [55000.0], "json", detail=detail)) == [
        (1, [(100.0, 900.0), (600.0, 400.5)])
    ]
    assert warmup_curves(cell("node", [55000.0], "json")) == []  # a run without a curve


def test_version_1_warmup_windows_end_after_k_times_requests(tmp_path: Path) -> None:
    """icount 0.1 recorded per-request figures of windows of params.requests each; the
    loader turns them into the curve the charts draw."""
    from icount.charts.warmup import warmup_curves

    doc = json.loads((FIXTURES / "node-warmup.json").read_text())
    assert doc["version"] == 1
    first = doc["cells"][0]
    windows = first["runs"][0]["detail"]["warmup_windows"]
    requests = first["params"]["requests"]
    res = results.load(FIXTURES / "node-warmup.json")
    by_key = {(c.name, c.path): c for c in res.cells}
    curves = warmup_curves(by_key[(first["name"], first["path"])])
    assert curves[0] == (1, [((k + 1) * requests, v) for k, v in enumerate(windows)])


def test_size_documents_are_read_by_their_documented_keys_only() -> None:
    """Another view, another file format and unknown keys (as `icount size` grows)."""
    doc = {
        "format": "icount-size",
        "version": 2,
        "view": "compile_units",
        "future": {"anything": 1},
        "images": [
            {
                "file": "/build/app.wasm",
                "arch": "wasm32",
                "format": "Wasm",
                "kind": "module",
                "file_bytes": 300,
                "vm_bytes": 0,
                "rows": [
                    {"label": "src/a.rs", "file_bytes": 200, "vm_bytes": 0, "lines": 9},
                    {"label": "src/b.rs", "file_bytes": 100, "vm_bytes": 0},
                ],
            }
        ],
    }
    size = charts.sizes_from_json(doc, "app.json")
    assert size.view == "compile_units" and size.images[0].name == "app.wasm"
    root = parse(charts.sizes_svg(size))
    assert sorted(_bytes_in(tip(s)) for s in marks(root, "seg")) == [100, 200]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": "icount-sizes"}, 'not an icount size document (no "format": "icount-size")'),
        ({"view": 3}, "the size document: 'view' is missing or not a string"),
        ({"images": [{"file": "a"}]}, "image 1: 'rows' is missing or not a list"),
        (
            {"images": [{"file": "a", "rows": []}]},
            "image 1: 'file_bytes' is missing or not a byte count",
        ),
        (
            {"images": [{"file": "a", "file_bytes": 1, "vm_bytes": -1, "rows": []}]},
            "image 1: 'vm_bytes' is missing or not a byte count",
        ),
        (
            {"images": [{"file": "a", "file_bytes": 1, "vm_bytes": 1, "rows": [{"label": 1}]}]},
            "image 1 row 1: 'label' is missing or not a string",
        ),
    ],
)
def test_bad_size_documents_name_the_key(change: dict[str, object], message: str) -> None:
    from icount.errors import ParseError

    doc = {"format": "icount-size", "view": "sections", "images": [], **change}
    with pytest.raises(ParseError) as err:
        charts.sizes_from_json(doc, "s.json")
    assert str(err.value) == f"s.json: {message}"


def test_comparison_of_another_version_is_refused() -> None:
    from icount.errors import ParseError

    doc = {**mixed_comparison_json(), "version": 3}
    with pytest.raises(
        ParseError, match=r"^c\.json: comparison format version 3; this icount reads version 1, 2$"
    ):
        charts.comparison_from_json(doc, "c.json")


def test_a_diff_without_changes_says_so() -> None:
    img = {
        "file": "a/srv",
        "arch": "x86_64",
        "format": "ELF64",
        "kind": "executable",
        "file_bytes": 10,
        "vm_bytes": 10,
    }
    rows = [
        {
            "label": ".text",
            "old_file_bytes": 10,
            "new_file_bytes": 10,
            "old_vm_bytes": 10,
            "new_vm_bytes": 10,
        }
    ]
    doc = {
        "format": "icount-size",
        "view": "sections",
        "diff": [{"old": img, "new": {**img, "file": "b/srv"}, "rows": rows}],
    }
    size = charts.sizes_from_json(doc, "d.json")
    # named by the part of their paths that tells them apart, not both "srv"
    assert [i.name for i in size.images] == ["a/srv", "b/srv"]
    page = charts.report_html([charts.SizesInput("d.json", size)])
    assert "a/srv to b/srv: no sections changed in file bytes." in page
    assert "file bytes +" not in page and "file bytes -" not in page  # no diff chart
