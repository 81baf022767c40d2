"""A comparison in each output format: terminal table, Markdown, JSON, CSV and the
github-action-benchmark `customSmallerIsBetter` export.

Pure functions of a Comparison: no paths, no timestamps, so the same inputs give
byte-identical output. Every format says when the comparison was forced past a
fingerprint mismatch.

JSON format history (bump VERSION and add a line on every change to the layout):
  1 - first version: {format, version, mode, thresholds, forced, summary,
      verdict_line, cells[], pairs, median_ratio}; `build_changes` (optional, only
      with --allow-build-change): the cells compared across build modes.
  2 - `geometric_mean`: {ratio, cells}, the geometric mean of new/base over the cells
      with both sides valid (null without any, and for --interleave); CSV column
      `geomean_ratio`.
     Later, optional (files without them read as before): `geometric_mean.totals` and
     `.left_out`, only where a collected runtime's cells are compared: of `cells`, those
     counted by their total, and the cells left out for a total not valid (the mean takes
     a runtime's cell by its total, like for like with every other cell's whole count).
     `cells[].total`, only on a
     collected runtime's cell: {base, new (each {total, interval_95, valid, reason} or
     null), delta, delta_pct, interval_95 (of the difference), verdict (null where the
     totals do not gate), rule, decides, base_whole / new_whole (only for a side without
     a runtime's figures: its whole count, set against the other's total)}; CSV columns
     from `base_total` on, only when a row has a total.
     `cells[].rounds`, only on an interleaved cell with a control arm or of an interleave
     of several cells (`--base-target`): {pairs, median_ratio, control (null, or {values,
     drift, first_last, failed})}.
     `cells[].explained`, only on a changed cell whose two sides kept a profile: {per,
     functions[] {function, base, new, delta, share, approx, other_build (only where the
     other build's DWARF was read: {side, state "inlined" or "absent", into[] {function,
     sites}})}, allocations, flame (only where both sides kept their calls: {per,
     names[], base and new: {self [[name index, self]], others, edges [[caller index,
     callee index, inclusive]]}}, what `icount report` draws the differential flame
     graph from)}.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from icount import numfmt
from icount.compare import explain
from icount.compare.model import (
    VERDICT_ORDER,
    Comparison,
    Row,
    TotalChange,
    Verdict,
    unmatched,
)
from icount.compare.thresholds import Thresholds
from icount.results import Results
from icount.results.runtime import RuntimeFigures
from icount.sorting import Sort, by_name
from icount.stats import Summary
from icount.tables import Column, Table, render_markdown
from icount.text import md_code, md_text, printable

FORMAT = "icount-compare"
VERSION = 2

CSV_HEADER = (
    "name",
    "path",
    "backend",
    "unit",
    "base_median",
    "base_min",
    "base_max",
    "new_median",
    "new_min",
    "new_max",
    "delta",
    "delta_pct",
    "threshold_pct",
    "verdict",
    "why",
    "forced",
    "geomean_ratio",
)
# a collected runtime's totals: only in comparisons with such a cell (other files keep
# their bytes)
CSV_TOTAL = (
    "base_total",
    "base_total_interval_95",
    "new_total",
    "new_total_interval_95",
    "total_delta_pct",
    "total_interval_95",
    "total_verdict",
    "total_rule",
)


def csv_header(c: Comparison) -> tuple[str, ...]:
    return CSV_HEADER + (CSV_TOTAL if _has_totals(c) else ())


def _has_totals(c: Comparison) -> bool:
    return any(r.total is not None for r in c.rows)


def given_order(c: Comparison, new: Results, base: Results) -> Comparison:
    """`c` with its rows as the cells were given: in the new file's order, then the
    cells only the base holds, in its order."""
    given = {cell.key: (1, cell.order) for cell in base.cells}
    given |= {cell.key: (0, cell.order) for cell in new.cells}
    rows = sorted(c.rows, key=lambda r: (given.get(r.key, (2, 0)), r.key))
    return dataclasses.replace(c, rows=tuple(rows))


def with_build_changes(c: Comparison, changes: Sequence[str]) -> Comparison:
    """`c` saying which cells it compares across builds (--allow-build-change), each
    change as build_label.cell_changes words it."""
    return dataclasses.replace(c, build_changes=tuple(changes)) if changes else c


def in_order(c: Comparison, sort: str) -> Comparison:
    """`c` as it is (sort "order") or with its rows by name in natural order (fib-2
    before fib-10), for every format."""
    if sort != Sort.NAME:
        return c
    return dataclasses.replace(c, rows=tuple(by_name(c.rows, lambda r: r.label)))


# ---------------------------------------------------------------- shared text


def pct_text(fraction: float) -> str:
    """0.01 -> '1%', 0.025 -> '2.5%': thresholds as the user wrote them."""
    return f"{fraction * 100:.6g}%"


def count_text(verdict: Verdict, n: int) -> str:
    if verdict is Verdict.REGRESSED:
        return f"{n} regression" + ("s" if n != 1 else "")
    return f"{n} {verdict.value}"


def counts_text(rows: Iterable[tuple[str, str, float | None]], legacy: bool = False) -> str:
    """'1 regression, 2 improved, 1 within threshold, 5 unchanged' for rows given as
    (verdict, why, delta); unchanged rows that moved within their threshold, and size rows
    outside the gate ('61 not gated'), counted apart though their verdict is unchanged.
    `legacy`: counted by verdict alone, as comparisons written before were."""
    counts = Counter(str(v) if legacy else shown_as(v, why, delta) for v, why, delta in rows)
    parts = []
    for v in VERDICT_ORDER:
        if v is Verdict.UNCHANGED and counts[WITHIN]:
            parts.append(f"{counts[WITHIN]} {WITHIN}")
        if counts[v.value]:
            parts.append(count_text(v, counts[v.value]))
    parts += [f"{counts[NOT_GATED]} {NOT_GATED}"] if counts[NOT_GATED] else []
    return ", ".join(parts) or "no cells"


def limits_text(
    t: Thresholds, history: str | None = None, median_ratio: float | None = None,
    pairs: int = 0,
) -> str:  # fmt: skip
    """'threshold 1%, min delta 10': what the verdict line's counts were judged by."""
    limits = f"threshold {pct_text(t.default)}"
    if t.overrides:
        limits += ", " + ", ".join(f"{o.glob} {pct_text(o.threshold)}" for o in t.overrides)
    limits += f", min delta {numfmt.plain(t.min_delta)}"
    if history:
        limits += f"; {history}"
    if median_ratio is not None:
        limits += f"; median ratio new/base {median_ratio:.4f} over {pairs} pairs"
    return limits


