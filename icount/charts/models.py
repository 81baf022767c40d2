"""icount's typed models read into what the charts draw, for `--format svg`: the same
DrawnComparison and DrawnSizes as inputs.py reads from the JSON files, built from the
Comparison and the size Breakdowns directly (no JSON text in between), so a chart of
a command's output and the report of its JSON file draw the same marks."""

from __future__ import annotations

import math
from collections.abc import Sequence

from icount.charts.inputs import DrawnSizes, SizeImage, SizeRow, diff_pair, distinct_names
from icount.compare.drawn import CompareRow, CompareTotal, DrawnComparison, Side, TotalSide
from icount.compare.model import VERDICT_ORDER, Comparison, Row, TotalChange
from icount.compare.render import verdict_line
from icount.labels import distinct_suffixes
from icount.results.runtime import RuntimeFigures
from icount.size.model import Breakdown
from icount.size.render import diff_rows
from icount.stats import Summary


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _side(s: Summary | None) -> Side | None:
    return None if s is None else Side(float(s.median), float(s.min), float(s.max), s.n)


def _row(r: Row) -> CompareRow:
    return CompareRow(
        name=r.name,
        path=r.path,
        backend=r.backend,
        unit=r.unit,
        base=_side(r.base),
        new=_side(r.new),
        delta=_finite(r.delta),
        delta_pct=_finite(r.delta_pct),
        threshold=r.threshold,
        verdict=r.verdict.value,
        why=r.why,
        moves=r.explained.moves if r.explained is not None else (),
        total=None if r.total is None else _total(r.total),
    )


def _total_side(f: RuntimeFigures | None, whole: float | None) -> TotalSide | None:
    """As inputs.py reads cells[].total.base/new (and base_whole/new_whole)."""
    if f is None:
        return None if whole is None else TotalSide(float(whole), None, True, whole=True)
    return TotalSide(f.total, _finite(f.half_width), f.total_valid)


def _total(t: TotalChange) -> CompareTotal:
    return CompareTotal(
        base=_total_side(t.base, t.base_whole),
        new=_total_side(t.new, t.new_whole),
        delta_pct=_finite(t.delta_pct),
        interval=_finite(t.interval),
        verdict=t.verdict.value if t.verdict is not None else None,
        rule=t.rule,
        decides=t.decides,
    )


def comparison_doc(c: Comparison) -> DrawnComparison:
    counts = ((v.value, c.count(v)) for v in VERDICT_ORDER)
    return DrawnComparison(
        verdict_line=verdict_line(c),
        forced=tuple(f"{d.field}: base {d.base!r}, new {d.new!r}" for d in c.forced),
        rows=tuple(_row(r) for r in c.rows),
        summary=tuple((v, n) for v, n in counts if n),
        median_ratio=_finite(c.median_ratio),
        pairs=None if c.pairs is None else len(c.pairs),
    )


def _image(b: Breakdown, name: str, rows: tuple[SizeRow, ...]) -> SizeImage:
    """As inputs.py names an image: by the shortest part of its path that tells it from
    the others (labels.distinct_suffixes; the totals are the breakdown's own, which the
    JSON's file_bytes and vm_bytes are)."""
    return SizeImage(name, b.arch, b.fmt, b.kind, b.file_total, b.vm_total, rows)


def size_doc(items: Sequence[Breakdown], view: str) -> DrawnSizes:
    """What `icount size --format json` prints, for its chart."""
    names = distinct_suffixes([b.path for b in items])
    images = [
        _image(b, name, tuple(SizeRow(r.label, r.file, r.vm) for r in b.rows))
        for b, name in zip(items, names, strict=True)
    ]
    return DrawnSizes(view, tuple(distinct_names(images)), False)


def size_diff_doc(pairs: Sequence[tuple[Breakdown, Breakdown]], view: str) -> DrawnSizes:
    """What `icount size --diff --format json` prints: each side with every row of the
    diff (0 where that side lacks the row), old and new named apart."""
    images: list[SizeImage] = []
    names = iter(distinct_suffixes([b.path for pair in pairs for b in pair]))
    for old, new in pairs:
        rows = diff_rows(old, new)
        images += diff_pair(
            _image(old, next(names), tuple(SizeRow(d.label, d.old_file, d.old_vm) for d in rows)),
            _image(new, next(names), tuple(SizeRow(d.label, d.new_file, d.new_vm) for d in rows)),
        )
    return DrawnSizes(view, tuple(images), True)
