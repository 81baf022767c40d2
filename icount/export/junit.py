"""JUnit XML of a comparison, for CI systems that show test reports (GitLab's
`artifacts:reports:junit`, Jenkins, GitHub test-report actions).

One <testcase> per cell, named by its label, its class `icount.BACKEND`: a regression
is a <failure>, a cell invalid on either side an <error>, a cell missing on one side
<skipped> (there is nothing to compare); improved and unchanged cells pass. Every
testcase's <system-out> holds the figures and the note of the verdict (why the
threshold, the rerun of --confirm). No timestamps or times: the same comparison gives
the same bytes. Names from input files are escaped (icount.text.printable): XML 1.0
cannot hold most control characters even as references.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from icount.compare.model import Comparison, Row, Verdict
from icount.export import documents as d
from icount.numfmt import plain, signed_percent
from icount.text import printable

SUITE = "icount compare"
ERRORS = frozenset({Verdict.INVALID_IN_BASE, Verdict.INVALID_IN_NEW})
SKIPPED = frozenset({Verdict.MISSING_IN_BASE, Verdict.MISSING_IN_NEW})


def _figures(r: Row) -> str:
    from icount.compare import render as compare

    lines = [f"verdict: {r.verdict.value}"]
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
    return "\n".join(printable(line) for line in lines) + "\n"


def _message(r: Row) -> str:
    from icount.compare import render as compare

    change = signed_percent(r.delta_pct) if r.delta_pct is not None else ""
    head = f"{r.verdict.value} {change}".rstrip()
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
    for r in c.rows:
        case = ET.SubElement(
            suite,
            "testcase",
            {"classname": f"icount.{printable(r.backend)}", "name": printable(r.label)},
        )
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