def verdict_line(c: Comparison, icons: bool = False) -> str:
    """'1 regression, 2 improved, 5 unchanged (threshold 1%, min delta 10)'."""
    counts = counts_text((r.verdict, r.why, r.delta) for r in c.rows)
    ratio = c.median_ratio if c.pairs is not None else None
    text = f"{counts} ({limits_text(c.thresholds, c.history, ratio, len(c.pairs or ()))})"
    if c.forced:
        text += " [FORCED]"
    if c.build_changes:
        text += " [BUILD CHANGED]"
    if not icons:
        return text
    if c.count(Verdict.REGRESSED):
        icon = "❌"
    elif (
        c.forced
        or c.build_changes
        or any(r.verdict not in (Verdict.IMPROVED, Verdict.UNCHANGED) for r in c.rows)
    ):
        icon = "⚠️"
    else:
        icon = "✅"
    return f"{icon} {text}"


def forced_line(c: Comparison) -> str | None:
    if not c.forced:
        return None
    return "forced with --force although the environments differ: " + "; ".join(
        d.describe() for d in c.forced
    )


def allowed_lines(c: Comparison) -> list[str]:
    """What a comparison was let past: environments (--force), builds (--allow-build-change)."""
    from icount.build_label import changes_line

    return [line for line in (forced_line(c), changes_line(c.build_changes)) if line]


