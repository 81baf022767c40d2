"""A cell's profile: where its instructions go, by function, per request (per run for a
command), and how often it calls the allocator.

Each counted window (a serve rep, a run of a command) gives a `WindowProfile`: every
function's self and inclusive instructions and the calls into it, summed over the
processes counted, and the calls into the allocator from outside it. A cell keeps the
median over its windows of each per-request figure, for its `top` functions by self
cost, and an "others" row for the rest, so that the self column adds up to the cell's
figure while the results file stays small. Names are kept whole; compare matches them
by `names.display_name`.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from icount.results.fields import count, count_int, list_, obj, str_
from icount.window_profile import WindowProfile

PER_REQUEST = "request"
PER_RUN = "run"


@dataclass(frozen=True)
class FunctionRow:
    """One function of a cell: medians over the windows, per request (per run)."""

    name: str
    self_ir: float
    inclusive: float
    calls: float

    def to_json(self) -> list[Any]:
        return [self.name, self.self_ir, self.inclusive, self.calls]


@dataclass(frozen=True)
class Others:
    """The functions past the cell's top: how many, their self cost and calls."""

    functions: int
    self_ir: float
    calls: float

    def to_json(self) -> dict[str, Any]:
        return {"functions": self.functions, "self": self.self_ir, "calls": self.calls}


@dataclass(frozen=True)
class Edge:
    """The calls from one function into another: their inclusive instructions per
    request (per run), the median over the windows."""

    caller: str
    callee: str
    inclusive: float

    def to_json(self) -> list[Any]:
        return [self.caller, self.callee, self.inclusive]


# calls kept per kept function: the flame graph's layers (icount/charts/flame.py)
EDGES_PER_FUNCTION = 5


@dataclass(frozen=True)
class CellProfile:
    per: str  # PER_REQUEST or PER_RUN
    windows: int  # windows (runs) the medians are taken over
    top: int
    functions: tuple[FunctionRow, ...]  # by self cost, largest first, ties by name
    others: Others
    allocations: float  # allocator calls per request (per run)
    frees: float
    # the costliest calls, largest first; empty in profiles written without them
    edges: tuple[Edge, ...] = ()

    def to_json(self) -> dict[str, Any]:
        edges = {"edges": [e.to_json() for e in self.edges]} if self.edges else {}
        return {
            "per": self.per,
            "windows": self.windows,
            "top": self.top,
            "functions": [f.to_json() for f in self.functions],
            "others": self.others.to_json(),
            "allocations": self.allocations,
            "frees": self.frees,
        } | edges

    def by_name(self) -> dict[str, FunctionRow]:
        return {f.name: f for f in self.functions}

    def flame(self) -> FlameProfile:
        return FlameProfile(
            self.per, tuple((f.name, f.self_ir) for f in self.functions), self.others.self_ir,
            self.edges,
        )  # fmt: skip


@dataclass(frozen=True)
class FlameProfile:
    """What a flame graph draws of a profile (icount/charts/flame.py): each kept
    function's self cost, in the profile's order, the self cost of the rest, and the
    kept calls. A comparison's JSON carries this much of a changed cell's two sides."""

    per: str
    own: tuple[tuple[str, float], ...]
    others: float
    edges: tuple[Edge, ...]


def _median(values: Sequence[float]) -> float:
    # three decimals: medians of ratios of counts, kept short and exact where whole
    return round(float(statistics.median(values)), 3)


def cell_profile(
    windows: Sequence[tuple[WindowProfile, int]], per: str = PER_REQUEST
) -> CellProfile | None:
    """The cell's profile from its windows, each with the requests it served (1 for a
    run of a command); None without windows or when the cell keeps no functions."""
    if not windows or windows[0][0].top <= 0:
        return None
    top = windows[0][0].top
    pooled = [(w.pooled(), n) for w, n in windows]
    names = sorted({name for p, _ in pooled for name in p})

    def per_window(name: str, i: int) -> list[float]:
        return [p[name][i] / n if name in p else 0.0 for p, n in pooled]

    rows = [
        FunctionRow(
            name,
            _median(per_window(name, 0)),
            _median(per_window(name, 1)),
            _median(per_window(name, 2)),
        )
        for name in names
    ]
    rows.sort(key=lambda r: (-r.self_ir, r.name))
    kept = rows[:top]
    kept_names = {r.name for r in kept}

    def rest(i: int) -> float:
        return _median([sum(c[i] for name, c in p.items() if name not in kept_names) / n
                        for p, n in pooled])  # fmt: skip

    return CellProfile(
        per=per,
        windows=len(windows),
        top=top,
        functions=tuple(kept),
        others=Others(len(rows) - len(kept), rest(0), rest(2)),
        allocations=_median([w.allocations / n for w, n in windows]),
        frees=_median([w.frees / n for w, n in windows]),
        edges=_edges(windows, top * EDGES_PER_FUNCTION),
    )


