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
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from typing import Any

from icount import numfmt
from icount.compare import explain
from icount.compare.model import VERDICT_ORDER, Comparison, Row, Verdict
from icount.results import Results
from icount.sorting import Sort, by_name
from icount.stats import Summary
from icount.tables import Column, Table, render_markdown

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


def given_order(c: Comparison, new: Results, base: Results) -> Comparison:
    """`c` with its rows as the cells were given: in the new file's order, then the
    cells only the base holds, in its order."""
    given = {cell.key: (1, cell.order) for cell in base.cells}
    given |= {cell.key: (0, cell.order) for cell in new.cells}
    rows = sorted(c.rows, key=lambda r: (given.get(r.key, (2, 0)), r.key))
    return dataclasses.replace(c, rows=tuple(rows))


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


def _count_text(verdict: Verdict, n: int) -> str:
    if verdict is Verdict.REGRESSED:
        return f"{n} regression" + ("s" if n != 1 else "")
    return f"{n} {verdict.value}"


def verdict_line(c: Comparison, icons: bool = False) -> str:
    """'1 regression, 2 improved, 5 unchanged (threshold 1%, min delta 10)'."""
    counts = [(v, c.count(v)) for v in VERDICT_ORDER]
    parts = [_count_text(v, n) for v, n in counts if n]
    t = c.thresholds
    limits = f"threshold {pct_text(t.default)}"
    if t.overrides:
        limits += ", " + ", ".join(f"{o.glob} {pct_text(o.threshold)}" for o in t.overrides)
    limits += f", min delta {numfmt.plain(t.min_delta)}"
    if c.history:
        limits += f"; {c.history}"
    if c.pairs is not None and c.median_ratio is not None:
        limits += f"; median ratio new/base {c.median_ratio:.4f} over {len(c.pairs)} pairs"
    text = f"{', '.join(parts) or 'no cells'} ({limits})"
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


def note(row: Row) -> str:
    """Why the verdict, then (--history) why the threshold: one line."""
    return "; ".join(p for p in (row.why, row.basis) if p)


def _median(s: Summary | None, unit: str) -> str:
    return numfmt.figure(s.median, unit) if s is not None else "-"


def _delta(row: Row) -> str:
    if row.delta is None:
        return ""
    return ("+" if row.delta > 0 else "") + numfmt.figure(row.delta, row.unit)


def _change(row: Row) -> str:
    if row.delta_pct is not None:
        return numfmt.signed_percent(row.delta_pct)
    if row.delta:
        return "new from 0"
    return ""


# ---------------------------------------------------------------- table and Markdown


def build_table(c: Comparison, with_verdict: bool = True) -> Table:
    rows = c.rows
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
        Column("threshold"),
        Column("verdict", "left"),
    ]
    units = sorted({r.unit for r in rows}) or ["instructions"]
    backends = sorted({r.backend for r in rows})
    table = Table(columns=columns, title=f"{', '.join(units)} ({', '.join(backends)}): base vs new")
    notes: list[str] = []
    # --history gives many cells one basis ("repeats to the instruction"): one note for all
    shared = Counter(r.basis for r in rows if r.basis and not r.why)
    numbered: dict[str, int] = {}
    for r in rows:
        cells = [r.label]
        if multi_backend:
            cells.append(r.backend)
        if multi_unit:
            cells.append(r.unit)
        verdict = r.verdict.value
        if shared.get(r.basis, 0) > 1 and not r.why:
            if r.basis not in numbered:
                notes.append(f"[{len(notes) + 1}] {shared[r.basis]} cells: {r.basis}")
                numbered[r.basis] = len(notes)
            verdict += f" [{numbered[r.basis]}]"
        elif note(r):
            notes.append(f"[{len(notes) + 1}] {r.label}: {note(r)}")
            verdict += f" [{len(notes)}]"
        cells += [
            _median(r.base, r.unit),
            _median(r.new, r.unit),
            _delta(r),
            _change(r),
            pct_text(r.threshold),
            verdict,
        ]
        table.add_row(cells)
    table.notes += notes
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