def verdict_text(row: Row) -> str:
    """The verdict as the tables show it: an unchanged cell that did move, by no more
    than its threshold, reads "within threshold" (a change of zero stays "unchanged");
    the gate and JSON keep the verdict "unchanged"."""
    if row.verdict is Verdict.UNCHANGED and _not_gated(row):
        return row.why
    return shown_as(row.verdict, row.why, row.delta)


WITHIN = "within threshold"
# a size row outside the gate (size_gate.py): "not gated (regressed)"
NOT_GATED = "not gated"


def shown_as(verdict: str, why: str, delta: float | None) -> str:
    """A verdict as every format with verdict words shows it: "within threshold" for an
    unchanged cell that moved (by no more than its threshold), "not gated" for a size
    row outside the gate, else the verdict."""
    if verdict == Verdict.UNCHANGED and why.startswith(NOT_GATED):
        return NOT_GATED
    if verdict == Verdict.UNCHANGED and not why and delta:
        return WITHIN
    return str(verdict)


def _not_gated(row: Row) -> bool:
    return row.why.startswith(NOT_GATED)


def note(row: Row) -> str:
    """Why the verdict, then (--history) why the threshold: one line."""
    why = "" if _not_gated(row) else row.why
    return "; ".join(p for p in (why, row.basis) if p)


def _exact(s: Summary | None, unit: str) -> bool:
    """Whether a side's runs repeat to the instruction (min == max, a whole count): the
    Markdown for a PR then prints the count itself, as Gungraun does, not 2.107M."""
    return s is not None and unit != numfmt.UNIT_BYTES and s.min == s.max and s.median.is_integer()


def _median(s: Summary | None, unit: str, exact: bool = False) -> str:
    if s is None:
        return "-"
    return numfmt.plain(s.median) if exact and _exact(s, unit) else numfmt.figure(s.median, unit)


def _delta(row: Row, exact: bool = False) -> str:
    if row.delta is None:
        return ""
    whole = exact and _exact(row.base, row.unit) and _exact(row.new, row.unit)
    shown = numfmt.plain(row.delta) if whole else numfmt.figure(row.delta, row.unit)
    return ("+" if row.delta > 0 else "") + shown


def _change(row: Row) -> str:
    if row.delta_pct is not None:
        return numfmt.signed_percent(row.delta_pct)
    if row.delta:
        return "new from 0"
    return ""


# ---------------------------------------------------------------- table and Markdown


def build_table(c: Comparison, with_verdict: bool = True, markdown: bool = False) -> Table:
    """The comparison's table; `markdown`: for a PR's Markdown, every name from the
    files in a code span (text.md_code: GitHub links, mentions and math nothing in one),
    other text escaped (text.md_text), and exact counts where a side's runs repeat."""
    rows = c.rows
    esc = md_text if markdown else str
    name = md_code if markdown else str
    multi_backend = len({r.backend for r in rows}) > 1
    multi_unit = len({r.unit for r in rows}) > 1
    columns = [Column("name", "left")]
    if multi_backend:
        columns.append(Column("backend", "left"))
    if multi_unit:
        columns.append(Column("unit", "left"))
    columns += [
        Column("base"),
        Column("new"),
        Column("delta"),
        Column("change"),
    ]
    totals = _has_totals(c)
    if totals:  # a collected runtime's: the base, new and change of the total per request
        columns += [Column("base total"), Column("new total"), Column("total change")]
    columns += [
        Column("threshold"),
        Column("verdict", "left"),
    ]
    units = sorted({r.unit for r in rows}) or ["instructions"]
    backends = sorted({r.backend for r in rows})
    title = f"{', '.join(map(esc, units))} ({', '.join(map(esc, backends))}): base vs new"
    table = Table(columns=columns, title=title)
    notes: list[str] = []
    # --history gives many cells one basis ("repeats to the instruction"): one note for all
    shared = Counter(r.basis for r in rows if r.basis and not r.why)
    numbered: dict[str, int] = {}
    for r in rows:
        cells = [name(r.label)]
        if multi_backend:
            cells.append(name(r.backend))
        if multi_unit:
            cells.append(name(r.unit))
        verdict = verdict_text(r)
        if shared.get(r.basis, 0) > 1 and not r.why:
            if r.basis not in numbered:
                notes.append(f"[{len(notes) + 1}] {shared[r.basis]} cells: {esc(r.basis)}")
                numbered[r.basis] = len(notes)
            verdict += f" [{numbered[r.basis]}]"
        elif note(r):
            notes.append(f"[{len(notes) + 1}] {name(r.label)}: {esc(note(r))}")
            verdict += f" [{len(notes)}]"
        cells += [
            _median(r.base, r.unit, markdown),
            _median(r.new, r.unit, markdown),
            _delta(r, markdown),
            _change(r),
        ]
        if totals:
            t = r.total
            cells += [
                _total_text(t.base, t.base_whole) if t else "-",
                _total_text(t.new, t.new_whole) if t else "-",
                numfmt.signed_percent(t.delta_pct) if t and t.delta_pct is not None else "",
            ]
        cells += [pct_text(r.threshold), verdict]
        table.add_row(cells)
    table.notes += notes
    if totals:
        table.notes += [total_line(r.label, r.total, name) for r in rows if r.total is not None]
        table.notes.append(TOTALS_LEGEND)
    if with_verdict:  # Markdown names them under each changed cell's line instead
        table.notes += [explain.line(r.label, r.explained) for r in rows if r.explained]
    if units == [numfmt.UNIT_BYTES]:  # icount size -o: one exact reading per file
        table.notes.append(
            f"sizes read from the files; change relative to the base; {numfmt.BYTES_LEGEND}"
        )
    else:
        table.notes.append(
            f"medians of fresh processes; change relative to the base median; {numfmt.LEGEND}"
        )
    if with_verdict:
        table.notes += allowed_lines(c)
        table.notes += _geomean_lines(c)
    if with_verdict:
        table.notes.append(verdict_line(c))
    return table


