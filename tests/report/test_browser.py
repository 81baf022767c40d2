"""Each kind of report in a real browser (headless Chromium): the page loads without an
error or a request, the DOM holds the expected number of marks, the layout holds on a
phone and in dark mode, and a screenshot of each is taken.

Set ICOUNT_SCREENSHOTS=DIR to keep the screenshots (they go to pytest's tmp_path
otherwise). Skipped, with the reason, only where Chromium cannot run.
"""

from __future__ import annotations

import json
import os
import re
import struct
from pathlib import Path
from typing import Any

import pytest

from icount import charts, results
from icount.charts.sizes import _categories
from icount.results.details import ServeDetail

from .conftest import (
    FIXTURES,
    constructed_results,
    load_json,
    many_cells,
    mixed_comparison_json,
)

# How many titled marks of a class the DOM holds (legend swatches have no title).
COUNT = """(cls => document.querySelectorAll(`${cls}:not(.legend *) > title`).length)"""
TITLES = """(cls => [...document.querySelectorAll(`${cls}:not(.legend *) > title`)]
  .map(t => t.textContent))"""


def count(browser: Any, selector: str) -> int:
    n = browser.evaluate(f"{COUNT}({json.dumps(selector)})")
    assert isinstance(n, int)
    return n


def titles(browser: Any, selector: str) -> list[str]:
    got = browser.evaluate(f"{TITLES}({json.dumps(selector)})")
    assert isinstance(got, list)
    return [str(t) for t in got]


def shots_dir(tmp_path: Path) -> Path:
    keep = os.environ.get("ICOUNT_SCREENSHOTS")
    out = Path(keep) if keep else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    return out


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", data[16:24])
    return w, h


def open_page(browser: Any, page: Path, shots: Path, name: str) -> None:
    """Load at desktop width, check it, and screenshot it light, dark and on a phone."""
    for tag, kw in (("", {}), ("-dark", {"dark": True}), ("-phone", {"width": 390})):
        load = browser.load(page, **kw)
        assert load.problems == [], load.problems
        assert load.requests == [], load.requests
        out = shots / f"{name}{tag}.png"
        browser.screenshot(out)
        w, h = png_size(out)
        assert w == kw.get("width", 1000) and h > 200
        if tag == "-phone":  # the page itself never scrolls sideways; wide charts scroll
            assert browser.evaluate("document.documentElement.scrollWidth") <= 390
        if tag == "-dark":
            bg = browser.evaluate("getComputedStyle(document.body).backgroundColor")
            ink = browser.evaluate("getComputedStyle(document.querySelector('svg text')).fill")
            assert bg == "rgb(13, 17, 23)" and ink == "rgb(230, 237, 243)"
    browser.load(page)  # leave it loaded in light mode for the caller's DOM checks


def write_page(path: Path, items: list[charts.Input]) -> Path:
    path.write_text(charts.report_html(items))
    return path


def test_results_report(browser: Any, tmp_path: Path) -> None:
    real = results.load(FIXTURES / "serve.json")
    made = constructed_results()
    prov = load_json(FIXTURES / "serve.provenance.json")
    page = write_page(
        tmp_path / "results.html",
        [
            charts.ResultsInput("serve.json", real, prov),
            charts.ResultsInput("constructed.json", made, None),
        ],
    )
    open_page(browser, page, shots_dir(tmp_path), "results")
    cells = [*real.cells, *made.cells]
    valid = [c for c in cells if c.valid]
    medians = [t for t in titles(browser, "rect.bar") if ": median " in t]
    assert len(medians) == len(valid)
    assert count(browser, "rect.bad") == len(cells) - len(valid)
    assert count(browser, "circle.dot") == sum(len(c.values) for c in cells)
    assert count(browser, "path.wh") == sum(1 for c in cells if c.summary is not None)
    binaries = sum(
        len({c.name for c in r.cells if "binary_bytes" in c.extra}) for r in (real, made)
    )
    assert count(browser, "rect.bar2") == binaries == 5  # one per target of each file
    # The provenance is there, folded away until opened.
    assert browser.evaluate("document.querySelectorAll('details').length") == 5
    opened = browser.evaluate(
        "[...document.querySelectorAll('details')].filter(d => d.open).length"
    )
    assert opened == 0


def test_warmup_curves(browser: Any, tmp_path: Path) -> None:
    res = results.load(FIXTURES / "node-warmup.json")
    page = write_page(tmp_path / "warmup.html", [charts.ResultsInput("node.json", res, None)])
    open_page(browser, page, shots_dir(tmp_path), "warmup")
    windows = [
        r.detail.warmup_curve
        for c in res.cells
        for r in c.runs
        if isinstance(r.detail, ServeDetail)
    ]
    assert count(browser, "polyline.line") == len(windows)
    assert count(browser, "circle.pt") == sum(len(w) for w in windows)
    assert count(browser, "line.thr") == len(res.cells)  # each cell's measured median


