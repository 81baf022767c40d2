"""Every kind of picture icount draws, with long and hostile-but-realistic labels
(labels_inputs.py), laid out by headless Chromium: no text leaves its chart, runs
into another text, or reaches into a mark it is not drawn on (a label into the bar
beside it, a tile's name past the tile's edge), and no table cell cuts what it holds.

The charts shorten labels with an estimate of their width (an SVG cannot measure its
text); this is where the estimate meets the font the browser really draws. The page
has no scripts (its Content-Security-Policy refuses them): the measuring runs over
DevTools (browser.py), which the page's policy does not govern.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from icount import charts

from . import labels_inputs
from .test_browser import shots_dir

# Boxes in each chart's own units (its viewBox), through any transform inside it.
MEASURE = """(() => {
  const slack = 0.5;
  const out = [];
  const marks = 'rect.bar, rect.bar2, rect.bad, rect.reg, rect.imp, rect.same, rect.seg, '
    + '.legend rect, g.flame rect';
  document.querySelectorAll('details').forEach(d => d.open = true);
  document.querySelectorAll('svg.ic').forEach((svg, k) => {
    const view = svg.viewBox.baseVal;
    const r = svg.getBoundingClientRect();
    const s = r.width / view.width;
    const box = e => {
      const b = e.getBoundingClientRect();
      return {l: (b.left - r.left) / s, r: (b.right - r.left) / s,
              t: (b.top - r.top) / s, b: (b.bottom - r.top) / s};
    };
    const name = `chart ${k} (${svg.querySelector('title').textContent.slice(0, 60)})`;
    const texts = [...svg.querySelectorAll('text')]
      .filter(t => t.textContent.trim() && t.getComputedTextLength() > 0)
      .map(t => ({t, b: box(t), cls: t.getAttribute('class') || '',
                  s: t.firstChild.textContent}));
    const rects = [...svg.querySelectorAll(marks)].map(e => ({e, b: box(e)}))
      .filter(x => x.b.r - x.b.l > 0 && x.b.b - x.b.t > 0);
    const across = (a, b) => Math.min(a.r, b.r) - Math.max(a.l, b.l);
    const down = (a, b) => Math.min(a.b, b.b) - Math.max(a.t, b.t);
    for (const x of texts) {
      if (x.b.l < -slack || x.b.r > view.width + slack)
        out.push(`${name}: '${x.s}' leaves the chart (${x.b.l.toFixed(1)} to `
                 + `${x.b.r.toFixed(1)} of ${view.width})`);
      for (const y of texts) {
        // the glyphs' boxes are taller than the letters: rows 2 px apart do not touch
        if (x !== y && x.b.l <= y.b.l && across(x.b, y.b) > slack && down(x.b, y.b) > 4)
          out.push(`${name}: '${x.s}' runs into '${y.s}' (${across(x.b, y.b).toFixed(1)} px)`);
      }
      const mid = (x.b.t + x.b.b) / 2;
      for (const m of rects) {
        const on = x.cls.split(' ').includes('in') && m.b.l <= x.b.l + 4 && x.b.l < m.b.r
          && m.b.t <= mid && mid <= m.b.b;
        if (on && x.b.r > m.b.r + slack)
          out.push(`${name}: '${x.s}' reaches ${(x.b.r - m.b.r).toFixed(1)} px past its mark`);
        else if (!on && !x.cls.split(' ').includes('in') && across(x.b, m.b) > slack
                 && down(x.b, m.b) > 3)
          out.push(`${name}: '${x.s}' runs into a mark (${across(x.b, m.b).toFixed(1)} px)`);
      }
    }
  });
  document.querySelectorAll('td, th').forEach(c => {
    if (c.scrollWidth > c.clientWidth + 1) out.push(`table cell '${c.textContent}' is cut`);
  });
  return out;
})()"""


def overflows(browser: Any, page: Path) -> list[str]:
    load = browser.load(page)
    assert load.problems == [] and load.requests == []
    got = browser.evaluate(MEASURE)
    assert isinstance(got, list)
    return [str(x) for x in got]


def figures(browser: Any) -> int:
    n = browser.evaluate("document.querySelectorAll('svg.ic').length")
    assert isinstance(n, int)
    return n


@pytest.mark.slow
def test_no_label_overflows_its_box(browser: Any, tmp_path: Path) -> None:
    """The report page of every section kind: results (bars, a runtime's stacked bars,
    warm-up curves, a flame graph), a comparison, sizes (stacked sections, a treemap of
    C++ symbols, a diff) and a history."""
    page = tmp_path / "labels.html"
    page.write_text(charts.report_html(labels_inputs.items()))
    found = overflows(browser, page)
    browser.screenshot(shots_dir(tmp_path) / "labels.png")
    # each kind is on the page: bars, runtime, warm-up, flame, comparison, stacked
    # sizes, a treemap, a size diff (two sections) and a history (a chart per cell)
    assert figures(browser) >= 10
    assert found == [], "\n".join(found)
    # a table wider than the page scrolls, and its edge shows there is more (the
    # Numbers table looked cut at 'thr' where nothing said it went on)
    wide = browser.evaluate(
        "[...document.querySelectorAll('.scroll')].filter(s => s.scrollWidth > s.clientWidth)"
        ".map(s => getComputedStyle(s).backgroundAttachment)"
    )
    assert wide and all("local" in w and "scroll" in w for w in wide), wide
    # on a phone, a file's name short enough for a line is on one line, not broken at
    # a hyphen ('size-' at the end of one line, 'sections-three-builds.json' on the next)
    browser.load(page, width=390)
    broken = browser.evaluate(
        "[...document.querySelectorAll('.nm')].filter(s => s.textContent.length <= 28"
        " && s.getBoundingClientRect().height > 1.5 * parseFloat(getComputedStyle(s).lineHeight))"
        ".map(s => s.textContent)"
    )
    assert broken == []


@pytest.mark.slow
def test_standalone_svgs_keep_their_labels_inside(browser: Any, tmp_path: Path) -> None:
    """What --format svg writes: each file opened alone, at its own size."""
    files = {
        "table.svg": charts.results_svg(labels_inputs.results()),
        "runtime.svg": charts.results_svg(labels_inputs.runtime()),
        "compare.svg": charts.comparison_svg(labels_inputs.comparison()),
        "size.svg": charts.sizes_svg(labels_inputs.sizes()),
        "symbols.svg": charts.sizes_svg(labels_inputs.symbols()),
        "diff.svg": charts.sizes_svg(labels_inputs.size_diff()),
    }
    found: list[str] = []
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(text)
        found += [f"{name}: {x}" for x in overflows(browser, path)]
    assert found == [], json.dumps(found, indent=1)
