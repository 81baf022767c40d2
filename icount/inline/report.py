"""The `icount inline` report: one JSON-ready dict, rendered as tables or JSON.

The dict is the single source of every figure: the renderers (render.py) only format
what it holds, so the three formats always agree. Deltas are B - A.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from icount.inline.align import Alignment, FunctionDelta
from icount.inline.binary import BinaryInfo
from icount.inline.dwarf import InlineSites
from icount.names import clone_base

FORMAT = "icount-inline"
# Version history: 1 - first version. 2 - rows below `min_share` of A's total are
# left out of `functions` and `call_changes` (counted in `negligible`); function rows
# carry self and inclusive cost per call. 3 - rows of functions only in one build name
# their compiler's copies in the other (`copies_in_other`), and a function row whose
# function took others in by inlining in one build carries its self cost with theirs (`net`).
VERSION = 3
# Changes below this share of A's total are noise on any real program (the dynamic
# loader moves by tens to hundreds of instructions between two builds).
DEFAULT_MIN_SHARE = 0.001


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


def _copies(names: Iterable[str]) -> dict[str, list[str]]:
    """Names by the function they are a compiler's copy of (`names.clone_base`)."""
    out: dict[str, list[str]] = {}
    for n in sorted(names):
        out.setdefault(clone_base(n), []).append(n)
    return out


def _only_row(
    d: FunctionDelta, side: str, facts: BuildFacts, other: BuildFacts, copies: dict[str, list[str]]
) -> dict[str, Any]:
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
        # The same function under another name there: a compiler's copy of it
        # (`foo.constprop.0`), or the function this one is a copy of.
        "copies_in_other": [n for n in copies.get(clone_base(d.name), []) if n != d.name],
    }


def _net(
    functions: list[dict[str, Any]], alignment: Alignment, a: BuildFacts, b: BuildFacts
) -> None:
    """Each function row whose function one build inlined others into (them alone: a
    callee inlined into several is not split among them) gains `net`: its self cost with
    theirs in the build that kept them out of line, and the change of that."""
    into: dict[str, list[tuple[str, str, int]]] = {}  # holder -> (callee, build, self)
    for rows, side, other in ((alignment.only_a, "a", b), (alignment.only_b, "b", a)):
        for d in rows:
            holders = _holders(other.inlines, d.name)
            stats = d.a if side == "a" else d.b
            if holders and len(holders) == 1 and stats is not None:
                into.setdefault(next(iter(holders)), []).append((d.name, side, stats.self_cost))
    for row in functions:
        absorbed = into.get(row["name"])
        if not absorbed or not (row["in_a"] and row["in_b"]):
            continue
        self_a = row["self_a"] + sum(c for _, side, c in absorbed if side == "a")
        self_b = row["self_b"] + sum(c for _, side, c in absorbed if side == "b")
        # inlined in the build that lacks them out of line
        inlined_in = sorted({"b" if side == "a" else "a" for _, side, _ in absorbed})
        names = sorted(n for n, _, _ in absorbed)
        row["net"] = {"absorbed": names, "inlined_in": inlined_in, "self_a": self_a,
                      "self_b": self_b, "self_delta": self_b - self_a}  # fmt: skip


def _per_call(cost: int, calls: int) -> float | None:
    # Rounded so that JSON stays short; tables show 4 significant digits anyway.
    return round(cost / calls, 3) if calls else None


def _function_row(d: FunctionDelta, a: BuildFacts, b: BuildFacts) -> dict[str, Any]:
    calls_a = d.a.calls if d.a else 0
    calls_b = d.b.calls if d.b else 0
    self_a = d.a.self_cost if d.a else 0
    self_b = d.b.self_cost if d.b else 0
    incl_a = d.a.inclusive if d.a else 0
    incl_b = d.b.inclusive if d.b else 0
    return {
        "name": d.name,
        "in_a": d.a is not None,
        "in_b": d.b is not None,
        "self_a": self_a,
        "self_b": self_b,
        "self_delta": d.self_delta,
        "inclusive_a": incl_a,
        "inclusive_b": incl_b,
        "inclusive_delta": d.inclusive_delta,
        "calls_a": calls_a,
        "calls_b": calls_b,
        "self_per_call_a": _per_call(self_a, calls_a),
        "self_per_call_b": _per_call(self_b, calls_b),
        "inclusive_per_call_a": _per_call(incl_a, calls_a),
        "inclusive_per_call_b": _per_call(incl_b, calls_b),
        "size_a": _size(a.binary, d.name),
        "size_b": _size(b.binary, d.name),
    }


def build_report(
    alignment: Alignment,
    event: str,
    a: BuildFacts,
    b: BuildFacts,
    top: int,
    min_share: float = DEFAULT_MIN_SHARE,
) -> dict[str, Any]:
    """All figures of the report.

    Functions whose self and inclusive changes are both below `min_share` of A's
    total, and call edges whose calls cost less than that in both builds, are left
    out as negligible (0: keep all): on a small program they are mostly the dynamic
    loader's noise. `top` (0: all) then limits the function and edge lists (the
    terminal table also cuts the inlining rows at `top`); `inline_sites` holds every
    inlined callee of the functions listed.
    """

    def cut(rows: Sequence[Any]) -> list[Any]:
        return list(rows if top <= 0 else rows[:top])

    floor = min_share * abs(alignment.a.total)
    changed = [
        d for d in alignment.functions if max(abs(d.self_delta), abs(d.inclusive_delta)) >= floor
    ]
    weighty = [
        e for e in alignment.edges if max(e.a.cost if e.a else 0, e.b.cost if e.b else 0) >= floor
    ]
    functions = [_function_row(d, a, b) for d in cut(changed)]
    _net(functions, alignment, a, b)
    edges = [
        {
            "caller": e.caller,
            "callee": e.callee,
            "calls_a": e.a.count if e.a else 0,
            "calls_b": e.b.count if e.b else 0,
            "calls_delta": e.count_delta,
        }
        for e in cut(weighty)
    ]
    in_a, in_b = _copies(alignment.a.functions), _copies(alignment.b.functions)
    only_a = [_only_row(d, "a", a, b, in_b) for d in cut(alignment.only_a)]
    only_b = [_only_row(d, "b", b, a, in_a) for d in cut(alignment.only_b)]
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
        "min_share": min_share,
        "negligible": {
            "call_changes": len(alignment.edges) - len(weighty),
            "functions": len(alignment.functions) - len(changed),
        },
        "omitted": {
            "only_in_a": len(alignment.only_a) - len(only_a),
            "only_in_b": len(alignment.only_b) - len(only_b),
            "call_changes": len(weighty) - len(edges),
            "functions": len(changed) - len(functions),
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
