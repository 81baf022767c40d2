#!/usr/bin/env python3
"""Benchmark `icount report` on a large results file: the page's size, the time icount
takes to write it, and the time a browser takes to render it.

Usage: python3 scripts/bench_report.py [--cells N] [--reps N]

A results file of N cells (default 500; 3 runs each, one cell in 50 failed) is built
with icount's own results code. Measured, each the median of --reps:
  - icount: `charts.report_html` in-process, against `export.render_results` of the
    same results as a terminal table (the reference: what `icount table` does);
  - the browser: headless Chromium loads the page from a file; the figure is the time
    from the start of navigation to the second animation frame after the load event
    (the page parsed, styled, laid out and painted), read inside the page. The
    reference is the same page without its charts (its tables and text only), loaded
    in the same browser in the same run, alternately.
Goals (issue 14): under 1 MB and under 1 s in the browser for 500 cells.

--fan-in CALLERS,CALLS instead times every step from a callgrind profile to a page, on
the profile tests/report/fan_in.py writes (issue 30's shape: 400 callers of one
function, 300,000 calls): parsing it, its functions and calls (window_profile), the
cell's profile (cell_profile, --top functions), then `icount report` and `icount table`
on the results file, each a fresh process. Goal: the report within a few seconds.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from icount import charts, export  # noqa: E402
from tests.report.browser import Browser, find_chromium  # noqa: E402
from tests.report.conftest import many_cells  # noqa: E402
from tests.report.fan_in import fan_in_text  # noqa: E402


def median_ms(fn: object, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def fan_in(callers: int, calls: int, top: int, reps: int) -> None:
    import subprocess

    from icount.callgrind.functions import window_profile
    from icount.callgrind.parser import parse_bytes
    from icount.results import UNIT_INSTRUCTIONS, Cell, Results, Run
    from icount.results.cell_profile import PER_RUN, cell_profile
    from icount.results.files import results_json

    data = fan_in_text(callers, calls).encode()
    print(f"profile: {callers:,} callers of one function, {calls:,} calls, {len(data):,} bytes")
    prof = parse_bytes(data, "fan-in")
    window = window_profile(prof, top)
    profile = cell_profile([(window, 1)], PER_RUN)
    steps = {
        "parse": lambda: parse_bytes(data, "fan-in"),
        "window_profile": lambda: window_profile(prof, top),
        "cell_profile": lambda: cell_profile([(window, 1)], PER_RUN),
    }
    for name, fn in steps.items():
        print(f"{name}: {median_ms(fn, reps):.1f} ms")
    runs = (Run(float(prof.totals["Ir"]), True),)
    cell = Cell("fan-in", "", "callgrind", UNIT_INSTRUCTIONS, runs, {}, 1, 0.01, profile=profile)
    with tempfile.TemporaryDirectory() as tmp:
        res = Path(tmp) / "fan-in.json"
        res.write_text(results_json(Results({"backend": "callgrind"}, (cell,))))
        for argv in (["report", str(res), "-o", str(Path(tmp) / "page.html"), "-q"],
                     ["table", str(res)]):  # fmt: skip

            def run(argv: list[str] = argv) -> None:
                subprocess.run([sys.executable, "-m", "icount", *argv], cwd=ROOT, check=True,
                               capture_output=True)  # fmt: skip

            print(f"icount {argv[0]}: {median_ms(run, reps):.0f} ms (a fresh process)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", type=int, default=500)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--fan-in", metavar="CALLERS,CALLS", help="time a profile's way to a page")
    ap.add_argument("--top", type=int, default=20, help="with --fan-in: functions kept")
    args = ap.parse_args()
    if args.fan_in:
        callers, calls = (int(x) for x in args.fan_in.split(","))
        fan_in(callers, calls, args.top, args.reps)
        return

    res = many_cells(args.cells)
    items = [charts.ResultsInput("many.json", res, None)]
    page = charts.report_html(items)
    size = len(page.encode())
    write_ms = median_ms(lambda: charts.report_html(items), args.reps)
    table_ms = median_ms(lambda: export.render_results(res, "table", 120), args.reps)
    print(f"{args.cells} cells: page {size:,} bytes ({size / 1e6:.3f} MB; goal < 1 MB)")
    print(
        f"icount writes it in {write_ms:.1f} ms; the terminal table of the same results "
        f"{table_ms:.1f} ms ({write_ms / table_ms:.2f}x)"
    )

    binary = find_chromium()
    if binary is None:
        sys.exit("chromium is not installed (scripts/setup.sh installs it)")
    bare = re.sub(r'<div class="chart">.*?</div>', "", page, flags=re.S)
    with tempfile.TemporaryDirectory() as tmp:
        full, plain = Path(tmp) / "report.html", Path(tmp) / "plain.html"
        full.write_text(page)
        plain.write_text(bare)
        browser = Browser(binary)
        try:
            browser.load(full)  # a first load warms the browser's caches up
            got: dict[Path, list[float]] = {full: [], plain: []}
            marks = 0
            for _ in range(args.reps):
                for p in (full, plain):
                    load = browser.load(p)
                    if load.problems or load.requests:
                        sys.exit(f"{p.name}: {load.problems} {load.requests}")
                    got[p].append(browser.timing()["painted"])
                    if p is full:
                        marks = browser.evaluate("document.querySelectorAll('svg *').length")
        finally:
            browser.close()
    with_charts, without = statistics.median(got[full]), statistics.median(got[plain])
    print(
        f"chromium renders it in {with_charts:.0f} ms (median of {args.reps}; "
        f"min {min(got[full]):.0f}, max {max(got[full]):.0f}; {marks:,} SVG elements; "
        "goal < 1000 ms)"
    )
    print(
        f"the same page without its charts: {without:.0f} ms; "
        f"with charts {with_charts / without:.2f}x"
    )


if __name__ == "__main__":
    main()