def _geomean_lines(c: Comparison) -> list[str]:
    from icount.compare import geomean

    text = geomean.line(c)
    return [text] if text and c.pairs is None else []


def build_pairs_table(c: Comparison) -> Table:
    table = Table(
        columns=[Column("pair"), Column("base"), Column("new"), Column("new/base")],
        title="interleaved pairs (base then new)",
    )
    for i, p in enumerate(c.pairs or (), 1):
        table.add_row(
            [
                str(i),
                numfmt.si(p.base) if p.base is not None else "-",
                numfmt.si(p.new) if p.new is not None else "-",
                f"{p.ratio:.4f}" if p.ratio is not None else "-",
            ]
        )
    ratios = [p.ratio for p in c.pairs or () if p.ratio is not None]
    if ratios:
        table.notes.append(
            f"median ratio {c.median_ratio:.4f} (min {min(ratios):.4f}, max {max(ratios):.4f}); "
            "the verdict gates on the median ratio"
        )
    return table


def tables(c: Comparison) -> list[Table]:
    """The terminal tables: the interleaved pairs first, where there are any."""
    main = build_table(c)
    return [build_pairs_table(c), main] if c.pairs is not None else [main]


def render_md(c: Comparison) -> str:
    lines = [verdict_line(c, icons=True), ""]
    lines += [*_geomean_lines(c), ""] if _geomean_lines(c) else []
    for line in allowed_lines(c):
        lines += [f"> **{line}**", ""]
    notable = [r for r in c.rows if r.verdict is not Verdict.UNCHANGED]
    for r in notable:
        change = _change(r)
        detail = f"{change} (threshold {pct_text(r.threshold)})" if change else r.why
        if change and note(r):
            detail += f": {note(r)}"
        elif r.basis:
            detail += f"; {r.basis}"
        lines.append(f"- **{r.verdict.value}**: `{r.label}` {detail}".rstrip())
        lines += explain.markdown(r.explained) if r.explained else []
    if notable:
        lines.append("")
    lines += [
        f"<details><summary>{len(c.rows)} cell{'' if len(c.rows) == 1 else 's'} compared</summary>",
        "",
        render_markdown(build_table(c, with_verdict=False)).rstrip("\n"),
    ]
    if c.pairs is not None:
        lines += ["", render_markdown(build_pairs_table(c)).rstrip("\n")]
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
        # only with --history and --confirm, so that other comparisons keep their bytes
        **({"threshold_basis": r.basis} if r.basis else {}),
        **({"confirm": _side(r.confirm)} if r.confirm is not None else {}),
        # only where both sides kept a profile (compare/explain.py)
        **({"explained": r.explained.to_json()} if r.explained is not None else {}),
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
    return None if g is None else {"ratio": g.ratio, "cells": g.cells}


def _num(x: float | None) -> str:
    return numfmt.plain(x) if x is not None and math.isfinite(x) else ""


def csv_rows(c: Comparison) -> list[list[object]]:
    forced = "; ".join(allowed_lines(c))
    g = _geomean_json(c)
    geo = f"{g['ratio']:.6f}" if g else ""
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
                note(r),
                forced,
                geo,
            ]
        )
    return out


def benchmark_entries(c: Comparison) -> list[dict[str, Any]]:
    """github-action-benchmark `customSmallerIsBetter`: one entry per cell with a
    valid new side, {name, unit, value, range, extra}; range and extra are strings
    in that convention. Cells without a new figure are left out (the action needs a
    number), and they show in every other format."""
    allowed = allowed_lines(c) + _geomean_lines(c)
    entries: list[dict[str, Any]] = []
    for r in c.rows:
        if r.new is None:
            continue
        extra = [f"verdict: {r.verdict.value}", f"runs: {r.new.n}"]
        if r.base is not None:
            extra.insert(0, f"base median: {numfmt.plain(r.base.median)}")
        if r.delta_pct is not None:
            extra.insert(1, f"change: {numfmt.signed_percent(r.delta_pct)}")
        if r.basis:
            extra.append(f"threshold: {pct_text(r.threshold)} ({r.basis})")
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
    return entries
