"""The `icount inline` report: one JSON-ready dict, rendered as tables or JSON.

The dict is the single source of every figure: the terminal and Markdown renderers
only format what it holds, so the three formats always agree. Deltas are B - A.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from icount import numfmt
from icount.inline.align import Alignment, FunctionDelta
from icount.inline.binary import BinaryInfo
from icount.inline.dwarf import InlineSites
from icount.tables import Column, Table, render

FORMAT = "icount-inline"
# Version history: 1 - first version.
VERSION = 1


@dataclass
class BuildFacts:
    """What is known about one build besides its profile."""

    label: str
    binary: BinaryInfo | None = None
    inlines: InlineSites | None = None
    notes: list[str] = field(default_factory=list)


def _size(binary: BinaryInfo | None, name: str) -> int | None:
    return None if binary is None else binary.sizes.get(name)


def _sites(inlines: InlineSites | None, fn: str) -> Counter[str]:
    return Counter() if inlines is None else inlines.sites(fn)


def _holders(inlines: InlineSites | None, callee: str) -> dict[str, int] | None:
    """Functions that hold inlined copies of `callee`, with the number of copies
    (None: that build's DWARF was not read)."""
    return None if inlines is None else inlines.holders(callee)


def _only_row(d: FunctionDelta, side: str, facts: BuildFacts, other: BuildFacts) -> dict[str, Any]:
    stats = d.a if side == "a" else d.b
    assert stats is not None
    return {
        "name": d.name,
        "self": stats.self_cost,
        "inclusive": stats.inclusive,
        "calls": stats.calls,
        "size": _size(facts.binary, d.name),
        # Where the other build's compiler put this function's code instead.
        "inlined_into_other": _holders(other.inlines, d.name),
    }


def build_report(
    alignment: Alignment, event: str, a: BuildFacts, b: BuildFacts, top: int
) -> dict[str, Any]:
    """All figures of the report. `top` (0: all) limits the function and edge lists
    (the terminal table also cuts the inlining rows at `top`); `inline_sites` holds
    every inlined callee of the functions listed."""

    def cut(rows: Sequence[Any]) -> list[Any]:
        return list(rows if top <= 0 else rows[:top])

    functions = [
        {
            "name": d.name,
            "in_a": d.a is not None,
            "in_b": d.b is not None,
            "self_a": d.a.self_cost if d.a else 0,
            "self_b": d.b.self_cost if d.b else 0,
            "self_delta": d.self_delta,
            "inclusive_a": d.a.inclusive if d.a else 0,
            "inclusive_b": d.b.inclusive if d.b else 0,
            "inclusive_delta": d.inclusive_delta,
            "calls_a": d.a.calls if d.a else 0,
            "calls_b": d.b.calls if d.b else 0,
            "size_a": _size(a.binary, d.name),
            "size_b": _size(b.binary, d.name),
        }
        for d in cut(alignment.functions)
    ]
    edges = [
        {
            "caller": e.caller,
            "callee": e.callee,
            "calls_a": e.a.count if e.a else 0,
            "calls_b": e.b.count if e.b else 0,
            "calls_delta": e.count_delta,
        }
        for e in cut(alignment.edges)
    ]
    only_a = [_only_row(d, "a", a, b) for d in cut(alignment.only_a)]
    only_b = [_only_row(d, "b", b, a) for d in cut(alignment.only_b)]
    return {
        "format": FORMAT,
        "version": VERSION,
        "event": event,
        "builds": {
            "a": _build_entry(a, alignment.a.total),
            "b": _build_entry(b, alignment.b.total),
        },
        "total_delta": alignment.b.total - alignment.a.total,
        "only_in_a": only_a,
        "only_in_b": only_b,
        "call_changes": edges,
        "functions": functions,
        "inline_sites": _inline_rows(functions, only_a, only_b, a, b),
        "top": top,
        "omitted": {
            "only_in_a": len(alignment.only_a) - len(only_a),
            "only_in_b": len(alignment.only_b) - len(only_b),
            "call_changes": len(alignment.edges) - len(edges),
            "functions": len(alignment.functions) - len(functions),
        },
    }


def _build_entry(facts: BuildFacts, total: int) -> dict[str, Any]:
    notes = list(facts.notes)
    if facts.binary is not None:
        notes += facts.binary.notes
    if facts.inlines is not None:
        notes += facts.inlines.notes
    return {
        "label": facts.label,
        "total": total,
        "symbols": facts.binary is not None,
        "dwarf": facts.inlines is not None and not facts.inlines.notes,
        "notes": notes,
    }


def _inline_rows(
    functions: list[dict[str, Any]],
    only_a: list[dict[str, Any]],
    only_b: list[dict[str, Any]],
    a: BuildFacts,
    b: BuildFacts,
) -> list[dict[str, Any]]:
    """Every inlined callee of the functions the report lists, in either build.

    Per function (in report order), the callees whose number of inlined copies
    differs come first, largest difference first; `same` marks the others.
    """
    names: list[str] = [f["name"] for f in functions]
    for row in only_a + only_b:
        names += [row["name"], *(row["inlined_into_other"] or {})]
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for fn in names:
        if fn in seen:
            continue
        seen.add(fn)
        sa, sb = _sites(a.inlines, fn), _sites(b.inlines, fn)
        for key in sorted(set(sa) | set(sb), key=lambda c: (-abs(sa[c] - sb[c]), c)):
            named_by = a.inlines if sa[key] and a.inlines else b.inlines
            rows.append(
                {
                    "function": fn,
                    "callee": named_by.name(key) if named_by else key,
                    "copies_a": sa[key],
                    "copies_b": sb[key],
                    "same": sa[key] == sb[key],
                    "lines_a": _lines(a.inlines, fn, key),
                    "lines_b": _lines(b.inlines, fn, key),
                }
            )
    return rows


def _lines(inlines: InlineSites | None, fn: str, callee_key: str) -> list[str]:
    return [] if inlines is None else inlines.call_sites(fn, callee_key)


# -- rendering -----------------------------------------------------------------


def render_json(report: dict[str, Any]) -> str:
    return json.dumps(report, sort_keys=True, indent=2) + "\n"


def _signed(value: int) -> str:
    return "0" if value == 0 else ("+" if value > 0 else "") + numfmt.si(value)


def _bytes(value: int | None) -> str:
    return "-" if value is None else numfmt.human_bytes(value)


def _absent(_value: float) -> str:
    return "-"


def _pct(delta: int, base: int) -> str:
    return numfmt.signed_percent(delta / base) if base else "-"


def _copies(n: int) -> str:
    if n == 0:
        return "no inlined copy"
    return f"{n} inlined cop{'y' if n == 1 else 'ies'}"


def tables(report: dict[str, Any]) -> list[Table]:
    ev = report["event"]
    ba, bb = report["builds"]["a"], report["builds"]["b"]
    out: list[Table] = []

    summary = Table(
        [Column("build", "left"), Column("label", "left"), Column(ev), Column("vs A")],
        title=f"{ev}, same workload, two builds",
    )
    summary.add_row(["A", ba["label"], numfmt.si(ba["total"]), ""])
    summary.add_row(
        [
            "B",
            bb["label"],
            numfmt.si(bb["total"]),
            f"{_signed(report['total_delta'])} ({_pct(report['total_delta'], ba['total'])})",
        ]
    )
    for side, entry in (("A", ba), ("B", bb)):
        summary.notes += [f"{side}: {n}" for n in entry["notes"]]
    out.append(summary)

    for key, side, other in (("only_in_a", "A", "B"), ("only_in_b", "B", "A")):
        rows = report[key]
        t = Table(
            [
                Column("function", "left"),
                Column(f"self {ev}"),
                Column(f"incl {ev}"),
                Column("calls"),
                Column("size"),
                Column(f"inlined in {other} into", "left"),
            ],
            title=f"Functions only in {side}'s profile (inlined away or outlined in {other})",
        )
        for r in rows:
            into = r["inlined_into_other"]
            # "?": the other build's DWARF was not read; "-": read, no inlined copy.
            holders = "?" if into is None else ", ".join(f"{fn} ({n})" for fn, n in into.items())
            t.add_row(
                [
                    r["name"],
                    numfmt.si(r["self"]),
                    numfmt.si(r["inclusive"]),
                    numfmt.si(r["calls"]),
                    _bytes(r["size"]),
                    holders or "-",
                ]
            )
        _omitted(t, report["omitted"][key], "function")
        if rows:
            out.append(t)

    edges = Table(
        [
            Column("caller -> callee", "left"),
            Column("calls A"),
            Column("calls B"),
            Column("delta"),
        ],
        title="Call counts that changed",
    )
    for e in report["call_changes"]:
        edges.add_row(
            [
                f"{e['caller']} -> {e['callee']}",
                numfmt.si(e["calls_a"]),
                numfmt.si(e["calls_b"]),
                _signed(e["calls_delta"]),
            ]
        )
    _omitted(edges, report["omitted"]["call_changes"], "edge")
    if report["call_changes"]:
        out.append(edges)

    fns = Table(
        [
            Column("function", "left"),
            Column("self A"),
            Column("self B"),
            Column("delta"),
            Column("incl A"),
            Column("incl B"),
            Column("delta"),
            Column("size A"),
            Column("size B"),
        ],
        title=f"{ev} by function, largest self-cost change first",
    )
    for f in report["functions"]:
        # "-": the function is not in that build's profile at all.
        fa = numfmt.si if f["in_a"] else _absent
        fb = numfmt.si if f["in_b"] else _absent
        fns.add_row(
            [
                f["name"],
                fa(f["self_a"]),
                fb(f["self_b"]),
                _signed(f["self_delta"]),
                fa(f["inclusive_a"]),
                fb(f["inclusive_b"]),
                _signed(f["inclusive_delta"]),
                _bytes(f["size_a"]),
                _bytes(f["size_b"]),
            ]
        )
    _omitted(fns, report["omitted"]["functions"], "function")
    fns.notes.append(numfmt.LEGEND)
    out.append(fns)

    sites = Table(
        [Column("inlined callees (DWARF)", "left")],
        title="Inlining decisions that differ",
    )
    differ = [r for r in report["inline_sites"] if not r["same"]]
    top = report["top"]
    for r in differ if top <= 0 else differ[:top]:
        where_a = f" ({', '.join(r['lines_a'])})" if r["lines_a"] else ""
        where_b = f" ({', '.join(r['lines_b'])})" if r["lines_b"] else ""
        sites.add_row(
            [
                f"in A, {r['function']} holds {_copies(r['copies_a'])} of {r['callee']}"
                f"{where_a if r['copies_a'] else ''}; "
                f"in B, {_copies(r['copies_b']) if r['copies_b'] else 'none'}"
                f"{where_b if r['copies_b'] else ''}"
            ]
        )
    _omitted(sites, len(differ) - len(sites.rows), "decision")
    same = len(report["inline_sites"]) - len(differ)
    if same:
        sites.notes.append(f"{same} inlined callees with as many copies in both builds (see JSON)")
    if not (ba["dwarf"] and bb["dwarf"]):
        sites.notes.append("DWARF was not read for both builds: see the notes above")
    if differ or sites.notes:
        out.append(sites)
    return out


def _omitted(table: Table, count: int, what: str) -> None:
    if count > 0:
        table.notes.append(f"{count} more {what}{'s' if count != 1 else ''} (see --top)")


def render_text(report: dict[str, Any], fmt: str, width: int = 120) -> str:
    return "\n".join(render(t, fmt, width) for t in tables(report))
