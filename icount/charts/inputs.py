"""The JSON documents of `icount compare --format json` and `icount size --format json`
read into what the charts draw, by their documented keys only (others are ignored, so
fields added later do not break the report). Pure: a parsed document in, objects out;
a document that lacks what the charts need raises ParseError naming the file."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from icount.compare.explain import Move, moves_from_json
from icount.compare.model import Verdict
from icount.errors import ParseError
from icount.labels import distinct_suffixes

COMPARE_FORMAT = "icount-compare"
COMPARE_VERSIONS = (1, 2)  # 2 adds geometric_mean, which the page does not read
SIZE_FORMAT = "icount-size"


# ---------------------------------------------------------------- comparisons


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
class ComparisonDoc:
    verdict_line: str
    forced: tuple[str, ...]  # "field: base X, new Y" per environment difference
    rows: tuple[CompareRow, ...]
    summary: tuple[tuple[str, int], ...]  # verdict -> count, in the document's order
    median_ratio: float | None
    pairs: int | None


class _Reader:
    """Typed access to one JSON document, failing with the file's name and the key."""

    def __init__(self, src: str) -> None:
        self.src = src

    def fail(self, what: str) -> ParseError:
        return ParseError(what, source=self.src)

    def obj(self, doc: Any, what: str) -> Mapping[str, Any]:
        if not isinstance(doc, dict):
            raise self.fail(f"{what} is not an object")
        return doc

    def items(self, doc: Mapping[str, Any], key: str, what: str) -> list[Any]:
        v = doc.get(key)
        if not isinstance(v, list):
            raise self.fail(f"{what}: {key!r} is missing or not a list")
        return v

    def text(self, doc: Mapping[str, Any], key: str, what: str, default: str | None = None) -> str:
        v = doc.get(key, default)
        if not isinstance(v, str):
            raise self.fail(f"{what}: {key!r} is missing or not a string")
        return v

    def num(self, doc: Mapping[str, Any], key: str, what: str) -> float:
        v = self.opt_num(doc, key, what)
        if v is None:
            raise self.fail(f"{what}: {key!r} is missing or not a number")
        return v

    def opt_num(self, doc: Mapping[str, Any], key: str, what: str) -> float | None:
        v = doc.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise self.fail(f"{what}: {key!r} is not a number")
        if not abs(v) < 2.0**63:  # as results files: no figure icount writes is 1e308
            raise self.fail(f"{what}: {key!r} {v!r} is beyond any figure icount writes")
        return float(v)

    def count(self, doc: Mapping[str, Any], key: str, what: str) -> int:
        v = doc.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise self.fail(f"{what}: {key!r} is missing or not a byte count")
        return v


def _side(r: _Reader, doc: Any, what: str) -> Side | None:
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


def _total_side(r: _Reader, doc: Any, whole: float | None, what: str) -> TotalSide | None:
    if doc is None:
        return None if whole is None else TotalSide(whole, None, True, whole=True)
    d = r.obj(doc, what)
    return TotalSide(
        r.opt_num(d, "total", what), r.opt_num(d, "interval_95", what), d.get("valid") is True
    )


def _total(r: _Reader, doc: Any, what: str) -> CompareTotal | None:
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


def _verdict(r: _Reader, verdict: object, what: str, allowed: frozenset[str]) -> str:
    if not isinstance(verdict, str) or verdict not in allowed:
        raise r.fail(f"{what}: 'verdict' {verdict!r} is not one compare writes")
    return verdict


def _moves(r: _Reader, doc: Any, what: str) -> tuple[Move, ...]:
    try:
        return moves_from_json(doc)
    except ValueError as e:
        raise r.fail(f"{what}: {e}") from None


def comparison_from_json(doc: Any, src: str) -> ComparisonDoc:
    r = _Reader(src)
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
    return ComparisonDoc(
        verdict_line=r.text(d, "verdict_line", "the comparison"),
        forced=tuple(forced),
        rows=tuple(rows),
        summary=summary,
        median_ratio=r.opt_num(d, "median_ratio", "the comparison"),
        pairs=len(pairs) if isinstance(pairs, list) else None,
    )


