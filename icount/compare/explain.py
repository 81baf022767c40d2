"""Why a compared cell moved: the functions whose per-request self cost moved most
between the two cells' profiles (results/cell_profile.py), base -> new, with the share of
the cell's change each explains. (Why one cell's windows differ is serve/spread.py's, in
the table's notes through spread_note.py.)

Functions are matched by their short name (`names.display_name`: templates, parameter
lists and hashes left out), so that a C++ function whose template arguments changed
spelling, or a Rust function whose hash changed with the build, is still the same row;
a compiler's copies of a function (`.constprop.0`, `.isra.0`, `.part.0`, `.cold`,
`.lto_priv.0`: `names.clone_base`) are that function's row, each side's spellings said.
Self costs add up to a cell's figure, so the shares of the functions named (and of the
rest) add up to its change. A function outside one side's kept top is not known there
to the instruction: it shows as `-` and its move is taken from 0 (`approx`). Where that
side's binary can be read, compare/inlined.py says what became of such a function in it
(`Elsewhere`: inlined into its callers, or absent).

An explanation also keeps what the differential flame graph draws of its two sides
(`FlameProfile`), which the comparison's JSON carries (`explained.flame`), so that
`icount report` draws it from a saved comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from icount import numfmt
from icount.names import clone_base, display_name
from icount.results.cell_profile import CellProfile, FlameProfile, flame_pair_json
from icount.startup import renames
from icount.text import md_code, md_text, printable

TOP = 5  # functions named per changed cell
HOLDERS = 3  # functions named that a function was inlined into


@dataclass(frozen=True)
class Elsewhere:
    """What became of a function in the build whose profile lacks it, as that build's
    DWARF shows: inlined into `into` (function, copies inlined), or, with none there and
    no symbol of its name, absent from the binary."""

    side: str  # "base" or "new": the build that lacks it
    into: tuple[tuple[str, int], ...]  # most copies first, then by name

    def to_json(self) -> dict[str, Any]:
        return {
            "side": self.side,
            "state": "inlined" if self.into else "absent",
            "into": [{"function": f, "sites": n} for f, n in self.into],
        }

    def text(self) -> str:
        if not self.into:
            return f"{self.side}: absent from its binary"
        shown = ", ".join(f"{printable(f)} ({numfmt.plural(n, 'site')})"
                          for f, n in self.into[:HOLDERS])  # fmt: skip
        more = len(self.into) - HOLDERS
        return f"{self.side}: inlined into {shown}" + (f" and {more} more" if more > 0 else "")


@dataclass(frozen=True)
class Net:
    """A caller's move net of the functions the compiler inlined into it in one build
    (and that build's profile therefore lacks): their self cost counted with the
    caller's on the side that still has them out of line."""

    absorbed: tuple[str, ...]  # the functions inlined into it, by name
    base: float
    new: float

    def to_json(self) -> dict[str, Any]:
        return {"absorbed": list(self.absorbed), "base": self.base, "new": self.new}


@dataclass(frozen=True)
class Move:
    name: str  # the short name both sides are matched by
    base: float | None  # self instructions per request (per run); None: not in base's top
    new: float | None
    delta: float
    share: float | None  # of the cell's change; None where the cell's change is 0
    approx: bool  # one side is outside that side's kept top: the move is a bound
    # what became of it in the build whose profile lacks it, where its DWARF was read
    elsewhere: Elsewhere | None = None
    # the compiler's copies each side's profile names it by, where not by `name` alone
    clones: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    net: Net | None = None  # with what was inlined into it, where that is known

    def to_json(self) -> dict[str, Any]:
        return {
            "function": self.name,
            "base": self.base,
            "new": self.new,
            "delta": self.delta,
            "share": self.share,
            "approx": self.approx,
            # only where it was read, so that other comparisons keep their bytes
            **({"other_build": self.elsewhere.to_json()} if self.elsewhere else {}),
            **(
                {"clones": {"base": list(self.clones[0]), "new": list(self.clones[1])}}
                if any(self.clones)
                else {}
            ),
            **({"net": self.net.to_json()} if self.net else {}),
        }


@dataclass(frozen=True)
class Explanation:
    per: str  # "request" or "run"
    moves: tuple[Move, ...]
    # allocator calls per request (per run), base and new, where both sides measured
    allocations: tuple[float, float] | None
    # base's and new's flame graph figures, where both kept their calls
    flame: tuple[FlameProfile, FlameProfile] | None = None
    # the cell's change past the functions named, and its share of it (None: not known)
    rest: tuple[float, float] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "per": self.per,
            "functions": [m.to_json() for m in self.moves],
            "allocations": None
            if self.allocations is None
            else {"base": self.allocations[0], "new": self.allocations[1]},
            **({"flame": flame_pair_json(*self.flame)} if self.flame else {}),
            **({"rest": {"delta": self.rest[0], "share": self.rest[1]}} if self.rest else {}),
        }


