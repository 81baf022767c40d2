"""A saved comparison (`icount compare -f json`, read back by `icount report`) checked on
load: what it claims is re-derived from its own figures, and a file that contradicts
itself is refused in one line, never drawn.

A comparison JSON may come from anywhere (a CI artifact, a PR). Drawn as it stands, one
whose cell says `improved` beside medians that rose, under a verdict line counting a
regression, shows the reader a verdict no comparison gave. So, for every cell:

- the sides its verdict needs: a regressed, improved or unchanged cell has both; a cell
  missing or invalid on a side has no figure there, and no delta;
- its delta is new median - base median, its `delta_pct` that over |base median| (an
  interleaved cell's is the median of its pairs' ratios less 1, not re-derived here);
- its verdict follows from the change it stands on (the rerun's with `confirm`, the
  total's where the total decides, else the medians'): regressed only above +threshold,
  improved only below -threshold, each beyond the measured spread and --min-delta (where
  those rules applied); unchanged without a note only within the threshold;
- the summary counts and the verdict line's are the cells' own.

The threshold comparison is exact (fractions of the medians), as the gate's is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from icount.charts.inputs import CompareRow, ComparisonDoc
from icount.compare.model import VERDICT_ORDER, Verdict
from icount.compare.render import count_text
from icount.compare.rounds import exact
from icount.errors import ParseError
from icount.numfmt import plain, signed_percent
from icount.text import printable

_MOVED = {Verdict.REGRESSED.value: 1, Verdict.IMPROVED.value: -1}
_BOTH = {*_MOVED, Verdict.UNCHANGED.value}
_NO_NEW = {Verdict.MISSING_IN_NEW.value}
_NO_BASE = {Verdict.MISSING_IN_BASE.value, Verdict.INVALID_IN_BASE.value}


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _contradiction(row: CompareRow, raw: Mapping[str, Any], interleaved: bool,
                   min_delta: float | None) -> str | None:  # fmt: skip
    """What in one cell contradicts the rest of it, or None."""
    b, n, verdict = row.base, row.new, row.verdict
    if verdict in _NO_BASE and b is not None:
        return f"it is {verdict} but has a base median"
    if verdict in _NO_NEW and n is not None:
        return f"it is {verdict} but has a new median"
    if b is None or n is None:
        if verdict in _BOTH:
            return f"it is {verdict} without figures on both sides"
        if row.delta is not None or row.delta_pct is not None:
            return "it has a delta without figures on both sides"
        return None
    if row.delta is None or not _close(row.delta, n.median - b.median):
        shown = "none" if row.delta is None else plain(row.delta)
        return f"its delta {shown} is not new - base ({plain(n.median)} - {plain(b.median)})"
    base = exact(b.median)
    pct = (exact(n.median) - base) / abs(base) if base else None
    if interleaved:  # the median of the pairs' ratios, less 1: as the file gives it
        pct = None if row.delta_pct is None else exact(row.delta_pct)
    elif (row.delta_pct is None) != (pct is None) or (
        pct is not None and row.delta_pct is not None and not _close(row.delta_pct, float(pct))
    ):
        shown = _pct(None if pct is None else float(pct))
        return f"its delta_pct {_pct(row.delta_pct)} is not delta / base ({shown})"
    change, basis = _stands_on(row, raw, base, pct)
    threshold = exact(row.threshold)
    direction = _MOVED.get(verdict)
    if direction is not None:
        if change is None:
            return None  # a total that decided with no change to read: its rule's word
        relative = basis != "the medians" or pct is not None
        # a change the file gives as a float (a total's, an interleave's median ratio) was
        # judged on exact figures: at the threshold itself either verdict can be right
        loose = interleaved or basis == "its total"
        at = loose and math.isclose(abs(change), threshold, rel_tol=1e-9, abs_tol=1e-12)
        if change * direction <= 0 or (relative and abs(change) <= threshold and not at):
            shown = _pct(float(change)) if relative else plain(float(change))
            return f"it is {verdict} but {basis} changed {shown} (threshold {_pct(row.threshold)})"
        if basis == "the medians" and not interleaved and raw.get("threshold_basis") is None:
            if not (n.min > b.max if direction > 0 else n.max < b.min):
                return f"it is {verdict} but the runs of its two sides overlap"
            if min_delta is not None and abs(n.median - b.median) < min_delta:
                return f"it is {verdict} but |delta| is below min_delta {plain(min_delta)}"
    elif (
        verdict == Verdict.UNCHANGED.value and not row.why and basis == "the medians"
        and change is not None and pct is not None and abs(change) > threshold
        and not (interleaved and math.isclose(abs(change), threshold, rel_tol=1e-9))
    ):  # fmt: skip
        return (
            f"it is unchanged, with no note, but changed {_pct(float(change))} "
            f"(threshold {_pct(row.threshold)})"
        )
    return None


def _stands_on(
    row: CompareRow, raw: Mapping[str, Any], base: Fraction, pct: Fraction | None
) -> tuple[Fraction | None, str]:
    """The change the verdict stands on, and whose: the total's where it decides, the
    rerun's with --confirm, else the medians' (relative; the delta where the base is 0)."""
    if row.total is not None and row.total.decides:
        t = row.total.delta_pct
        return (None if t is None else exact(t)), "its total"
    confirm = raw.get("confirm")
    median = confirm.get("median") if isinstance(confirm, dict) else None
    if isinstance(median, int | float) and not isinstance(median, bool) and base:  # noqa: SIM102
        if math.isfinite(median):
            return (exact(median) - base) / abs(base), "its rerun"
    if pct is None:
        return (None if row.delta is None else exact(row.delta)), "the medians"
    return pct, "the medians"


def _pct(x: float | None) -> str:
    return "none" if x is None else signed_percent(x)


def check(doc: Mapping[str, Any], parsed: ComparisonDoc, src: str) -> None:
    """ParseError naming the first contradiction of the saved comparison `doc` (already
    read into `parsed`), in one line."""
    cells = doc.get("cells") or []
    interleaved = doc.get("mode") == "interleave"
    limits = doc.get("thresholds")
    raw_min = limits.get("min_delta") if isinstance(limits, dict) else None
    min_delta = (
        float(raw_min)
        if isinstance(raw_min, int | float) and not isinstance(raw_min, bool)
        else None
    )
    for i, (row, raw) in enumerate(zip(parsed.rows, cells, strict=True), 1):
        own = interleaved or (isinstance(raw, dict) and raw.get("rounds") is not None)
        why = _contradiction(row, raw, own, min_delta)
        if why is not None:
            raise _refused(f"cell {i} ({printable(row.label)}): {why}", src)
    counts = {v.value: sum(1 for r in parsed.rows if r.verdict == v.value) for v in VERDICT_ORDER}
    summary = doc.get("summary")
    if isinstance(summary, dict):
        for verdict, n in counts.items():
            claimed = summary.get(verdict, 0)
            if claimed != n:
                what = f"its summary counts {printable(repr(claimed))} {verdict}"
                raise _refused(f"{what} where its cells hold {n}", src)
    parts = [count_text(v, counts[v.value]) for v in VERDICT_ORDER if counts[v.value]]
    expected = ", ".join(parts) or "no cells"
    line = parsed.verdict_line
    if line != expected and not line.startswith(f"{expected} ("):
        shown = printable(line[:80])
        raise _refused(f"its verdict line {shown!r} does not count its cells ({expected})", src)


def _refused(what: str, src: str) -> ParseError:
    return ParseError(
        f"{what}; the saved comparison contradicts itself and is not drawn",
        source=src,
        hint="compare the results files again",
    )
