"""Bencher Metric Format (BMF) JSON: what `bencher run --adapter json` reads.

    {"BENCHMARK": {"MEASURE": {"value": N, "lower_value": N, "upper_value": N}}}

(https://bencher.dev/docs/reference/bencher-metric-format: `value` required, the
bounds optional numbers). A benchmark is a cell, named by its label (with its backend
where one label is measured by two), a measure is its unit: `instructions`,
`instructions-per-request` or `size` (bytes), and `memory` (peak RSS in bytes, where
`--memory` measured it). The value is the median of the valid runs, the bounds their
minimum and maximum. For a comparison these are the new side's: a cell without a
valid new figure has no number for Bencher and is left out (every other format shows
it). Keys sorted, no timestamp: the same cells give the same bytes.

A collected runtime's cell (results/runtime.py) has a second measure, `total-` and its
unit's (`total-instructions-per-request`): the total per request, mutator + the
runtime's own work, its bounds the total's 95% interval; the unit's measure stays the
mutator, the cell's figure. Only where that total is valid (a `~` total has no number
to track), and a side without a runtime's figures (a file written before the work was
counted apart) has none: its figure, the whole count, is its unit's measure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from icount.compare.model import Comparison
from icount.errors import UsageError
from icount.escapes import json_text
from icount.export import documents as d
from icount.export.keys import cell_words, refuse_collisions
from icount.jsonout import dumps
from icount.numfmt import UNIT_BYTES
from icount.results import UNIT_INSTRUCTIONS, UNIT_PER_REQUEST
from icount.results.runtime import RuntimeFigures
from icount.stats import Summary
from icount.text import printable

MEASURES = {
    UNIT_INSTRUCTIONS: "instructions",
    UNIT_PER_REQUEST: "instructions-per-request",
    UNIT_BYTES: "size",
}


def measure(unit: str) -> str:
    """The measure slug of a unit (Bencher: at most 64 characters, kebab case)."""
    known = MEASURES.get(unit)
    if known is not None:
        return known
    slug = "".join(ch if ch.isalnum() else "-" for ch in unit.lower()).strip("-")
    return slug[:64] or "value"


def metric(s: Summary) -> dict[str, float]:
    return {"value": s.median, "lower_value": s.min, "upper_value": s.max}


MEMORY = "memory"  # peak RSS, bytes
TOTAL = "total-"  # before a unit's measure: a collected runtime's total of that unit

# label, backend, unit, value, peak, a collected runtime's figures where it has them, and
# the cell as a refusal names it (keys.cell_words)
Item = tuple[str, str, str, Summary | None, Summary | None, RuntimeFigures | None, str]


def total_metric(f: RuntimeFigures | None) -> dict[str, float] | None:
    """The total per request and its 95% interval, where it is valid."""
    if f is None or f.total is None or not f.total_valid or not math.isfinite(f.half_width):
        return None
    return {
        "value": f.total,
        "lower_value": f.total - f.half_width,
        "upper_value": f.total + f.half_width,
    }


def document(items: Iterable[Item]) -> dict[str, Any]:
    """{benchmark: {measure: metric}} of (label, backend, unit, summary, memory, runtime,
    cell) items; UsageError where two cells would be one benchmark."""
    items = [i for i in items if i[3] is not None]
    backends: dict[str, set[str]] = {}
    for label, backend, *_ in items:
        backends.setdefault(label, set()).add(backend)

    def name_of(label: str, backend: str) -> str:
        return label if len(backends[label]) == 1 else f"{label} ({backend})"

    refuse_collisions(((name_of(i[0], i[1]), i[6]) for i in items), "bmf", "benchmark")
    doc: dict[str, dict[str, Any]] = {}
    for label, backend, unit, s, peak, runtime, cell in items:
        assert s is not None
        name = name_of(label, backend)
        measures = {measure(unit): metric(s)}
        if peak is not None:
            measures[MEMORY] = metric(peak)
        total = total_metric(runtime)
        if total is not None:
            measures[TOTAL + measure(unit)] = total
        if len(measures) < 1 + (peak is not None) + (total is not None):  # a unit "memory"
            raise UsageError(f"--format bmf: {cell}: its unit {printable(unit)!r} is the "
                             "name of another of its measures")  # fmt: skip
        doc[name] = measures
    return doc


def _label(name: str, path: str) -> str:
    return f"{name}/{path}" if path else name


def _controls(c: Comparison) -> list[Item]:
    """An interleaved cell's control arm, a benchmark of its own ("LABEL (control)"):
    the median, min and max of its rounds, whose spread is the drift the comparison's
    claims were bounded by."""
    from icount.stats import summarize

    arms = [(r, r.rounds.control) for r in c.rows if r.rounds is not None]
    return [
        (
            f"{r.label} (control)",
            r.backend,
            r.unit,
            summarize(ctl.counted),
            None,
            None,
            f"the control of {cell_words(*r.key)}",
        )
        for r, ctl in arms
        if ctl is not None and ctl.counted
    ]


def render(doc: d.Document, width: int) -> str:
    del width
    if isinstance(doc, d.ComparisonDoc):
        c = doc.comparison
        peaks = dict(c.memory)
        items: list[Item] = [
            (r.label, r.backend, r.unit, r.new, peaks.get(r.key),
             r.total.new if r.total else None, cell_words(*r.key))
            for r in c.rows
        ]  # fmt: skip
        return json_text(dumps(document([*items, *_controls(c)])))
    if isinstance(doc, d.ResultsDoc):
        from icount import memory

        cells = [c for c in doc.results.cells if c.valid]
        return json_text(
            dumps(
                document(
                    (
                        _label(c.name, c.path),
                        c.backend,
                        c.unit,
                        c.summary,
                        memory.summary(c),
                        c.runtime,
                        cell_words(*c.key),
                    )
                    for c in cells
                )
            )
        )
    raise TypeError(f"no BMF of {type(doc).__name__}")