TOTALS_LEGEND = (
    "base, new: a collected runtime's mutator; total: mutator + the runtime's own work "
    "(collector, compiler) per request ±its 95% interval, ~ where that interval is wider "
    "than the spread limit; a total's change counts beyond the threshold and the two "
    "intervals in quadrature"
)


def _total_text(f: RuntimeFigures | None, whole: float | None = None) -> str:
    """'55.64k ±109.4', '~55.64k ±3.1k' (not valid), '55.60k whole' (a side without a
    runtime's figures, its whole count), '-' (none)."""
    if f is None and whole is not None:
        return f"{numfmt.si(whole)} whole"
    if f is None or f.total is None:
        return "-"
    mark = "" if f.total_valid else "~"
    spread = f" ±{numfmt.si(f.half_width)}" if math.isfinite(f.half_width) else ""
    return f"{mark}{numfmt.si(f.total)}{spread}"


def total_line(label: str, t: TotalChange, esc: Callable[[str], str] = str) -> str:
    """'node/json: total 55.64k ±109.4 -> 58.1k ±98.3 +4.42%: regressed, beyond ...'."""
    return f"{esc(label)}: {_total_judged(t)}"


def _total_judged(t: TotalChange) -> str:
    # every word of it is icount's own, the figures too: nothing from a file to escape
    change = f" {numfmt.signed_percent(t.delta_pct)}" if t.delta_pct is not None else ""
    verdict = f"{t.verdict.value}, " if t.verdict is not None else ""
    decides = " (decides the cell)" if t.decides else ""
    return (
        f"total {_total_text(t.base, t.base_whole)} -> {_total_text(t.new, t.new_whole)}"
        f"{change}: {verdict}{t.rule}{decides}"
    )


def _geomean_lines(c: Comparison) -> list[str]:
    from icount.compare import geomean

    text = geomean.line(c)
    return [text] if text and c.pairs is None else []