def _edges(windows: Sequence[tuple[WindowProfile, int]], keep: int) -> tuple[Edge, ...]:
    pooled = [(w.pooled_edges(), n) for w, n in windows]
    keys = sorted({k for e, _ in pooled for k in e})
    rows = [Edge(a, b, _median([e.get((a, b), 0.0) / n for e, n in pooled])) for a, b in keys]
    rows = [r for r in rows if r.inclusive > 0]
    rows.sort(key=lambda r: (-r.inclusive, r.caller, r.callee))
    return tuple(rows[:keep])


def profile_from_json(doc: Any) -> CellProfile | None:
    """A cell's stored profile back into its type, every field checked."""
    if doc is None:
        return None
    what = "cell.profile"
    d = obj(doc, what)
    per = str_(d["per"], f"{what}.per")
    if per not in (PER_REQUEST, PER_RUN):
        raise ValueError(f"{what}.per is {per!r}, not {PER_REQUEST!r} or {PER_RUN!r}")
    rows = []
    for item in list_(d["functions"], f"{what}.functions"):
        row = list_(item, f"{what}.functions[]")
        if len(row) != 4:
            raise ValueError(f"{what}.functions[] is [name, self, inclusive, calls]")
        rows.append(FunctionRow(str_(row[0], f"{what}.functions[] name"),
                                count(row[1], f"{what}.functions[] self"),
                                count(row[2], f"{what}.functions[] inclusive"),
                                count(row[3], f"{what}.functions[] calls")))  # fmt: skip
    others = obj(d["others"], f"{what}.others")
    return CellProfile(
        per=per,
        windows=count_int(d["windows"], f"{what}.windows"),
        top=count_int(d["top"], f"{what}.top"),
        functions=tuple(rows),
        others=Others(
            count_int(others["functions"], f"{what}.others.functions"),
            count(others["self"], f"{what}.others.self"),
            count(others["calls"], f"{what}.others.calls"),
        ),
        allocations=count(d["allocations"], f"{what}.allocations"),
        frees=count(d["frees"], f"{what}.frees"),
        edges=tuple(_edge(e, f"{what}.edges[]") for e in list_(d.get("edges", []), what)),
    )


def _edge(doc: Any, what: str) -> Edge:
    row = list_(doc, what)
    if len(row) != 3:
        raise ValueError(f"{what} is [caller, callee, inclusive]")
    return Edge(str_(row[0], f"{what} caller"), str_(row[1], f"{what} callee"),
                count(row[2], f"{what} inclusive"))  # fmt: skip


def flame_pair_json(base: FlameProfile, new: FlameProfile) -> dict[str, Any]:
    """A changed cell's two sides for its differential flame graph, compactly: each name
    once, in `names` (sorted), and each figure by its name's index there."""
    sides = (base, new)
    names = sorted({n for p in sides for n, _ in p.own}
                   | {n for p in sides for e in p.edges for n in (e.caller, e.callee)})  # fmt: skip
    at = {n: i for i, n in enumerate(names)}

    def side(p: FlameProfile) -> dict[str, Any]:
        return {
            "self": [[at[n], v] for n, v in p.own],
            "others": p.others,
            "edges": [[at[e.caller], at[e.callee], e.inclusive] for e in p.edges],
        }

    return {"per": new.per, "names": names, "base": side(base), "new": side(new)}


def flame_pair_from_json(doc: Any, what: str) -> tuple[FlameProfile, FlameProfile]:
    """`flame_pair_json`'s object back into its two sides, every field checked;
    ValueError or TypeError naming the field."""
    d = obj(doc, what)
    per = str_(d.get("per"), f"{what}.per")
    if per not in (PER_REQUEST, PER_RUN):
        raise ValueError(f"{what}.per is {per!r}, not {PER_REQUEST!r} or {PER_RUN!r}")
    names = [str_(n, f"{what}.names[]") for n in list_(d.get("names"), f"{what}.names")]

    def name(v: Any, field: str) -> str:
        i = count_int(v, field)
        if i >= len(names):
            raise ValueError(f"{field} {i} is past the {len(names)} names")
        return names[i]

    def side(key: str) -> FlameProfile:
        w = f"{what}.{key}"
        s = obj(d.get(key), w)
        own = []
        for item in list_(s.get("self"), f"{w}.self"):
            row = list_(item, f"{w}.self[]")
            if len(row) != 2:
                raise ValueError(f"{w}.self[] is [name index, self]")
            own.append((name(row[0], f"{w}.self[] name"), count(row[1], f"{w}.self[] self")))
        edges = []
        for item in list_(s.get("edges"), f"{w}.edges"):
            row = list_(item, f"{w}.edges[]")
            if len(row) != 3:
                raise ValueError(f"{w}.edges[] is [caller index, callee index, inclusive]")
            edges.append(Edge(name(row[0], f"{w}.edges[] caller"),
                              name(row[1], f"{w}.edges[] callee"),
                              count(row[2], f"{w}.edges[] inclusive")))  # fmt: skip
        return FlameProfile(per, tuple(own), count(s.get("others"), f"{w}.others"), tuple(edges))

    return side("base"), side("new")