def test_comparison_report(browser: Any, tmp_path: Path) -> None:
    mixed = charts.comparison_from_json(mixed_comparison_json(), "mixed")
    page = write_page(tmp_path / "compare.html", [charts.ComparisonInput("mixed.json", mixed)])
    open_page(browser, page, shots_dir(tmp_path), "compare")
    with_change = sum(1 for r in mixed.rows if r.delta_pct is not None)
    assert (
        count(browser, "rect.reg") + count(browser, "rect.imp") + count(browser, "rect.same")
        == with_change
    )
    assert count(browser, "rect.band") == len(mixed.rows)
    first = browser.evaluate("document.querySelector('section .verdict').textContent")
    assert first == mixed.verdict_line  # the verdict line comes first


@pytest.mark.parametrize(
    "name", ["size-sections.json", "size-symbols.json", "size-diff.json", "size-diff-symbols.json"]
)
def test_size_report(browser: Any, tmp_path: Path, name: str) -> None:
    doc = charts.sizes_from_json(load_json(FIXTURES / name), name)
    page = write_page(tmp_path / "size.html", [charts.SizesInput(name, doc)])
    open_page(browser, page, shots_dir(tmp_path), name.removesuffix(".json"))
    segs = count(browser, "rect.seg")
    if doc.view == "symbols" and not doc.diff:  # a treemap: 40 tiles and the rest as one
        (img,) = doc.images
        rows = [r for r in img.rows if r.file_bytes > 0]
        assert segs == min(len(rows), 40) + (1 if len(rows) > 40 else 0)
    elif doc.view == "symbols":  # a symbols diff has no stacked bars
        assert segs == 0
    else:  # stacked bars: the 9 largest labels, and the rest as one segment
        named = set(_categories(doc.images)[0])
        expected = 0
        for img in doc.images:
            held = {r.label for r in img.rows if r.file_bytes > 0}
            expected += len(held & named) + (1 if held - named else 0)
        assert segs == expected
    if doc.diff:
        raw = load_json(FIXTURES / name)["diff"][0]["rows"]
        changed = sum(1 for r in raw if r["old_file_bytes"] != r["new_file_bytes"])
        assert count(browser, "rect.reg") + count(browser, "rect.imp") == min(changed, 30)


def test_svg_files_render_alone(browser: Any, tmp_path: Path) -> None:
    """What --format svg writes, opened directly as a browser would from a README."""
    shots = shots_dir(tmp_path)
    cmp_doc = charts.comparison_from_json(mixed_comparison_json(), "mixed")
    files = {
        "table.svg": charts.results_svg(results.load(FIXTURES / "serve.json")),
        "compare.svg": charts.comparison_svg(cmp_doc),
        "size.svg": charts.sizes_svg(
            charts.sizes_from_json(load_json(FIXTURES / "size-sections.json"), "s")
        ),
    }
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(text)
        for dark in (False, True):
            load = browser.load(path, dark=dark)
            assert load.problems == [] and load.requests == []
            browser.screenshot(shots / f"{name}{'-dark' if dark else ''}.png", "svg")
    browser.load(tmp_path / "table.svg")
    assert count(browser, "circle.dot") == 18


def test_500_cells(browser: Any, tmp_path: Path) -> None:
    res = many_cells(500)
    page = write_page(tmp_path / "many.html", [charts.ResultsInput("many.json", res, None)])
    assert page.stat().st_size < 1_000_000
    load = browser.load(page)
    assert load.problems == [] and load.requests == []
    medians = [t for t in titles(browser, "rect.bar") if ": median " in t]
    assert len(medians) == sum(1 for c in res.cells if c.valid) == 490
    # Render time is measured by scripts/bench_report.py, not asserted here.
    timing = browser.timing()
    assert 0 < timing["dom_content_loaded"] <= timing["load"] <= timing["painted"]


def test_the_checks_catch_a_page_that_reaches_out(browser: Any, tmp_path: Path) -> None:
    """The load checks can fail: a report with an image and a script added is refused
    by its own Content-Security-Policy, and the refusals are reported."""
    text = charts.report_html([charts.ResultsInput("r.json", constructed_results(), None)])
    bad = text.replace(
        "<main>", '<main><img src="https://example.invalid/x.png"/><script>console.log(1)</script>'
    )
    path = tmp_path / "bad.html"
    path.write_text(bad)
    load = browser.load(path)
    assert any("Content Security Policy" in p for p in load.problems), load.problems


def test_setup_installs_chromium() -> None:
    """A fresh CI machine gets the browser from the project's own set-up."""
    setup = (Path(__file__).resolve().parents[2] / "scripts" / "setup.sh").read_text()
    packages = re.search(r"APT_PACKAGES=\(([^)]*)\)", setup)
    assert packages is not None and "chromium" in packages.group(1).split()