def build_pairs_table(c: Comparison, row: Row | None = None, markdown: bool = False) -> Table:
    """The comparison's pairs, or (an interleave of several cells) `row`'s own; with a
    control arm, its figure in each round beside them (compare/control.py); `markdown`:
    the cell's name in its title a code span, as in the comparison's table."""
    rounds = row.rounds if row is not None else (c.rows[0].rounds if c.rows else None)
    pairs = rounds.pairs if row is not None and rounds is not None else c.pairs or ()
    ctl = rounds.control if rounds is not None else None
    columns = [Column("pair"), Column("base"), Column("new"), Column("new/base")]
    title = "interleaved pairs (base then new)"
    if ctl is not None:
        columns.append(Column("control"))
        title = "interleaved rounds (order rotated)"
    label = row and (md_code(row.label) if markdown else row.label)
    table = Table(columns=columns, title=title if row is None else f"{label}: {title}")
    for i, p in enumerate(pairs, 1):
        cells = [
            str(i),
            numfmt.si(p.base) if p.base is not None else "-",
            numfmt.si(p.new) if p.new is not None else "-",
            f"{p.ratio:.4f}" if p.ratio is not None else "-",
        ]
        if ctl is not None:
            value = ctl.values[i - 1] if i <= len(ctl.values) else None
            cells.append(numfmt.si(value) if value is not None else "-")
        table.add_row(cells)
    ratios = [p.ratio for p in pairs if p.ratio is not None]
    if ratios:
        median = statistics.median(ratios)
        table.notes.append(
            f"median ratio {median:.4f} (min {min(ratios):.4f}, max {max(ratios):.4f}); "
            "the verdict gates on the median ratio"
        )
    if ctl is not None:
        table.notes.append(ctl.describe())
    return table


def pairs_tables(c: Comparison, markdown: bool = False) -> list[Table]:
    """The interleaved pairs: the comparison's (one cell), or each cell's own."""
    if c.pairs:
        return [build_pairs_table(c)]
    return [
        build_pairs_table(c, r, markdown) for r in c.rows if r.rounds is not None and r.rounds.pairs
    ]


def tables(c: Comparison) -> list[Table]:
    """The terminal tables: the interleaved pairs first, where there are any."""
    main = build_table(c)
    return [*pairs_tables(c), main]


