"""The JSON document of `icount compare --format json` read back, as `icount report`
draws it, by its documented keys only (others are ignored, so fields added later do not
break the report). Pure: a parsed document in, objects out; a document that lacks what
the report needs raises ParseError naming the file. saved.py then checks that what it
says agrees with compare's own rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from icount.compare.explain import Move, moves_from_json
from icount.compare.model import Verdict
from icount.doc_reader import Reader

COMPARE_FORMAT = "icount-compare"
COMPARE_VERSIONS = (1, 2)  # 2 adds geometric_mean, which the page does not read


@dataclass(frozen=True)
class Side:
    median: float
    min: float
    max: float
    runs: int


@dataclass(frozen=True)
class TotalSide:
    """One side of a collected runtime's total per request (cells[].total.base/new)."""

    total: float | None
    interval: float | None  # the 95% half-width; None for a whole count or none
    valid: bool
    whole: bool = False  # a side without a runtime's figures: its whole count


@dataclass(frozen=True)
class CompareTotal:
    """A collected runtime's totals and how their change was judged (cells[].total)."""

    base: TotalSide | None
    new: TotalSide | None
    delta_pct: float | None
    interval: float | None  # the 95% half-width of the difference, in the cell's unit
    verdict: str | None  # None: the totals do not gate
    rule: str
    decides: bool

    @property
    def interval_pct(self) -> float | None:
        """The interval of the difference as a fraction of the base total."""
        base = self.base.total if self.base is not None else None
        if self.interval is None or not base:
            return None
        return self.interval / abs(base)


@dataclass(frozen=True)
class CompareRow:
    name: str
    path: str
    backend: str
    unit: str
    base: Side | None
    new: Side | None
    delta: float | None
    delta_pct: float | None
    threshold: float
    verdict: str
    why: str
    # the functions behind a changed cell's move, where both sides kept a profile
    moves: tuple[Move, ...] = ()
    # a collected runtime's totals, where the cell has them
    total: CompareTotal | None = None

    @property
    def label(self) -> str:
        return f"{self.name}/{self.path}" if self.path else self.name


@dataclass(frozen=True)
class DrawnComparison:
    """A comparison as the charts draw it: from a saved comparison's JSON (below) or from
    a Comparison (charts/models.py). Not export/documents.ComparisonDoc, which is what
    compare hands to an output format."""

    verdict_line: str
    forced: tuple[str, ...]  # "field: base X, new Y" per environment difference
    rows: tuple[CompareRow, ...]
    summary: tuple[tuple[str, int], ...]  # verdict -> count, in the document's order
    median_ratio: float | None
    pairs: int | None


def _side(r: Reader, doc: Any, what: str) -> Side | None:
    if doc is None:
        return None
    d = r.obj(doc, what)
    runs = d.get("runs", 0)
    return Side(
        r.num(d, "median", what),
        r.num(d, "min", what),
        r.num(d, "max", what),
        runs if isinstance(runs, int) and not isinstance(runs, bool) else 0,
    )


def _total_side(r: Reader, doc: Any, whole: float | None, what: str) -> TotalSide | None:
    if doc is None:
        return None if whole is None else TotalSide(whole, None, True, whole=True)
    d = r.obj(doc, what)
    return TotalSide(
        r.opt_num(d, "total", what), r.opt_num(d, "interval_95", what), d.get("valid") is True
    )


def _total(r: Reader, doc: Any, what: str) -> CompareTotal | None:
    """cells[].total, where a cell has one (only a collected runtime's does)."""
    if doc is None:
        return None
    d = r.obj(doc, what)
    verdict = d.get("verdict")
    if verdict is not None:
        verdict = _verdict(r, verdict, what, _TOTAL_VERDICTS)
    return CompareTotal(
        base=_total_side(r, d.get("base"), r.opt_num(d, "base_whole", what), f"{what} base"),
        new=_total_side(r, d.get("new"), r.opt_num(d, "new_whole", what), f"{what} new"),
        delta_pct=r.opt_num(d, "delta_pct", what),
        interval=r.opt_num(d, "interval_95", what),
        verdict=verdict,
        rule=r.text(d, "rule", what, ""),
        decides=d.get("decides") is True,
    )


# shown on the page as written: only the verdicts compare writes
_CELL_VERDICTS = frozenset(v.value for v in Verdict)
_TOTAL_VERDICTS = frozenset(v.value for v in (Verdict.REGRESSED, Verdict.IMPROVED,
                                              Verdict.UNCHANGED))  # fmt: skip


def _verdict(r: Reader, verdict: object, what: str, allowed: frozenset[str]) -> str:
    if not isinstance(verdict, str) or verdict not in allowed:
        raise r.fail(f"{what}: 'verdict' {verdict!r} is not one compare writes")
    return verdict


def _moves(r: Reader, doc: Any, what: str) -> tuple[Move, ...]:
    try:
        return moves_from_json(doc)
    except ValueError as e:
        raise r.fail(f"{what}: {e}") from None


def comparison_from_json(doc: Any, src: str) -> DrawnComparison:
    r = Reader(src)
    d = r.obj(doc, "the document")
    if d.get("format") != COMPARE_FORMAT:
        raise r.fail(f'not an icount comparison (no "format": "{COMPARE_FORMAT}")')
    if d.get("version") not in COMPARE_VERSIONS:
        raise r.fail(
            f"comparison format version {d.get('version')!r}; this icount reads version "
            + ", ".join(map(str, COMPARE_VERSIONS))
        )
    rows = []
    for i, raw in enumerate(r.items(d, "cells", "the comparison"), 1):
        what = f"cell {i}"
        c = r.obj(raw, what)
        rows.append(
            CompareRow(
                name=r.text(c, "name", what),
                path=r.text(c, "path", what, ""),
                backend=r.text(c, "backend", what, ""),
                unit=r.text(c, "unit", what, ""),
                base=_side(r, c.get("base"), f"{what} base"),
                new=_side(r, c.get("new"), f"{what} new"),
                delta=r.opt_num(c, "delta", what),
                delta_pct=r.opt_num(c, "delta_pct", what),
                threshold=r.num(c, "threshold", what),
                verdict=_verdict(r, r.text(c, "verdict", what), what, _CELL_VERDICTS),
                why=r.text(c, "why", what, ""),
                moves=_moves(r, c.get("explained"), what),
                total=_total(r, c.get("total"), f"{what} total"),
            )
        )
    forced = []
    for f in r.items(d, "forced", "the comparison") if d.get("forced") is not None else []:
        f = r.obj(f, "a forced difference")
        field = r.text(f, "field", "a forced difference")
        forced.append(f"{field}: base {f.get('base')!r}, new {f.get('new')!r}")
    summary_raw = d.get("summary")
    summary = (
        tuple((k, v) for k, v in summary_raw.items() if isinstance(v, int) and v)
        if isinstance(summary_raw, dict)
        else ()
    )
    pairs = d.get("pairs")
    return DrawnComparison(
        verdict_line=r.text(d, "verdict_line", "the comparison"),
        forced=tuple(forced),
        rows=tuple(rows),
        summary=summary,
        median_ratio=r.opt_num(d, "median_ratio", "the comparison"),
        pairs=len(pairs) if isinstance(pairs, list) else None,
    )