def _by_short_name(
    p: CellProfile, rename: dict[str, str]
) -> tuple[dict[str, float], dict[str, set[str]]]:
    """Self costs by the name both sides are matched by (the start-up code's as
    `rename` reads it: startup.renames), and the names of the compiler's copies summed
    into each."""
    out: dict[str, float] = {}
    spelled: dict[str, set[str]] = {}
    for f in p.functions:
        short = display_name(rename.get(f.name, f.name))
        key = clone_base(short)
        out[key] = out.get(key, 0.0) + f.self_ir
        spelled.setdefault(key, set()).add(short)
    return out, spelled


def explain(base: CellProfile | None, new: CellProfile | None, delta: float) -> Explanation | None:
    """The functions behind a cell's change of `delta`; None where a side has no profile
    (files written before profiles, or --profile-top 0)."""
    if base is None or new is None or base.per != new.per:
        return None
    rename = renames(_all_names(base), _all_names(new), (bool(base.edges), bool(new.edges)))
    (b, b_names), (n, n_names) = _by_short_name(base, rename[0]), _by_short_name(new, rename[1])
    b_whole, n_whole = base.others.functions == 0, new.others.functions == 0
    moves = []
    for name in set(b) | set(n):
        bv, nv = b.get(name), n.get(name)
        d = round((nv or 0.0) - (bv or 0.0), 3)
        approx = (bv is None and not b_whole) or (nv is None and not n_whole)
        share = round(d / delta, 4) if delta else None
        sides = (b_names.get(name, set()), n_names.get(name, set()))
        clones = (
            tuple(sorted(sides[0])) if sides[0] - {name} else (),
            tuple(sorted(sides[1])) if sides[1] - {name} else (),
        )
        moves.append(Move(name, bv, nv, d, share, approx, clones=clones))
    moves.sort(key=lambda m: (-abs(m.delta), m.name))
    allocations = (base.allocations, new.allocations)
    flame = (base.flame(), new.flame()) if base.edges and new.edges else None
    named = tuple(m for m in moves[:TOP] if m.delta)
    rest = round(delta - sum(m.delta for m in named), 3)
    # the shares named and the rest's add up to the cell's change
    past = (rest, round(rest / delta, 4)) if delta and abs(rest) >= 0.5 else None
    return Explanation(base.per, named, allocations, flame, past)


def _all_names(p: CellProfile) -> set[str]:
    return {f.name for f in p.functions} | {n for e in p.edges for n in (e.caller, e.callee)}


def number(x: float) -> str:
    """A figure of an explanation: 2903423 -> '2,903,423', 13240.25 -> '13,240.25'."""
    if float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:,.3f}".rstrip("0").rstrip(".")


def relative(base: float, new: float) -> str:
    """How a figure moved against its base, said one way throughout: as a signed
    percentage up to doubling ('+42.1%', '-30.0%'), as a ratio from there ('x2.92')."""
    if base <= 0 or new < 0:
        return ""
    ratio = new / base
    if ratio >= 2:
        return f"x{ratio:,.2f}"
    return f"{(ratio - 1) * 100:+.1f}%"


def _change(base: float | None, new: float | None, delta: float, approx: bool,
            share: float | None) -> str:  # fmt: skip
    bound = ("at most " if delta < 0 else "at least ") if approx else ""
    parts = [f"{bound}{'+' if delta > 0 else ''}{number(delta)}"]
    rel = relative(base, new) if base is not None and new is not None else ""
    if rel:
        parts.append(rel)
    moved = ", ".join(parts)
    if share is not None:
        moved += f"; {share * 100:,.1f}% of the cell's change"
    return moved


def _side(x: float | None) -> str:
    return "-" if x is None else number(x)


def move_text(m: Move) -> str:
    """'1,200 -> 3,200 (+2,000, x2.67; 100.0% of the cell's change)': base -> new, the move,
    against its base, and its share of the cell's change; then the compiler's copies it
    is named by, what became of it in the other build, and its move net of what was
    inlined into it."""
    text = (
        f"{_side(m.base)} -> {_side(m.new)} ({_change(m.base, m.new, m.delta, m.approx, m.share)}"
    )
    named = [f"{side} as {', '.join(printable(c) for c in clones)}"
             for side, clones in zip(("base", "new"), m.clones, strict=True) if clones]  # fmt: skip
    if named:
        text += "; " + ", ".join(named)
    if m.elsewhere:
        text += f"; {m.elsewhere.text()}"
    if m.net:
        n = m.net
        d = round(n.new - n.base, 3)
        absorbed = ", ".join(printable(a) for a in n.absorbed)
        # no share of its own: the raw moves' shares add up to the cell's change, and
        # this one stands in for some of them
        owners = " and ".join(f"{printable(a)}'s" for a in (m.name, *n.absorbed))
        moved = _change(n.base, n.new, d, False, None)
        text += (f"; with {absorbed} inlined into it: {number(n.base)} -> {number(n.new)} "
                 f"({moved}; instead of {owners} moves)")  # fmt: skip
    return text + ")"