def render_md(c: Comparison) -> str:
    """The PR comment: every name, note and field from the files escaped (md_code for a
    cell's name, md_text for the rest), so none can end its line, open a link or HTML,
    or reach the reader's terminal or step summary as a control sequence."""
    lines = [printable(verdict_line(c, icons=True)), ""]
    nothing = unmatched(c)
    if nothing is not None:  # the gate fails (exit 5) unless --allow-no-match
        lines += [f"❌ **nothing compared**: {md_text(nothing)}", ""]
    lines += [*_geomean_lines(c), ""] if _geomean_lines(c) else []
    for line in allowed_lines(c):
        lines += [f"> **{md_text(line)}**", ""]
    notable = [r for r in c.rows if r.verdict is not Verdict.UNCHANGED]
    for r in notable:
        change = _change(r)
        detail = f"{change} (threshold {pct_text(r.threshold)})" if change else r.why
        if r.total is not None and r.total.decides and r.total.delta_pct is not None:
            # the total decided: its change first; the line under it says how it was judged
            total = numfmt.signed_percent(r.total.delta_pct)
            detail = f"total {total}, mutator {change} (threshold {pct_text(r.threshold)})"
            detail += f"; {r.basis}" if r.basis else ""
        elif change and note(r):
            detail += f": {note(r)}"
        elif r.basis:
            detail += f"; {r.basis}"
        lines.append(f"- **{r.verdict.value}**: {md_code(r.label)} {md_text(detail)}".rstrip())
        lines += [f"  - {_total_judged(r.total)}"] if r.total is not None else []
        lines += explain.markdown(r.explained) if r.explained else []
    if notable:
        lines.append("")
    lines += [
        f"<details><summary>{len(c.rows)} cell{'' if len(c.rows) == 1 else 's'} compared</summary>",
        "",
        render_markdown(build_table(c, with_verdict=False, markdown=True)).rstrip("\n"),
    ]
    for t in pairs_tables(c, markdown=True):
        lines += ["", render_markdown(t).rstrip("\n")]
    lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- JSON and CSV


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _side(s: Summary | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {
        "median": s.median,
        "min": s.min,
        "max": s.max,
        "spread": _finite(s.spread),
        "runs": s.n,
    }


def _row_json(r: Row) -> dict[str, Any]:
    return {
        "name": r.name,
        "path": r.path,
        "backend": r.backend,
        "unit": r.unit,
        "base": _side(r.base),
        "new": _side(r.new),
        "delta": _finite(r.delta),
        "delta_pct": _finite(r.delta_pct),
        "threshold": r.threshold,
        "threshold_rule": r.rule,
        "verdict": r.verdict.value,
        "why": r.why,
        # an unchanged cell that moved, by no more than its threshold (the verdict stays
        # "unchanged" for the gate and older readers); only there, so others keep their bytes
        **({"within_threshold": True} if verdict_text(r) == WITHIN else {}),
        # only with --history and --confirm, so that other comparisons keep their bytes
        **({"threshold_basis": r.basis} if r.basis else {}),
        **({"confirm": _side(r.confirm)} if r.confirm is not None else {}),
        # only where both sides kept a profile (compare/explain.py)
        **({"explained": r.explained.to_json()} if r.explained is not None else {}),
        # only on a collected runtime's cell
        **({"total": _total_json(r.total)} if r.total is not None else {}),
        # only on an interleaved cell with a control arm or of several interleaved cells
        **({"rounds": r.rounds.to_json()} if r.rounds is not None else {}),
    }


def _total_side(f: RuntimeFigures | None) -> dict[str, Any] | None:
    if f is None:
        return None
    return {
        "total": f.total,
        "interval_95": _finite(f.half_width),
        "valid": f.total_valid,
        "reason": f.reason,
    }


def _total_json(t: TotalChange) -> dict[str, Any]:
    return {
        "base": _total_side(t.base),
        "new": _total_side(t.new),
        "delta": _finite(t.delta),
        "delta_pct": _finite(t.delta_pct),
        "interval_95": _finite(t.interval),
        "verdict": t.verdict.value if t.verdict is not None else None,
        "rule": t.rule,
        "decides": t.decides,
        # a side without a runtime's figures: its whole count, which the other's total met
        **({"base_whole": t.base_whole} if t.base_whole is not None else {}),
        **({"new_whole": t.new_whole} if t.new_whole is not None else {}),
    }


def to_json(c: Comparison) -> dict[str, Any]:
    t = c.thresholds
    return {
        "format": FORMAT,
        "version": VERSION,
        "mode": "interleave" if c.pairs is not None else "files",
        "thresholds": {
            "default": t.default,
            "min_delta": t.min_delta,
            "overrides": [{"glob": o.glob, "threshold": o.threshold} for o in t.overrides],
        },
        "forced": [{"field": d.field, "base": d.base, "new": d.new} for d in c.forced],
        **({"build_changes": list(c.build_changes)} if c.build_changes else {}),
        "summary": {v.value: c.count(v) for v in VERDICT_ORDER},
        "verdict_line": verdict_line(c),
        "geometric_mean": _geomean_json(c),
        "cells": [_row_json(r) for r in c.rows],
        "pairs": None
        if c.pairs is None
        else [{"base": p.base, "new": p.new, "ratio": p.ratio} for p in c.pairs],
        "median_ratio": c.median_ratio,
        **({"history": c.history} if c.history else {}),
    }


def _geomean_json(c: Comparison) -> dict[str, Any] | None:
    from icount.compare import geomean

    g = geomean.of(c) if c.pairs is None else None
    if g is None:
        return None
    # a collected runtime's cells: how many counted by their total, how many were left
    # out (only where there are any, so that other comparisons keep their bytes)
    runtimes = {"totals": g.totals, "left_out": g.left_out} if g.totals or g.left_out else {}
    return {"ratio": g.ratio, "cells": g.cells, **runtimes}


def _num(x: float | None) -> str:
    return numfmt.plain(x) if x is not None and math.isfinite(x) else ""


def csv_rows(c: Comparison) -> list[list[object]]:
    forced = "; ".join(allowed_lines(c))
    g = _geomean_json(c)
    geo = f"{g['ratio']:.6f}" if g else ""
    totals = _has_totals(c)
    out: list[list[object]] = []
    for r in c.rows:
        b, n = r.base, r.new
        out.append(
            [
                r.name,
                r.path,
                r.backend,
                r.unit,
                _num(b.median if b else None),
                _num(b.min if b else None),
                _num(b.max if b else None),
                _num(n.median if n else None),
                _num(n.min if n else None),
                _num(n.max if n else None),
                _num(r.delta),
                f"{r.delta_pct * 100:.4f}" if r.delta_pct is not None else "",
                f"{r.threshold * 100:.6g}",
                r.verdict.value,
                note(r) or (WITHIN if verdict_text(r) == WITHIN else ""),
                forced,
                geo,
            ]
            + (_total_csv(r.total) if totals else [])
        )
    return out


def _total_csv(t: TotalChange | None) -> list[object]:
    if t is None:
        return [""] * len(CSV_TOTAL)
    b, n = t.base, t.new
    return [
        _num(b.total if b else t.base_whole),
        _num(b.half_width if b else None),
        _num(n.total if n else t.new_whole),
        _num(n.half_width if n else None),
        f"{t.delta_pct * 100:.4f}" if t.delta_pct is not None else "",
        _num(t.interval),
        t.verdict.value if t.verdict is not None else "",
        t.rule,
    ]


def benchmark_entries(c: Comparison) -> list[dict[str, Any]]:
    """github-action-benchmark `customSmallerIsBetter`: one entry per cell with a
    valid new side, {name, unit, value, range, extra}; range and extra are strings
    in that convention. Cells without a new figure are left out (the action needs a
    number), and they show in every other format. A collected runtime's cell with a
    valid new total has a second entry, its total (_total_entry)."""
    allowed = allowed_lines(c) + _geomean_lines(c)
    entries: list[dict[str, Any]] = []
    for r in c.rows:
        if r.new is None:
            continue
        extra = [f"verdict: {verdict_text(r)}", f"runs: {r.new.n}"]
        if r.base is not None:
            extra.insert(0, f"base median: {numfmt.plain(r.base.median)}")
        if r.delta_pct is not None:
            extra.insert(1, f"change: {numfmt.signed_percent(r.delta_pct)}")
        if r.basis:
            extra.append(f"threshold: {pct_text(r.threshold)} ({r.basis})")
        if r.rounds is not None and r.rounds.control is not None and r.why:
            extra.append(r.why)  # what the control's drift let it claim
        if r.total is not None and r.total.decides and r.why:
            extra.append(r.why)  # the total's verdict is the cell's: say so by the mutator
        extra += allowed
        entries.append(
            {
                "name": f"{r.label} ({r.backend})",
                "unit": r.unit,
                "value": r.new.median,
                "range": f"± {numfmt.plain((r.new.max - r.new.min) / 2)}",
                "extra": "\n".join(extra),
            }
        )
        total = _total_entry(r, allowed)
        entries += [total] if total is not None else []
    return entries


def _total_entry(r: Row, allowed: list[str]) -> dict[str, Any] | None:
    """A collected runtime's total per request as an entry of its own ('LABEL total
    (BACKEND)'), its range the 95% interval, where the new side's total is valid: the
    action tracks each name as a series, and the total is another quantity than the
    mutator."""
    t = r.total
    f = t.new if t is not None else None
    if t is None or f is None or f.total is None or not f.total_valid:
        return None
    base = t.base.total if t.base is not None else t.base_whole
    extra = [] if base is None else [f"base total: {numfmt.plain(base)}"]
    if t.delta_pct is not None:
        extra.append(f"change: {numfmt.signed_percent(t.delta_pct)}")
    if t.interval is not None:
        extra.append(f"95% interval of the difference: ± {numfmt.plain(t.interval)}")
    verdict = t.verdict.value if t.verdict is not None else "does not gate"
    extra.append(f"verdict: {verdict}{' (decides the cell)' if t.decides else ''}")
    extra.append(f"rule: {t.rule}")
    extra += allowed
    return {
        "name": f"{r.label} total ({r.backend})",
        "unit": r.unit,
        "value": f.total,
        "range": f"± {numfmt.plain(f.half_width)}",
        "extra": "\n".join(extra),
    }
