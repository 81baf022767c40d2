"""Why a compared cell moved: the functions whose per-request self cost moved most
between the two cells' profiles (results/profile.py), base -> new, with the share of the
cell's change each explains.

Functions are matched by their short name (`names.display_name`: templates, parameter
lists and hashes left out), so that a C++ function whose template arguments changed
spelling, or a Rust function whose hash changed with the build, is still the same row.
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
from icount.names import display_name
from icount.results.profile import CellProfile, FlameProfile, flame_pair_json
from icount.text import printable

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
class Move:
    name: str  # the short name both sides are matched by
    base: float | None  # self instructions per request (per run); None: not in base's top
    new: float | None
    delta: float
    share: float | None  # of the cell's change; None where the cell's change is 0
    approx: bool  # one side is outside that side's kept top: the move is a bound
    # what became of it in the build whose profile lacks it, where its DWARF was read
    elsewhere: Elsewhere | None = None

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
        }


@dataclass(frozen=True)
class Explanation:
    per: str  # "request" or "run"
    moves: tuple[Move, ...]
    # allocator calls per request (per run), base and new, where both sides measured
    allocations: tuple[float, float] | None
    # base's and new's flame graph figures, where both kept their calls
    flame: tuple[FlameProfile, FlameProfile] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "per": self.per,
            "functions": [m.to_json() for m in self.moves],
            "allocations": None
            if self.allocations is None
            else {"base": self.allocations[0], "new": self.allocations[1]},
            **({"flame": flame_pair_json(*self.flame)} if self.flame else {}),
        }


def _by_short_name(p: CellProfile) -> dict[str, float]:
    out: dict[str, float] = {}
    for f in p.functions:
        key = display_name(f.name)
        out[key] = out.get(key, 0.0) + f.self_ir
    return out


def explain(base: CellProfile | None, new: CellProfile | None, delta: float) -> Explanation | None:
    """The functions behind a cell's change of `delta`; None where a side has no profile
    (files written before profiles, or --profile-top 0)."""
    if base is None or new is None or base.per != new.per:
        return None
    b, n = _by_short_name(base), _by_short_name(new)
    b_whole, n_whole = base.others.functions == 0, new.others.functions == 0
    moves = []
    for name in set(b) | set(n):
        bv, nv = b.get(name), n.get(name)
        d = round((nv or 0.0) - (bv or 0.0), 3)
        approx = (bv is None and not b_whole) or (nv is None and not n_whole)
        share = round(d / delta, 4) if delta else None
        moves.append(Move(name, bv, nv, d, share, approx))
    moves.sort(key=lambda m: (-abs(m.delta), m.name))
    allocations = (base.allocations, new.allocations)
    flame = (base.flame(), new.flame()) if base.edges and new.edges else None
    return Explanation(base.per, tuple(m for m in moves[:TOP] if m.delta), allocations, flame)


def _side(x: float | None) -> str:
    return "-" if x is None else numfmt.plain(x)


def move_text(m: Move) -> str:
    """'1200 -> 3200 (+2000, 100%)': base -> new, the move and its share of the change."""
    sign = "+" if m.delta > 0 else ""
    share = "" if m.share is None else f", {m.share * 100:.3g}%"
    bound = ("at most " if m.delta < 0 else "at least ") if m.approx else ""
    moved = f"{bound}{sign}{numfmt.plain(m.delta)}{share}"
    where = f"; {m.elsewhere.text()}" if m.elsewhere else ""
    return f"{_side(m.base)} -> {_side(m.new)} ({moved}{where})"


def _alloc_text(e: Explanation) -> str:
    if e.allocations is None or e.allocations[0] == e.allocations[1]:
        return ""
    b, n = e.allocations
    return f"allocations per {e.per} {numfmt.plain(b)} -> {numfmt.plain(n)}"


def line(label: str, e: Explanation) -> str:
    """One note of the terminal table: the functions that moved most, largest first."""
    moved = "; ".join(f"{printable(m.name)} {move_text(m)}" for m in e.moves)
    alloc = _alloc_text(e)
    return (
        f"{printable(label)}: moved most (self instructions per {e.per}): "
        f"{moved or 'no function named moved'}{'; ' + alloc if alloc else ''}"
    )


def markdown(e: Explanation) -> list[str]:
    """The PR comment's lines under a changed cell's bullet."""
    out = [f"  - `{printable(m.name)}` {move_text(m)}" for m in e.moves]
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
                          m.get("approx") is True, _elsewhere(m.get("other_build"))))  # fmt: skip
    return tuple(moves)


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
