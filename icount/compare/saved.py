"""A saved comparison (`icount compare -f json`, read back by `icount report`) checked on
load: what the report draws from it is re-derived with compare's own rules
(compare/model.py), and a file that contradicts itself is refused in one line, never drawn.

A comparison JSON may come from anywhere (a CI artifact, a PR). Drawn as it stands, one
whose cell says `improved` beside medians that rose, under a verdict line counting a
regression, shows the reader a verdict no comparison gave. So, for every cell:

- a cell missing on a side has no figure there; a missing or invalid cell has no delta
  (an invalid one may keep the figures of the side, or the runs, that completed);
- its delta is new median - base median, its `delta_pct` that over |base median|, or,
  for an interleaved cell, the median of its pairs' exact ratios less 1, each pair's
  ratio its own new over base;
- a collected runtime's total: its delta and `delta_pct` from the two totals, its
  interval from theirs, its verdict by compare's rule;
- its verdict is the one compare's rule gives on the change it stands on (the rerun's
  with `confirm`, the total's where the total decides, the pairs' when interleaved, else
  the medians'); an unchanged cell with a note may stand on a rule this check does not
  re-apply (the control arm, --min-delta from --history, a size gate), a moved one never;
- the summary counts and the whole verdict line are the ones icount builds from the cells
  and the thresholds (a line counted as files written before "within threshold" was is
  read too).

A change within a relative 1e-9 of its threshold may carry either verdict: files written
before the gate's threshold comparison was exact judged it in floats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from icount.compare import model
from icount.compare.drawn import CompareRow, DrawnComparison, TotalSide
from icount.compare.model import VERDICT_ORDER, Verdict
from icount.compare.render import counts_text, limits_text
from icount.compare.rounds import Pair
from icount.compare.thresholds import Override, Thresholds
from icount.errors import ParseError
from icount.numfmt import plain, signed_percent
from icount.stats import Summary
from icount.text import printable

_NO_FIGURES = {v.value for v in model.FAILING_WITH_INVALID}
_NO_NEW = {Verdict.MISSING_IN_NEW.value}
_NO_BASE = {Verdict.MISSING_IN_BASE.value}
# an old file judged a change at its threshold in floats: either verdict stands there
_AT = 1e-9


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _num(x: object) -> float | None:
    ok = isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
    return float(x) if ok else None  # type: ignore[arg-type]


def _summary(side: Any) -> Summary | None:
    if side is None:
        return None
    return Summary(side.median, side.min, side.max, 0.0, side.runs)


def _pairs(raw: object) -> list[Pair] | None:
    """The pairs a file holds (base, new), or None where it holds none readable."""
    if not isinstance(raw, list) or not raw:
        return None
    out = []
    for p in raw:
        if not isinstance(p, dict):
            return None
        out.append(Pair(_num(p.get("base")), _num(p.get("new"))))
        given = p.get("ratio")
        if not _close(None if given is None else _num(given), out[-1].ratio):
            return None
    return out


def _verdicts(judge: Any, threshold: float) -> set[str]:
    """The verdicts compare's rule `judge(threshold)` gives at `threshold`, and just
    either side of it."""
    return {str(judge(t)) for t in (threshold, threshold * (1 - _AT), threshold * (1 + _AT))}


def _figures(row: CompareRow) -> str | None:
    """What contradicts the cell's sides and delta, or None."""
    b, n, verdict = row.base, row.new, row.verdict
    if verdict in _NO_BASE and b is not None:
        return f"it is {verdict} but has a base median"
    if verdict in _NO_NEW and n is not None:
        return f"it is {verdict} but has a new median"
    if verdict in _NO_FIGURES:
        if row.delta is not None or row.delta_pct is not None:
            return f"it is {verdict} but has a delta"
        return None
    if b is None or n is None:
        if verdict == Verdict.UNCHANGED.value and row.why and row.delta is None:
            return None  # nothing ran to judge (an interleave's control that failed)
        return f"it is {verdict} without figures on both sides"
    if not _close(row.delta, n.median - b.median):
        shown = "none" if row.delta is None else plain(row.delta)
        return f"its delta {shown} is not new - base ({plain(n.median)} - {plain(b.median)})"
    return None