# ---------------------------------------------------------------- sizes


@dataclass(frozen=True)
class SizeRow:
    label: str
    file_bytes: int
    vm_bytes: int


@dataclass(frozen=True)
class SizeImage:
    name: str  # the file's base name, with the architecture for fat slices and diffs
    arch: str
    fmt: str
    kind: str
    file_bytes: int
    vm_bytes: int
    rows: tuple[SizeRow, ...]


@dataclass(frozen=True)
class SizeDoc:
    view: str  # sections, segments, symbols (or a view added later)
    images: tuple[SizeImage, ...]
    diff: bool  # images come in (old, new) pairs


def _image(r: _Reader, d: Mapping[str, Any], what: str, rows: tuple[SizeRow, ...]) -> SizeImage:
    return SizeImage(
        name=r.text(d, "file", what),  # the path: named apart from the others by _by_path
        arch=r.text(d, "arch", what, ""),
        fmt=r.text(d, "format", what, ""),
        kind=r.text(d, "kind", what, ""),
        file_bytes=r.count(d, "file_bytes", what),
        vm_bytes=r.count(d, "vm_bytes", what),
        rows=rows,
    )


def _rows(r: _Reader, raw: list[Any], what: str, prefix: str = "") -> tuple[SizeRow, ...]:
    out = []
    for k, row in enumerate(raw, 1):
        rw = r.obj(row, f"{what} row {k}")
        out.append(
            SizeRow(
                r.text(rw, "label", f"{what} row {k}"),
                r.count(rw, f"{prefix}file_bytes", f"{what} row {k}"),
                r.count(rw, f"{prefix}vm_bytes", f"{what} row {k}"),
            )
        )
    return tuple(out)


def sizes_from_json(doc: Any, src: str) -> SizeDoc:
    r = _Reader(src)
    d = r.obj(doc, "the document")
    if d.get("format") != SIZE_FORMAT:
        raise r.fail(f'not an icount size document (no "format": "{SIZE_FORMAT}")')
    view = r.text(d, "view", "the size document")
    images: list[SizeImage] = []
    if "diff" in d:
        sides: list[SizeImage] = []
        for i, raw in enumerate(r.items(d, "diff", "the size diff"), 1):
            e = r.obj(raw, f"diff {i}")
            rows = r.items(e, "rows", f"diff {i}")
            for side in ("old", "new"):
                what = f"diff {i} {side}"
                sides.append(
                    _image(r, r.obj(e.get(side), what), what, _rows(r, rows, what, f"{side}_"))
                )
        sides = _by_path(sides)
        for k in range(0, len(sides), 2):
            images += diff_pair(sides[k], sides[k + 1])
        return SizeDoc(view, tuple(images), True)
    for i, raw in enumerate(r.items(d, "images", "the size document"), 1):
        what = f"image {i}"
        img = r.obj(raw, what)
        images.append(_image(r, img, what, _rows(r, r.items(img, "rows", what), what)))
    return SizeDoc(view, tuple(distinct_names(_by_path(images))), False)


def _by_path(images: list[SizeImage]) -> list[SizeImage]:
    """Images named by the shortest part of their paths that tells them apart."""
    names = distinct_suffixes([i.name for i in images])
    return [_renamed(i, n) for i, n in zip(images, names, strict=True)]


def distinct_names(images: list[SizeImage]) -> list[SizeImage]:
    """Fat slices share a file name: add the architecture where names repeat."""
    names = [i.name for i in images]
    return [_renamed(i, f"{i.name} [{i.arch}]") if names.count(i.name) > 1 else i for i in images]


def diff_pair(old: SizeImage, new: SizeImage) -> list[SizeImage]:
    """The two sides of a diff, named apart where their file names are one
    (old/server, new/server: 'old server', 'new server')."""
    if old.name != new.name:
        return [old, new]
    return [_renamed(old, f"old {old.name}"), _renamed(new, f"new {new.name}")]


def _renamed(img: SizeImage, name: str) -> SizeImage:
    return SizeImage(name, img.arch, img.fmt, img.kind, img.file_bytes, img.vm_bytes, img.rows)
