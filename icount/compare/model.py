"""Matching the cells of two results and judging each pair (pure).

A cell's key is (name, path, backend). For each key the comparison gives the base
and new figures, the delta relative to the base median and one verdict. A delta
counts only when all three hold:

1. |delta| is above the cell's threshold (relative to the base median; a delta
   exactly at the threshold is unchanged),
2. |delta| is at least --min-delta instructions (tiny counts do not flap),
3. the two sides are separated: every new run lies beyond every base run in the
   delta's direction (the min-max ranges do not overlap). A delta inside the
   cells' own measured spread is not distinguishable from run-to-run noise, so it
   is reported as unchanged, with the reason.

Interleaved comparisons use the median of the per-pair ratios new/base instead of
the medians' ratio, and rule 3 asks that every pair's ratio lie on the same side of 1.

A collected runtime's cell (results/runtime.py) is judged twice: its mutator as above
(the cell's value), and its total (mutator + collector + compiler) by rules 1 and 2 and,
in place of rule 3, the total's change beyond the two sides' 95% intervals combined
(TotalChange). A total shown `~` (its interval too wide) never gates. The cell regresses
when either regresses, so a total's regression alone fails the gate (exit 3): a server
whose collector work grew by more than the threshold, beyond the noise, costs its users
as much as a slower handler. It improves when one improves and neither regresses.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from icount.compare.explain import Explanation, explain
from icount.compare.rounds import Pair as Pair
from icount.compare.rounds import Rounds, exact
from icount.compare.thresholds import Thresholds
from icount.errors import ExitCode, IcountError
from icount.numfmt import plain, plural, si, signed_percent
from icount.results import UNIT_PER_REQUEST, Cell, Results
from icount.results.details import arrival_of
from icount.results.runtime import RuntimeFigures
from icount.stats import Summary, summarize
from icount.text import printable

if TYPE_CHECKING:
    from icount.history.noise import Noise

NoiseMap = Mapping[tuple[str, str, str], "Noise"]


class Verdict(StrEnum):
    REGRESSED = "regressed"
    IMPROVED = "improved"
    UNCHANGED = "unchanged"
    INVALID_IN_BASE = "invalid in base"
    INVALID_IN_NEW = "invalid in new"
    MISSING_IN_BASE = "missing in base"
    MISSING_IN_NEW = "missing in new"


# The order verdicts are counted in on the summary line.
VERDICT_ORDER = tuple(Verdict)
FAILING_WITH_INVALID = frozenset(VERDICT_ORDER[3:])


class GateFailed(IcountError):
    """The comparison ran and found what the gate refuses (regression, or invalid cells)."""

    def __init__(self, message: str, code: ExitCode) -> None:
        super().__init__(message)
        self.exit_code = code


@dataclass(frozen=True)
class Row:
    name: str
    path: str
    backend: str
    unit: str
    base: Summary | None  # None when missing or invalid on that side
    new: Summary | None
    delta: float | None  # new median - base median
    delta_pct: float | None  # fraction of the base median; None when not defined
    threshold: float
    rule: str  # the glob that chose the threshold, or "default"
    verdict: Verdict
    why: str  # one line: why this verdict (empty for plain regressed/improved)
    # With --history: why `threshold` is what it is (the cell's noise, or the given one)
    basis: str = ""
    # With --confirm: the fresh measurement of a cell that crossed its threshold (`new`
    # stays the first), which the verdict is judged on
    confirm: Summary | None = None
    # a changed cell's functions that moved most, where both sides kept a profile
    explained: Explanation | None = None
    # a collected runtime's totals, where either side has a runtime's figures
    total: TotalChange | None = None
    # an interleaved row's own pairs and control arm (compare/control.py), where it has
    rounds: Rounds | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.name, self.path, self.backend)

    @property
    def label(self) -> str:
        return f"{self.name}/{self.path}" if self.path else self.name


@dataclass(frozen=True)
class TotalChange:
    """The totals per request (mutator + the runtime's own work) of a collected
    runtime's cell on both sides, and how their change was judged."""

    base: RuntimeFigures | None  # None: that side has no runtime's figures
    new: RuntimeFigures | None
    delta: float | None  # new total - base total, where both are valid
    delta_pct: float | None
    interval: float | None  # the 95% half-width of the difference (both sides in quadrature)
    verdict: Verdict | None  # REGRESSED, IMPROVED or UNCHANGED; None: the totals do not gate
    rule: str  # which rule decided, or why the totals do not gate
    decides: bool = False  # the total's verdict is the row's
    # the median of a side without a runtime's figures: its whole count, set against the
    # other side's total (the mutators of the two are not like for like)
    base_whole: float | None = None
    new_whole: float | None = None


@dataclass(frozen=True)
class FieldDifference:
    field: str
    base: Any
    new: Any
    why: str = ""  # why the difference moves counts (environment.why_differs)

    def describe(self) -> str:
        if isinstance(self.base, list) and isinstance(self.new, list):
            only_base = sorted(set(map(str, self.base)) - set(map(str, self.new)))
            only_new = sorted(set(map(str, self.new)) - set(map(str, self.base)))
            parts = []
            if only_base:
                parts.append(f"only base has {' '.join(only_base)}")
            if only_new:
                parts.append(f"only new has {' '.join(only_new)}")
            return f"{self.field}: {'; '.join(parts) or 'order differs'}"
        return f"{self.field}: base {_show(self.base)} vs new {_show(self.new)}"


def _show(value: Any) -> str:
    return "(absent)" if value is None else repr(value)


@dataclass(frozen=True)
class Comparison:
    rows: tuple[Row, ...]
    thresholds: Thresholds
    forced: tuple[FieldDifference, ...] = ()  # non-empty: compared despite these differences
    pairs: tuple[Pair, ...] | None = None  # set for --interleave
    # --allow-build-change: the cells compared although their builds differ in mode
    build_changes: tuple[str, ...] = ()
    history: str | None = None  # with --history: the commits the thresholds came from
    # the new cells' peak memory (--memory), for the formats that carry it (-f bmf)
    memory: tuple[tuple[tuple[str, str, str], Summary], ...] = ()

    def count(self, verdict: Verdict) -> int:
        return sum(1 for r in self.rows if r.verdict is verdict)

    @property
    def median_ratio(self) -> float | None:
        ratios = [r for r in (p.ratio for p in self.pairs or ()) if r is not None]
        return float(statistics.median(ratios)) if ratios else None


# ---------------------------------------------------------------- fingerprints


# `icount size -o`: sizes are read from the files, so no CPU, tool or library field of
# the machine that read them moves them; only the backend must agree.
SIZE_BACKEND = "size"


def fingerprint_differences(
    base: Mapping[str, Any], new: Mapping[str, Any]
) -> tuple[FieldDifference, ...]:
    from icount.environment import fingerprint_differences as fields
    from icount.environment import why_differs

    if base.get("backend") == new.get("backend") == SIZE_BACKEND:
        return ()
    return tuple(
        FieldDifference(f, base.get(f), new.get(f), why_differs(f, base, new))
        for f in fields(base, new)
    )


def refusal(diffs: Sequence[FieldDifference], base_src: str, new_src: str) -> str:
    """One clause per field: what differs and why that moves counts."""
    each = "; ".join(f"{d.describe()} — {d.why}" if d.why else d.describe() for d in diffs)
    return (
        f"{base_src} and {new_src} were measured in environments that move counts differently "
        f"({each}); their counts are not comparable"
    )


# ---------------------------------------------------------------- verdicts


def _judge(
    change: Fraction | None,
    delta: Fraction,
    overlap: str | None,
    threshold: float,
    min_delta: float,
) -> tuple[Verdict, str]:
    """`change` is the relative change (None where the base is 0), `delta` the medians'
    difference, both exact, so that a change exactly at the threshold is unchanged for
    every threshold (in floats, 0.7/100 put a change of exactly 0.7% above 0.7%).
    `overlap` describes how the two sides' observations overlap (None: separated)."""
    if change is not None and abs(change) <= exact(threshold):
        return Verdict.UNCHANGED, ""
    if abs(delta) < exact(min_delta):
        return (
            Verdict.UNCHANGED,
            f"|delta| {plain(float(abs(delta)))} is below --min-delta {plain(min_delta)}",
        )
    if overlap is not None:
        return Verdict.UNCHANGED, overlap
    return (Verdict.REGRESSED if delta > 0 else Verdict.IMPROVED), ""


def judge_sides(
    bs: Summary, ns: Summary, threshold: float, min_delta: float
) -> tuple[float, float | None, Verdict, str]:
    """The delta, relative change, verdict and why of two valid sides judged on their
    medians (rules 1-3): the one rule `compare` applies and a saved comparison's check
    re-applies (compare/saved.py)."""
    delta = ns.median - bs.median
    pct = _pct(delta, bs.median)
    separated = ns.min > bs.max if delta > 0 else ns.max < bs.min
    overlap = (
        None
        if separated
        else (
            f"within the measured spread (base {plain(bs.min)}-{plain(bs.max)}, "
            f"new {plain(ns.min)}-{plain(ns.max)})"
        )
    )
    base_median = exact(bs.median)
    exact_delta = exact(ns.median) - base_median
    change = exact_delta / abs(base_median) if pct is not None else None
    verdict, why = _judge(change, exact_delta, overlap, threshold, min_delta)
    return delta, pct, verdict, why


def _pct(delta: float, base: float) -> float | None:
    if base == 0:
        return None
    pct = delta / abs(base)
    return pct if math.isfinite(pct) else None  # a base of 5e-324 is no base to scale by


def _unusable(base: Cell | None, new: Cell | None) -> tuple[Verdict, str] | None:
    """The verdict for a key that cannot be compared, or None when it can."""
    if base is None:
        return Verdict.MISSING_IN_BASE, "no cell with this key in base"
    if new is None:
        return Verdict.MISSING_IN_NEW, "no cell with this key in new"
    if not base.valid:
        also = f"; new: {new.reason}" if not new.valid else ""
        return Verdict.INVALID_IN_BASE, f"base: {base.reason}{also}"
    if not new.valid:
        return Verdict.INVALID_IN_NEW, f"new: {new.reason}"
    if base.unit != new.unit:
        return Verdict.INVALID_IN_NEW, f"new: unit {new.unit!r} differs from base's {base.unit!r}"
    arrivals = _arrival(base), _arrival(new)
    if arrivals[0] != arrivals[1]:
        # a request's count follows when it arrives (docs/measuring.md, Arrival): an
        # event loop's, and Go's total, which holds the scheduler only with idle arrival
        return Verdict.INVALID_IN_NEW, (
            f"new: measured with --arrival {arrivals[1]}, base with --arrival {arrivals[0]} "
            f"(a request's count depends on when it arrives): measure the new side with "
            f"--arrival {arrivals[0]}, or the base with --arrival {arrivals[1]}"
        )
    return None


def _arrival(cell: Cell) -> str:
    """How a serve cell's requests arrived: files from before it was recorded, closed;
    commands have none."""
    if cell.unit != UNIT_PER_REQUEST:
        return ""
    return arrival_of(cell.params)


def _row(
    base: Cell | None, new: Cell | None, thresholds: Thresholds, noise: NoiseMap | None = None
) -> Row:
    some = new or base
    assert some is not None
    label = f"{some.name}/{some.path}" if some.path else some.name
    threshold, rule = thresholds.for_label(label)
    min_delta, basis = thresholds.min_delta, ""
    if noise is not None:
        from icount.history.noise import apply

        applied = apply(threshold, min_delta, noise.get(some.key))
        threshold, min_delta, basis = applied.threshold, applied.min_delta, applied.basis
    bs = base.summary if base is not None and base.valid else None
    ns = new.summary if new is not None and new.valid else None
    unusable = _unusable(base, new)
    if unusable is not None:
        verdict, why = unusable
        return Row(
            some.name, some.path, some.backend, some.unit,
            bs, ns, None, None, threshold, rule, verdict, why, basis,
        )  # fmt: skip
    assert bs is not None and ns is not None
    delta, pct, verdict, why = judge_sides(bs, ns, threshold, min_delta)
    row = Row(
        some.name, some.path, some.backend, some.unit,
        bs, ns, delta, pct, threshold, rule, verdict, why, basis,
    )  # fmt: skip
    assert base is not None and new is not None
    if base.runtime is None and new.runtime is None:
        return row  # a cell without a collected runtime's totals: judged on its counts
    judged = _with_total(row, _total(base.runtime, new.runtime, (bs, ns), threshold, min_delta))
    return _scheduler_unlike(judged, base.runtime, new.runtime)


def _scheduler_unlike(row: Row, base: RuntimeFigures | None, new: RuntimeFigures | None) -> Row:
    """A side that counted Go's scheduler apart against one that did not (a file written
    before it was): the other's mutator and total, or its whole count, hold the
    scheduler's wait, and neither of this side's does. Adding it back would judge a
    figure that moves with the client's timing and the machine's load (results/runtime.py),
    so the cell does not gate, saying why; the scheduler is never in a total judged."""
    apart = [f is not None and f.scheduler is not None for f in (base, new)]
    if apart[0] == apart[1]:
        return row
    held, split = ("base", "new") if apart[1] else ("new", "base")
    why = (
        f"{held}'s figures hold the runtime scheduler's wait, which {split} counted apart "
        f"(in neither its mutator nor its total): not like for like, the cell does not "
        f"gate; measure {held} again with this icount"
    )
    total = row.total and dataclasses.replace(row.total, delta=None, delta_pct=None,
                                              interval=None, verdict=None, rule=why,
                                              decides=False)  # fmt: skip
    return dataclasses.replace(row, verdict=Verdict.UNCHANGED, why=why, total=total)


def _total(
    base: RuntimeFigures | None,
    new: RuntimeFigures | None,
    sides: tuple[Summary, Summary],
    threshold: float,
    min_delta: float,
) -> TotalChange:
    """The totals judged: beyond the threshold (exactly, as the mutator), --min-delta, and
    the 95% interval of their difference. A side without a runtime's figures (a file
    written before the runtime's work was counted apart) counted that work in its
    figure: its whole count is set against the other side's total, like for like."""
    for side, f in (("base", base), ("new", new)):
        if f is not None and (f.total is None or not f.total_valid):
            shown = "none" if f.total is None else f"~{si(f.total)}"
            why = f"{side}'s total is {shown} (not valid): the totals do not gate"
            return TotalChange(base, new, None, None, None, None, why)
    # a side's total and the 95% half-width around it; for a whole count, half its runs'
    # range (the spread rule bounded it; no window's interval was taken)
    (b_total, b_half), (n_total, n_half) = (
        (s.median, (s.max - s.min) / 2) if f is None else (f.total or 0.0, f.half_width)
        for f, s in ((base, sides[0]), (new, sides[1]))
    )
    delta, interval, verdict, why = judge_totals(
        (b_total, b_half), (n_total, n_half), threshold, min_delta
    )
    if verdict is Verdict.UNCHANGED and not why:
        why = "within the threshold"
    elif verdict is not Verdict.UNCHANGED:
        why = f"beyond the threshold and the 95% interval ±{plain(interval)}"
    if base is None or new is None:
        whole, other = ("base", "new") if base is None else ("new", "base")
        why = (
            f"{whole} has no runtime's figures (its figure is the whole count, the "
            f"runtime's work in it), set against {other}'s total: {why}"
        )
    return TotalChange(
        base, new, delta, _pct(delta, b_total), interval, verdict, why,
        base_whole=sides[0].median if base is None else None,
        new_whole=sides[1].median if new is None else None,
    )  # fmt: skip


def judge_totals(
    base: tuple[float, float], new: tuple[float, float], threshold: float, min_delta: float
) -> tuple[float, float, Verdict, str]:
    """Two totals, each (total, 95% half-width), judged: their delta, the difference's
    interval, the verdict and why (the one rule, re-applied by compare/saved.py)."""
    (b_total, b_half), (n_total, n_half) = base, new
    delta = n_total - b_total
    # The two intervals are independent (other processes, other windows), so the
    # difference's standard error is the root sum of squares of theirs, and so is its 95%
    # half-width where the t factors are alike. Adding them (intervals that must not
    # overlap) would test at ~99.5% and let real changes of twice one interval pass.
    interval = math.hypot(b_half, n_half)
    beyond = abs(delta) > interval
    within = None if beyond else f"within the 95% interval ±{plain(interval)} of the difference"
    base_total = exact(b_total)
    exact_delta = exact(n_total) - base_total
    change = exact_delta / abs(base_total) if b_total else None
    verdict, why = _judge(change, exact_delta, within, threshold, min_delta)
    return delta, interval, verdict, why


def _with_total(row: Row, total: TotalChange) -> Row:
    """The row's verdict with the total's: a regression of either regresses the cell.
    Where one side has no runtime's figures, the total's verdict is the row's: that
    side's figure holds the runtime's work, the other's mutator does not; where the
    other's total is `~`, nothing like for like is left and the cell does not gate."""
    if total.verdict is not None and (total.base is None or total.new is None):
        pct = "" if total.delta_pct is None else f" {signed_percent(total.delta_pct)}"
        why = f"the whole count{pct}: {total.rule}"
        decided = dataclasses.replace(total, decides=True)
        return dataclasses.replace(row, verdict=total.verdict, why=why, total=decided)
    if total.base is None or total.new is None:
        # the other side's total does not gate either, and its mutator against a whole
        # count would read the runtime's work as a change (-7.7% / +8.4% on node /json)
        why = f"a whole count against a mutator is not like for like, and {total.rule}"
        return dataclasses.replace(row, verdict=Verdict.UNCHANGED, why=why, total=total)
    moved = total.verdict in (Verdict.REGRESSED, Verdict.IMPROVED)
    takes = (total.verdict is Verdict.REGRESSED and row.verdict is not Verdict.REGRESSED) or (
        total.verdict is Verdict.IMPROVED and row.verdict is Verdict.UNCHANGED
    )
    if not (moved and takes):
        return dataclasses.replace(row, total=total)
    assert total.verdict is not None
    total_by = f" {signed_percent(total.delta_pct)}" if total.delta_pct is not None else ""
    moved_by = f" {signed_percent(row.delta_pct)}" if row.delta_pct is not None else ""
    mutator = row.verdict.value + moved_by + (f": {row.why}" if row.why else "")
    why = f"the total {total.verdict.value}{total_by}, {total.rule}; the mutator {mutator}"
    return dataclasses.replace(
        row, verdict=total.verdict, why=why, total=dataclasses.replace(total, decides=True)
    )


def judge(base: Cell, new: Cell, thresholds: Thresholds, noise: NoiseMap | None = None) -> Row:
    """The row of one pair of cells, as `compare` judges it (--confirm judges a rerun)."""
    return _row(base, new, thresholds, noise)


def compare(
    base: Results,
    new: Results,
    thresholds: Thresholds,
    forced: Sequence[FieldDifference] = (),
    noise: NoiseMap | None = None,
) -> Comparison:
    """`noise` (--history): each cell's noise, which sets its threshold (history.noise)."""
    by_base = {c.key: c for c in base.cells}
    by_new = {c.key: c for c in new.cells}
    keys = sorted(set(by_base) | set(by_new))
    rows = tuple(_row(by_base.get(k), by_new.get(k), thresholds, noise) for k in keys)
    rows = tuple(_explained(r, by_base.get(r.key), by_new.get(r.key)) for r in rows)
    return Comparison(rows, thresholds, tuple(forced), memory=_peaks(new))


def _peaks(res: Results) -> tuple[tuple[tuple[str, str, str], Summary], ...]:
    from icount import memory

    found = ((c.key, memory.summary(c)) for c in res.cells if c.valid)
    return tuple((k, s) for k, s in found if s is not None)


def _explained(row: Row, base: Cell | None, new: Cell | None) -> Row:
    """A regressed or improved row with the functions behind its change (compare/explain.py)."""
    if row.verdict not in (Verdict.REGRESSED, Verdict.IMPROVED) or row.delta is None:
        return row
    why = explain(base.profile if base else None, new.profile if new else None, row.delta)
    return row if why is None else dataclasses.replace(row, explained=why)


def compare_pairs(
    name: str, backend: str, unit: str, pairs: Sequence[Pair],
    failed: tuple[Verdict, str] | None, thresholds: Thresholds, path: str = "",
) -> Comparison:  # fmt: skip
    """One row judged on the median of the per-pair ratios new/base.

    `failed` is (invalid in base or invalid in new, why) when a run failed."""
    threshold, rule = thresholds.for_label(f"{name}/{path}" if path else name)
    pairs = tuple(pairs)
    judged = judge_pairs(pairs, threshold, thresholds.min_delta)
    if failed is None and judged.verdict is None:
        failed = (Verdict.INVALID_IN_BASE, "no pair produced a ratio (base counted 0)")
    if failed is not None:
        verdict, why = failed
        row = Row(name, path, backend, unit, judged.base, judged.new, None, None, threshold,
                  rule, verdict, why)  # fmt: skip
        return Comparison((row,), thresholds, pairs=pairs)
    assert judged.verdict is not None
    row = Row(name, path, backend, unit, judged.base, judged.new, judged.delta,
              judged.delta_pct, threshold, rule, judged.verdict, judged.why)  # fmt: skip
    return Comparison((row,), thresholds, pairs=pairs)


@dataclass(frozen=True)
class PairsJudged:
    base: Summary | None  # the completed runs of each side
    new: Summary | None
    delta: float | None  # new median - base median; None, as the verdict, without a ratio
    delta_pct: float | None  # the median of the pairs' ratios new/base, less 1
    verdict: Verdict | None
    why: str


def judge_pairs(pairs: Sequence[Pair], threshold: float, min_delta: float) -> PairsJudged:
    """Interleaved pairs judged on the median of their exact ratios: the one rule
    `compare --interleave` applies and a saved comparison's check re-applies."""
    bases = [p.base for p in pairs if p.base is not None]
    news = [p.new for p in pairs if p.new is not None]
    bs = summarize(bases) if bases else None
    ns = summarize(news) if news else None
    ratios = [r for r in (p.ratio for p in pairs) if r is not None]
    if not ratios or bs is None or ns is None:
        return PairsJudged(bs, ns, None, None, None, "")
    exact_ratio: Fraction = statistics.median(
        [exact(p.new) / exact(p.base) for p in pairs if p.new is not None and p.base]
    )
    ratio = float(exact_ratio)
    separated = min(ratios) > 1 if ratio > 1 else max(ratios) < 1
    overlap = None if separated else f"pair ratios {min(ratios):.4f}-{max(ratios):.4f} straddle 1"
    exact_delta = exact(ns.median) - exact(bs.median)
    verdict, why = _judge(exact_ratio - 1, exact_delta, overlap, threshold, min_delta)
    return PairsJudged(bs, ns, ns.median - bs.median, ratio - 1, verdict, why)


# ---------------------------------------------------------------- the gate


MISSING = frozenset({Verdict.MISSING_IN_BASE, Verdict.MISSING_IN_NEW})
NO_MATCH_ADVICE = (
    "cells match by name, path and backend: give both runs the same names (--name, --cmd NAME=...)"
)
ALLOW_NO_MATCH = "or pass --allow-no-match"


def unmatched(comparison: Comparison, allowed: bool = False) -> str | None:
    """Why the comparison compared nothing, naming the cells each side holds alone (at
    most 5 a side), or None when a cell of the base matched one of the new file;
    `allowed` (--allow-no-match given): without the advice to pass it."""
    if any(r.verdict not in MISSING for r in comparison.rows):
        return None
    if not comparison.rows:
        also = "" if allowed else f": {ALLOW_NO_MATCH} if that is expected"
        return f"neither side holds a cell: nothing was compared{also}"
    sides = []
    for verdict, side in ((Verdict.MISSING_IN_NEW, "base"), (Verdict.MISSING_IN_BASE, "new")):
        labels = [printable(r.label) for r in comparison.rows if r.verdict is verdict]
        more = f" and {len(labels) - 5} more" if len(labels) > 5 else ""
        sides.append(f"only in {side}: {', '.join(labels[:5]) or 'none'}{more}")
    advice = NO_MATCH_ADVICE if allowed else f"{NO_MATCH_ADVICE}, {ALLOW_NO_MATCH}"
    return f"no cell of the base matches a cell of the new file ({'; '.join(sides)}; {advice})"


def gate(
    comparison: Comparison,
    fail_on_invalid: bool,
    allow_no_match: bool = False,
    invalid_by: str = "--fail-on-invalid",
) -> GateFailed | None:
    """What the gate refuses: regressions (exit 3) first; a comparison in which no cell
    matched (exit 5: a gate that compared nothing must not pass, e.g. after a benchmark
    was renamed) unless `allow_no_match`, which also keeps its missing cells out of
    `fail_on_invalid`; with `fail_on_invalid` (`invalid_by` names what asked for it),
    invalid or missing cells (exit 5). None when the comparison passes."""
    regressed = comparison.count(Verdict.REGRESSED)
    if regressed:
        return GateFailed(
            f"{regressed} of {plural(len(comparison.rows), 'cell')} regressed beyond "
            f"{'its' if len(comparison.rows) == 1 else 'their'} threshold",
            ExitCode.REGRESSION,
        )
    nothing = unmatched(comparison)
    if nothing is not None and not allow_no_match:
        return GateFailed(nothing, ExitCode.INVALID)
    bad = [r for r in comparison.rows if r.verdict in FAILING_WITH_INVALID]
    if nothing is not None:
        bad = [r for r in bad if r.verdict not in MISSING]
    if fail_on_invalid and bad:
        return GateFailed(
            f"{len(bad)} of {plural(len(comparison.rows), 'cell')} "
            f"{'is' if len(comparison.rows) == 1 else 'are'} invalid or missing "
            f"({invalid_by}); first: {printable(bad[0].label)}: {bad[0].verdict}",
            ExitCode.INVALID,
        )
    return None