def _contradiction(row: CompareRow, raw: Mapping[str, Any], interleaved: bool,
                   pairs: list[Pair] | None, min_delta: float) -> str | None:  # fmt: skip
    """What in one cell contradicts the rest of it, or None."""
    wrong = _figures(row)
    b, n = _summary(row.base), _summary(row.new)
    if wrong is not None or row.verdict in _NO_FIGURES or b is None or n is None:
        return wrong
    if interleaved and pairs is None:
        return "its pairs are not readable"
    if raw.get("threshold_basis") is not None:
        min_delta = 0.0  # --history set the cell's own; a note names it where it held
    if pairs is not None:
        judged = model.judge_pairs(pairs, row.threshold, min_delta)
        if judged.delta_pct is None or not _close(row.delta_pct, judged.delta_pct):
            shown = _pct(judged.delta_pct)
            return f"its delta_pct {_pct(row.delta_pct)} is not its pairs' median ratio ({shown})"
        if not _close(row.delta, judged.delta):
            return "its medians are not its pairs'"
        verdicts = _verdicts(lambda t: model.judge_pairs(pairs, t, min_delta).verdict,
                             row.threshold)  # fmt: skip
        basis, rule = "its pairs", judged.why
        change: float | None = judged.delta_pct
    else:
        pct = model.judge_sides(b, n, row.threshold, min_delta)[1]
        if not _close(row.delta_pct, pct):
            return f"its delta_pct {_pct(row.delta_pct)} is not delta / base ({_pct(pct)})"
        verdicts, basis, change, rule = _on_medians(row, raw, b, n, min_delta)
    total = _total(row, raw, min_delta)
    if isinstance(total, str):
        return total
    if total is not None:
        verdicts, basis, change, rule = total
    if row.verdict in verdicts:
        return None
    if row.verdict == Verdict.UNCHANGED.value and row.why:
        return None  # a rule this check does not re-apply, which the note names
    shown = _pct(change) if change is not None else "by an absolute delta"
    judged_as = " or ".join(sorted(verdicts)) + (f" ({rule})" if rule else "")
    return (
        f"it is {row.verdict} but {basis} changed {shown} (threshold "
        f"{_pct(row.threshold)}): compare's rule makes it {judged_as}"
    )


_Judged = tuple[set[str], str, float | None, str]  # verdicts allowed, whose change, it, why


def _on_medians(
    row: CompareRow, raw: Mapping[str, Any], b: Summary, n: Summary, min_delta: float
) -> _Judged:
    """The verdicts the medians allow (or, with --confirm, the rerun's), whose, and the change."""
    confirm = raw.get("confirm")
    rerun = None
    if isinstance(confirm, dict) and _num(confirm.get("median")) is not None:
        c = {k: _num(confirm.get(k)) for k in ("median", "min", "max")}
        if None not in c.values():
            rerun = Summary(c["median"] or 0.0, c["min"] or 0.0, c["max"] or 0.0, 0.0, 1)
    side, basis = (n, "the medians") if rerun is None else (rerun, "its rerun")
    _, pct, _, why = model.judge_sides(b, side, row.threshold, min_delta)
    return (
        _verdicts(lambda t: model.judge_sides(b, side, t, min_delta)[2], row.threshold),
        basis,
        pct,
        why,
    )


def _total(row: CompareRow, raw: Mapping[str, Any], min_delta: float) -> str | _Judged | None:
    """A contradiction in the cell's total, or, where the total decides, the verdicts it
    allows, or None."""
    t = row.total
    if t is None:
        return None
    sides = [_total_of(s, whole) for s, whole in ((t.base, row.base), (t.new, row.new))]
    b, n = sides
    if b is None or n is None:
        if t.delta_pct is not None or t.verdict is not None:
            return "its total has a change without both totals"
        return None
    delta, interval, _, why = model.judge_totals(b, n, row.threshold, min_delta)
    given = raw.get("total")
    given_delta = _num(given.get("delta")) if isinstance(given, dict) else None
    if t.delta_pct is None and t.verdict is None:
        return None  # the totals do not gate (a rule names why)
    pct = delta / abs(b[0]) if b[0] else None
    if not _close(t.delta_pct, pct) or not _close(given_delta, delta):
        return f"its total's delta_pct {_pct(t.delta_pct)} is not its totals' change ({_pct(pct)})"
    if not _close(t.interval, interval):
        return "its total's interval is not its totals' intervals combined"
    verdicts = _verdicts(lambda th: model.judge_totals(b, n, th, min_delta)[2], row.threshold)
    history = raw.get("threshold_basis") is not None  # its own --min-delta, not the file's
    if t.verdict not in verdicts and not (t.verdict == Verdict.UNCHANGED.value and history):
        return f"its total is {t.verdict} but changed {_pct(pct)}"
    return (verdicts, "its total", pct, why) if t.decides else None