def rest_text(e: Explanation) -> str:
    """'the rest +120 (2.3% of the cell's change)': what the functions named leave;
    'the rest about +120' where a move named is a bound, whose error the rest holds."""
    assert e.rest is not None
    delta, share = e.rest
    sign = "+" if delta > 0 else ""
    about = "about " if any(m.approx for m in e.moves) else ""
    return f"the rest {about}{sign}{number(delta)} ({share * 100:,.1f}% of the cell's change)"


def _alloc_text(e: Explanation) -> str:
    if e.allocations is None or e.allocations[0] == e.allocations[1]:
        return ""
    b, n = e.allocations
    return f"allocations per {e.per} {number(b)} -> {number(n)}"


def line(label: str, e: Explanation) -> str:
    """One note of the terminal table: the functions that moved most, largest first."""
    moved = "; ".join(f"{printable(m.name)} {move_text(m)}" for m in e.moves)
    if e.rest and moved:
        moved += f"; {rest_text(e)}"
    alloc = _alloc_text(e)
    return (
        f"{printable(label)}: moved most (self instructions per {e.per}): "
        f"{moved or 'no function named moved'}{'; ' + alloc if alloc else ''}"
    )


def markdown(e: Explanation) -> list[str]:
    """The PR comment's lines under a changed cell's bullet."""
    # names from the profiles, escaped for Markdown: a backtick in one let a link through
    out = [f"  - {md_code(m.name)} {md_text(move_text(m))}" for m in e.moves]
    out += [f"  - {rest_text(e)}"] if e.rest and out else []
    alloc = _alloc_text(e)
    return [*out, f"  - {alloc}"] if alloc else out


def moves_from_json(doc: Any) -> tuple[Move, ...]:
    """The moves of a comparison's `explained` (its JSON, read back by icount report);
    ValueError naming the field when one is not what to_json writes."""
    if doc is None:
        return ()
    if not isinstance(doc, dict) or not isinstance(doc.get("functions"), list):
        raise ValueError("explained is not an object with a functions list")
    moves = []
    for m in doc["functions"]:
        if not isinstance(m, dict) or not isinstance(m.get("function"), str):
            raise ValueError("explained.functions[] has no function name")

        def number(key: str, m: dict[str, Any] = m, optional: bool = True) -> float | None:
            v = m.get(key)
            if v is None and optional:
                return None
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise ValueError(f"explained.functions[].{key} is not a number")
            return float(v)

        delta = number("delta", optional=False)
        assert delta is not None
        moves.append(Move(m["function"], number("base"), number("new"), delta, number("share"),
                          m.get("approx") is True, _elsewhere(m.get("other_build")),
                          _clones(m.get("clones")), _net(m.get("net"))))  # fmt: skip
    return tuple(moves)


def _names(doc: Any, what: str) -> tuple[str, ...]:
    if not isinstance(doc, list) or not all(isinstance(n, str) for n in doc):
        raise ValueError(f"{what} is not a list of names")
    return tuple(doc)


def _clones(doc: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if doc is None:
        return ((), ())
    what = "explained.functions[].clones"
    if not isinstance(doc, dict):
        raise ValueError(f"{what} is not an object with base and new")
    return (_names(doc.get("base"), f"{what}.base"), _names(doc.get("new"), f"{what}.new"))


def _net(doc: Any) -> Net | None:
    if doc is None:
        return None
    what = "explained.functions[].net"
    if not isinstance(doc, dict):
        raise ValueError(f"{what} is not an object")
    figures = []
    for key in ("base", "new"):
        v = doc.get(key)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise ValueError(f"{what}.{key} is not a number")
        figures.append(float(v))
    return Net(_names(doc.get("absorbed"), f"{what}.absorbed"), figures[0], figures[1])


def _elsewhere(doc: Any) -> Elsewhere | None:
    if doc is None:
        return None
    what = "explained.functions[].other_build"
    if not isinstance(doc, dict) or doc.get("side") not in ("base", "new"):
        raise ValueError(f"{what} is not an object with a side of base or new")
    if not isinstance(doc.get("into"), list):
        raise ValueError(f"{what}.into is not a list")
    into = []
    for h in doc["into"]:
        if not isinstance(h, dict) or not isinstance(h.get("function"), str):
            raise ValueError(f"{what}.into[] has no function name")
        sites = h.get("sites")
        if isinstance(sites, bool) or not isinstance(sites, int) or sites < 1:
            raise ValueError(f"{what}.into[].sites is not a count of sites")
        into.append((h["function"], sites))
    return Elsewhere(doc["side"], tuple(into))
