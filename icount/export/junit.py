"""JUnit XML of a comparison, for CI systems that show test reports (GitLab's
`artifacts:reports:junit`, Jenkins, GitHub test-report actions).

One <testcase> per cell, named by its label, its class `icount.BACKEND`: a regression
is a <failure>, a cell invalid on either side an <error>, a cell missing on one side
<skipped> (there is nothing to compare); improved and unchanged cells pass. Every
testcase's <system-out> holds the figures and the note of the verdict (why the
threshold, the rerun of --confirm). A collected runtime's cell also has <properties>
(as pytest's record_property writes them, before the outcome): its totals per request
under the names of the CSV's columns (base_total, base_total_interval_95, new_total,
new_total_interval_95, total_delta_pct, total_interval_95, total_verdict, total_rule)
and total_decides, plain numbers, a figure that is not there left out; and the totals'
line of the terminal table in its <system-out>. No timestamps or times: the same comparison gives
the same bytes. Names from input files are escaped (icount.text.printable): XML 1.0
cannot hold most control characters even as references.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

from icount.compare.model import Comparison, Row, TotalChange, Verdict
from icount.export import documents as d
from icount.export.keys import cell_words, refuse_collisions
from icount.numfmt import plain, signed_percent
from icount.text import printable

SUITE = "icount compare"
ERRORS = frozenset({Verdict.INVALID_IN_BASE, Verdict.INVALID_IN_NEW})
SKIPPED = frozenset({Verdict.MISSING_IN_BASE, Verdict.MISSING_IN_NEW})


def _figures(r: Row) -> str:
    from icount.compare import render as compare

    lines = [f"verdict: {compare.verdict_text(r)}"]
    for side, s in (("base", r.base), ("new", r.new), ("rerun", r.confirm)):
        if s is not None:
            lines.append(
                f"{side}: median {plain(s.median)} (min {plain(s.min)}, max {plain(s.max)}, "
                f"{s.n} runs) {r.unit}"
            )
    if r.delta is not None:
        change = f" ({signed_percent(r.delta_pct)})" if r.delta_pct is not None else ""
        lines.append(f"delta: {plain(r.delta)}{change}")
    lines.append(f"threshold: {compare.pct_text(r.threshold)} ({r.rule})")
    note = compare.note(r)
    if note:
        lines.append(f"note: {note}")
    if r.total is not None:
        lines.append(compare.total_line(r.label, r.total))
    return "\n".join(printable(line) for line in lines) + "\n"


def _total_properties(case: ET.Element, t: TotalChange) -> None:
    """The totals as properties: CSV's column names, plain numbers."""
    b, n = t.base, t.new
    values: list[tuple[str, str | None]] = [
        ("base_total", _plain(b.total if b is not None else t.base_whole)),
        ("base_total_interval_95", _plain(b.half_width if b is not None else None)),
        ("new_total", _plain(n.total if n is not None else t.new_whole)),
        ("new_total_interval_95", _plain(n.half_width if n is not None else None)),
        ("total_delta_pct", None if t.delta_pct is None else f"{t.delta_pct * 100:.4f}"),
        ("total_interval_95", _plain(t.interval)),
        ("total_verdict", t.verdict.value if t.verdict is not None else None),
        ("total_rule", t.rule),
        ("total_decides", "true" if t.decides else "false"),
    ]
    props = ET.SubElement(case, "properties")
    for name, value in values:
        if value is not None:
            ET.SubElement(props, "property", {"name": name, "value": printable(value)})


def _plain(x: float | None) -> str | None:
    return plain(x) if x is not None and math.isfinite(x) else None


def _message(r: Row) -> str:
    from icount.compare import render as compare

    change = signed_percent(r.delta_pct) if r.delta_pct is not None else ""
    head = f"{compare.shown_as(r.verdict, r.why, r.delta)} {change}".rstrip()
    if r.verdict is Verdict.REGRESSED:
        head += f", beyond its threshold {compare.pct_text(r.threshold)}"
    note = compare.note(r)
    return printable(f"{head}: {note}" if note else head)


def document(c: Comparison) -> ET.Element:
    from icount.compare import geomean
    from icount.compare import render as compare

    counts = {
        "tests": len(c.rows),
        "failures": c.count(Verdict.REGRESSED),
        "errors": sum(1 for r in c.rows if r.verdict in ERRORS),
        "skipped": sum(1 for r in c.rows if r.verdict in SKIPPED),
    }
    totals = {k: str(v) for k, v in counts.items()}
    root = ET.Element("testsuites", {"name": SUITE, **totals})
    suite = ET.SubElement(root, "testsuite", {"name": SUITE, **totals})
    props = ET.SubElement(suite, "properties")
    ET.SubElement(
        props, "property", {"name": "verdict", "value": printable(compare.verdict_line(c))}
    )
    for line in compare.allowed_lines(c):  # --force, --allow-build-change
        ET.SubElement(props, "property", {"name": "allowed", "value": printable(line)})
    mean = geomean.line(c) if c.pairs is None else None
    if mean:
        ET.SubElement(props, "property", {"name": "geometric_mean", "value": mean})
    names = [(f"icount.{printable(r.backend)}", printable(r.label)) for r in c.rows]
    refuse_collisions(
        zip(names, (cell_words(*r.key) for r in c.rows), strict=True),
        "junit",
        "test case",
        lambda k: f"{k[1]} of class {k[0]}",
    )
    for r, (classname, name) in zip(c.rows, names, strict=True):
        case = ET.SubElement(suite, "testcase", {"classname": classname, "name": name})
        if r.total is not None:
            _total_properties(case, r.total)
        if r.verdict is Verdict.REGRESSED:
            ET.SubElement(case, "failure", {"type": "regressed", "message": _message(r)})
        elif r.verdict in ERRORS:
            ET.SubElement(case, "error", {"type": r.verdict.value, "message": _message(r)})
        elif r.verdict in SKIPPED:
            ET.SubElement(case, "skipped", {"message": _message(r)})
        ET.SubElement(case, "system-out").text = _figures(r)
    return root


def render(doc: d.Document, width: int) -> str:
    del width
    if isinstance(doc, d.ComparisonDoc):
        root = document(doc.comparison)
        ET.indent(root)
        body = ET.tostring(root, encoding="unicode")
        return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'
    raise TypeError(f"no JUnit XML of {type(doc).__name__}")