def _total_of(side: TotalSide | None, whole: Any) -> tuple[float, float] | None:
    """A side's total and its 95% half-width, as compare judged it: a whole count's
    half-width is half its runs' range."""
    if side is None or side.total is None or not side.valid:
        return None
    if side.whole:
        return (side.total, 0.0 if whole is None else (whole.max - whole.min) / 2)
    return (side.total, side.interval or 0.0)


def _pct(x: float | None) -> str:
    return "none" if x is None else signed_percent(x)


def _thresholds(doc: Mapping[str, Any], src: str) -> Thresholds:
    t = doc.get("thresholds")
    default = _num(t.get("default")) if isinstance(t, dict) else None
    min_delta = _num(t.get("min_delta")) if isinstance(t, dict) else None
    raw = t.get("overrides", []) if isinstance(t, dict) else None
    if default is None or min_delta is None or not isinstance(raw, list):
        raise _refused("its thresholds are not a compare's", src)
    overrides = []
    for o in raw:
        limit = _num(o.get("threshold")) if isinstance(o, dict) else None
        if limit is None or not isinstance(o.get("glob"), str):
            raise _refused("its thresholds are not a compare's", src)
        overrides.append(Override(o["glob"], limit))
    return Thresholds(default, tuple(overrides), min_delta)


def _cell_pairs(doc: Mapping[str, Any], raw: Mapping[str, Any], one: bool) -> list[Pair] | None:
    rounds = raw.get("rounds")
    if isinstance(rounds, dict):
        return _pairs(rounds.get("pairs"))
    return _pairs(doc.get("pairs")) if one else None


def check(doc: Mapping[str, Any], parsed: DrawnComparison, src: str) -> None:
    """ParseError naming the first contradiction of the saved comparison `doc` (already
    read into `parsed`), in one line."""
    cells: Sequence[Any] = doc.get("cells") or []
    interleaved = doc.get("mode") == "interleave"
    limits = _thresholds(doc, src)
    for i, (row, raw) in enumerate(zip(parsed.rows, cells, strict=True), 1):
        own = interleaved or raw.get("rounds") is not None
        pairs = _cell_pairs(doc, raw, interleaved and len(cells) == 1)
        why = _contradiction(row, raw, own, pairs, limits.min_delta)
        if why is not None:
            raise _refused(f"cell {i} ({printable(row.label)}): {why}", src)
    counts = {v.value: sum(1 for r in parsed.rows if r.verdict == v.value) for v in VERDICT_ORDER}
    summary = doc.get("summary")
    if isinstance(summary, dict):
        for verdict, n in counts.items():
            claimed = summary.get(verdict, 0)
            if claimed != n:
                what = f"its summary counts {claimed!r} {verdict}"  # repr escapes it
                raise _refused(f"{what} where its cells hold {n}", src)
    _check_line(doc, parsed, limits, src)


def _check_line(doc: Mapping[str, Any], parsed: DrawnComparison, limits: Thresholds,
                src: str) -> None:  # fmt: skip
    """The verdict line must be the one icount builds from the cells and thresholds."""
    history = doc.get("history") if isinstance(doc.get("history"), str) else None
    ratio = _num(doc.get("median_ratio")) if doc.get("mode") == "interleave" else None
    tail = f" ({limits_text(limits, history, ratio, parsed.pairs or 0)})"
    tail += " [FORCED]" if doc.get("forced") else ""
    tail += " [BUILD CHANGED]" if doc.get("build_changes") else ""
    rows = [(r.verdict, r.why, r.delta) for r in parsed.rows]
    expected = [counts_text(rows) + tail, counts_text(rows, legacy=True) + tail]
    if parsed.verdict_line not in expected:
        shown = printable(parsed.verdict_line[:80])
        raise _refused(f"its verdict line '{shown}' is not its cells' ({expected[0]})", src)


def _refused(what: str, src: str) -> ParseError:
    return ParseError(
        f"{what}; the saved comparison contradicts itself and is not drawn",
        source=src,
        hint="compare the results files again",
    )
