"""The `icount inline` report (report.py's dict) as tables (terminal, Markdown) or JSON.

Only formatting: every figure comes from the dict, so the three formats agree.
"""

from __future__ import annotations

import json
from typing import Any

from icount import numfmt
from icount.tables import Column, Table

# What callgrind's events count, for the note under the first table.
_EVENTS = {
    "Ir": "instructions executed",
    "Dr": "memory reads",
    "Dw": "memory writes",
    "Bc": "conditional branches executed",
    "Bcm": "conditional branches mispredicted",
}
# How many "same in both builds" inlining facts the note under the table names.
_SAME_NAMED = 5


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


def _per_call(value: float | None) -> str:
    return "-" if value is None else numfmt.si(value)


def _copies(n: int) -> str:
    if n == 0:
        return "no inlined copy"
    return f"{n} inlined cop{'y' if n == 1 else 'ies'}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def tables(report: dict[str, Any]) -> list[Table]:
    out = [_summary(report)]
    out += _only_tables(report)
    out += _call_tables(report)
    out.append(_function_table(report))
    sites = _sites_table(report)
    if sites.rows or sites.notes:
        out.append(sites)
    return out


def _summary(report: dict[str, Any]) -> Table:
    ev = report["event"]
    ba, bb = report["builds"]["a"], report["builds"]["b"]
    summary = Table(
        [Column("build", "left"), Column("label", "left"), Column(ev), Column("vs A")],
        title=f"{ev}, same workload, two builds",
    )
    summary.add_row(["A", ba["label"], numfmt.si(ba["total"]), ""])
    delta = report["total_delta"]
    summary.add_row(
        ["B", bb["label"], numfmt.si(bb["total"]), f"{_signed(delta)} ({_pct(delta, ba['total'])})"]
    )
    for side, entry in (("A", ba), ("B", bb)):
        summary.notes += [f"{side}: {n}" for n in entry["notes"]]
    if ev in _EVENTS:  # said once: the tables below name the event as callgrind does
        summary.notes.append(f"{ev}: {_EVENTS[ev]}, callgrind's name for them")
    return summary


def _only_tables(report: dict[str, Any]) -> list[Table]:
    ev = report["event"]
    out = []
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
            # the same function there under a compiler's copy's name, or the one it copies
            copies = ", ".join(r.get("copies_in_other", ()))
            if copies:
                holders = f"{holders}; as {copies}" if holders else f"as {copies}"
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
        if any(r.get("copies_in_other") for r in rows):
            t.notes.append(
                f"as NAME: {other} has the same function as a compiler's copy "
                "(.constprop, .isra, .part, .cold, .lto_priv), or the function this one copies"
            )
        _omitted(t, report["omitted"][key], "function")
        if rows:
            out.append(t)
    return out


def _call_tables(report: dict[str, Any]) -> list[Table]:
    """Changed call counts per edge, then per function with the cost of one call:
    fewer calls to a function that does more per call save less than they seem to."""
    ev = report["event"]
    out = []
    edges = Table(
        [Column("caller -> callee", "left"), Column("calls A"), Column("calls B"), Column("delta")],
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
    _negligible(edges, report, "call_changes", "edge", "whose calls cost")
    if report["call_changes"]:
        out.append(edges)
    per_call = Table(
        [
            Column("function", "left"),
            Column("calls A"),
            Column("calls B"),
            Column(f"self {ev}/call A"),
            Column(f"self {ev}/call B"),
            Column(f"incl {ev}/call A"),
            Column(f"incl {ev}/call B"),
        ],
        title=f"{ev} per call, functions whose call count changed",
    )
    for f in report["functions"]:
        if f["calls_a"] == f["calls_b"]:
            continue
        per_call.add_row(
            [
                f["name"],
                numfmt.si(f["calls_a"]),
                numfmt.si(f["calls_b"]),
                _per_call(f["self_per_call_a"]),
                _per_call(f["self_per_call_b"]),
                _per_call(f["inclusive_per_call_a"]),
                _per_call(f["inclusive_per_call_b"]),
            ]
        )
    if per_call.rows:
        per_call.notes.append("self: the function's own code; incl: with what it calls")
        out.append(per_call)
    return out


def _function_table(report: dict[str, Any]) -> Table:
    ev = report["event"]
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
    for f in report["functions"]:
        net = f.get("net")
        if net:
            fns.notes.append(
                f"{f['name']} with {', '.join(net['absorbed'])} (inlined into it in "
                f"{' and '.join(side.upper() for side in net['inlined_in'])}): "
                f"self {numfmt.si(net['self_a'])} -> {numfmt.si(net['self_b'])} "
                f"({_signed(net['self_delta'])}, {_pct(net['self_delta'], net['self_a'])})"
            )
    _omitted(fns, report["omitted"]["functions"], "function")
    _negligible(fns, report, "functions", "function", "whose self and incl changed by")
    fns.notes.append(numfmt.LEGEND)
    return fns


def _sites_table(report: dict[str, Any]) -> Table:
    ba, bb = report["builds"]["a"], report["builds"]["b"]
    sites = Table(
        [Column("inlined callees (DWARF)", "left", wrap=True)],  # prose: wrapped, not cut
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
    same = [r for r in report["inline_sites"] if r["same"]]
    if same:
        by_function: dict[str, list[str]] = {}
        for r in same[:_SAME_NAMED]:
            by_function.setdefault(r["function"], []).append(
                f"{_copies(r['copies_a'])} of {r['callee']}"
            )
        named = "; ".join(f"{fn} holds {', '.join(c)}" for fn, c in by_function.items())
        more = len(same) - _SAME_NAMED
        sites.notes.append(
            f"Same in both builds: {named}"
            + (f"; and {more} more (--format json lists them)" if more > 0 else "")
        )
    if not (ba["dwarf"] and bb["dwarf"]):
        sites.notes.append("DWARF was not read for both builds: see the notes above")
    return sites


def _omitted(table: Table, count: int, what: str) -> None:
    if count > 0:
        table.notes.append(f"{count} more {what}{'' if count == 1 else 's'} (see --top)")


def _negligible(table: Table, report: dict[str, Any], key: str, what: str, rule: str) -> None:
    count = report["negligible"][key]
    if count > 0:
        share = numfmt.percent(report["min_share"])
        table.notes.append(
            f"{_plural(count, what)} {rule} less than {share} of A's total left out "
            "(--min-share 0 lists them)"
        )
