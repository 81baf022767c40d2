"""A cell's flame graph, drawn as an icicle: the callers on top, each function as wide
as its inclusive instructions per request (per run) under its caller.

Callgrind records calls between functions, not whole stacks, so a function called from
several places is split among them in proportion to the instructions of each call (the
layers below it alike); one called from one place is as wide as callgrind's inclusive
figure for it. A recursion is drawn as callgrind records it: its deeper activations
are levels of their own (`fib'2` under `fib`, `ping'2` under `pong` under `ping`), each
as wide as its calls hold, and a call back into a function already on the path is left
out. The figure in each mark's title says both that path's share and the function's
whole inclusive cost as measured (a level's: that level's). Only the calls the cell
kept (results/cell_profile.py: the costliest, by inclusive cost) are drawn, down to
MIN_SHARE of the cell; no script, so the page stays self-contained. The differential
graph colours each function by its whole change, base to new.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from icount.charts import svg
from icount.charts.figure import Figure, inline
from icount.names import clone_base, recursion_base
from icount.results import Cell
from icount.results.cell_profile import CellProfile, Edge, FlameProfile
from icount.startup import renames
from icount.window_profile import UNNAMED

WIDTH = 960.0
ROW = 17.0
MIN_SHARE = 0.002  # marks narrower than this share of the cell are left out
MAX_DEPTH = 48
MAX_MARKS = 1500
OLD_START_UP = "start-up code pooled as an older icount recorded it (an old results file)"


@dataclass(frozen=True)
class Mark:
    name: str
    depth: int
    start: float  # instructions per request from the left edge
    value: float  # this path's inclusive instructions per request
    path: tuple[str, ...]  # the callers down to it, itself last


@dataclass(frozen=True)
class _Graph:
    """A profile's kept calls by caller (costliest first), and each function's whole
    inclusive cost as far as they tell: what its callers' calls into it cost, or what it
    makes (its own cost and its calls'), whichever is more."""

    calls: dict[str, list[Edge]]
    into: dict[str, float]
    made: dict[str, float]
    cell: float
    names: frozenset[str]  # every function of the kept calls

    def whole(self, name: str) -> float:
        return max(self.into.get(name, 0.0), self.made.get(name, 0.0))


def _graph(p: FlameProfile) -> _Graph:
    calls: dict[str, list[Edge]] = {}
    into: dict[str, float] = {}
    for e in p.edges:
        calls.setdefault(e.caller, []).append(e)
        into[e.callee] = into.get(e.callee, 0.0) + e.inclusive
    for out in calls.values():
        out.sort(key=lambda e: (-e.inclusive, e.callee))
    out_of = {name: sum(e.inclusive for e in out) for name, out in calls.items()}
    own = dict(p.own)
    # A recursion level (`fib'2`) is its own box, as callgrind records it; the profile's
    # row of its function pools the levels' self cost (profiles.pooled), which is what
    # the calls into a level hold past its own calls: taken back out of the function's,
    # so that what it makes is its first level's alone, as callgrind's inclusive is. Left
    # in, a mutual recursion's levels would count twice (`ping` -> `pong` -> `ping'2`).
    for name in into:
        first = recursion_base(name)
        if first != name:
            level = max(0.0, into[name] - out_of.get(name, 0.0))
            own[name] = level
            if first in own:
                own[first] = max(0.0, own[first] - level)
    made = {name: own.get(name, 0.0) + out for name, out in out_of.items()}
    return _Graph(calls, into, made, sum(v for _, v in p.own) + p.others,
                  frozenset(into) | set(made))  # fmt: skip


def _layers(g: _Graph) -> tuple[list[Mark], float]:
    """The marks, and the figure the width stands for (the cell's, or the roots' when
    they hold more)."""
    into, made, calls = g.into, g.made, g.calls
    # A root is what runs more than its callers account for: nobody's callee (the
    # program's entry, what ran before a window opened), a thread's start (glibc's
    # `clone` returns twice), or the code without a symbol where the loader's entry is
    # pooled with it (files from before callgrind/functions.py named it apart): most of
    # what it makes. A caller's call left out
    # of the kept ones leaves a part of its callee unaccounted for: not a root.
    least = g.cell * MIN_SHARE
    roots = sorted(((w - into.get(name, 0.0), name) for name, w in made.items()
                    if w > 0 and (name not in into or w - into[name] >= max(least, w / 2))),
                   key=lambda r: (-r[0], r[1]))  # fmt: skip
    total = max(g.cell, sum(w for w, _ in roots))
    marks: list[Mark] = []

    def place(name: str, depth: int, start: float, value: float, path: tuple[str, ...]) -> None:
        if len(marks) >= MAX_MARKS or value < total * MIN_SHARE:
            return
        marks.append(Mark(name, depth, start, value, path))
        whole = g.whole(name) or value
        scale = value / whole if whole else 0.0
        x = start
        for e in calls.get(name, ()):
            if e.callee in path or depth + 1 >= MAX_DEPTH:
                continue
            w = min(e.inclusive * scale, start + value - x)  # never wider than its caller
            place(e.callee, depth + 1, x, w, (*path, e.callee))
            x += w

    x = 0.0
    for width, name in roots:
        place(name, 0, x, width, (name,))
        x += width
    return marks, total


def flame_figure(
    profile: CellProfile | FlameProfile,
    label: str,
    prefix: str,
    base: CellProfile | FlameProfile | None = None,
) -> Figure | None:
    """The icicle of a cell's profile; None where it kept no calls. With `base`, the
    differential one of a comparison: drawn as `profile` (the new side) is, each mark red where
    its function grew since the base (in all its calls), green where it shrank, grey where
    it held."""
    p = _flame(profile)
    if not p.edges:
        return None
    q = p if base is None else _flame(base)
    rename = renames(_names(q), _names(p), (bool(q.edges), bool(p.edges)))
    p = _renamed(p, rename[1])
    g = _graph(p)
    marks, total = _layers(g)
    if not marks or total <= 0:
        return None
    was = None
    if base is not None:
        b = _graph(_renamed(q, rename[0]))
        was = (b, {m.path: m.value for m in _layers(b)[0]})
    pooled = {v for m in rename for v in m.values()}
    gone = {} if was is None else _by_copy(was[0].names - g.names)
    unit = f"instructions per {p.per}"
    px = WIDTH / total
    parts = []
    for m in marks:
        x, w, y = m.start * px, max(m.value * px, 0.5), m.depth * ROW
        share = m.value / total * 100
        whole = g.whole(m.name)
        title = f"{m.name}: {svg.exact(m.value)} {unit} on this path ({share:.3g}% of the cell)"
        cls = f"c{zlib.crc32(m.name.encode()) % 10}"
        first = recursion_base(m.name)
        if was is None:
            if m.depth:  # a root has no caller to share it with
                title += f"; {svg.exact(whole)} in all its calls"
                if first != m.name:  # a cycle, broken where callgrind breaks it
                    title += f" of this recursion level of {first}"
        else:
            # coloured by the function's whole change, not its path's: a function
            # called from several places changes as one, however it is split
            twins = _twins(m.name, was[0], gone)
            before = sum(was[0].whole(t) for t in twins)
            moved = whole - before
            title += (f", base {svg.exact(was[1].get(m.path, 0.0))}; in all its calls "
                      f"{svg.exact(before)} -> {svg.exact(whole)} ({_signed(moved)})")  # fmt: skip
            if twins != (m.name,):
                title += f"; in the base as {', '.join(twins)}"
            held = abs(moved) < max(0.5, total * MIN_SHARE)  # rounding, not a change
            cls = "same" if held else "reg" if moved > 0 else "imp"
        if m.name in pooled:
            title += f"; {OLD_START_UP}"
        parts.append(
            f'<g class="flame"><title>{svg.esc(title)}</title>'
            f'<rect class="{cls}" x="{svg.n(x)}" y="{svg.n(y)}" width="{svg.n(w)}" '
            f'height="{svg.n(ROW - 1)}"/>'
        )
        # no piece of a word: a box too narrow for one is named by its title alone
        text = svg.clip(m.name, w - 6, tail=True, bold=True, words=True) if w > 40 else ""
        if text:
            parts.append(
                f'<text class="in" x="{svg.n(x + 3)}" y="{svg.n(y + ROW - 5)}">'
                f"{svg.esc(text)}</text>"
            )
        parts.append("</g>")
    depth = max(m.depth for m in marks) + 1
    return Figure("".join(parts), WIDTH, depth * ROW, label, prefix)


def _by_copy(names: frozenset[str]) -> dict[str, list[str]]:
    """`names` by the function each is a compiler's copy of (names.clone_base)."""
    out: dict[str, list[str]] = {}
    for n in sorted(names):
        out.setdefault(clone_base(n), []).append(n)
    return out


def _twins(name: str, base: _Graph, gone: dict[str, list[str]]) -> tuple[str, ...]:
    """What `name` was in the base: itself, or, where only the new side has it, the
    functions only the base has (`gone`, by `_by_copy`) of which it is a compiler's copy
    or they are its copies (`f.constprop.0` for `f`, or the other way round)."""
    if name in base.names:
        return (name,)
    return tuple(gone.get(clone_base(name), ())) or (name,)


def _names(p: FlameProfile) -> set[str]:
    return {n for n, _ in p.own} | {n for e in p.edges for n in (e.caller, e.callee)}


def _renamed(p: FlameProfile, rename: dict[str, str]) -> FlameProfile:
    """`p` with its functions read as `rename` says (startup.renames), those of one name
    pooled and the calls between them left out."""
    if not rename:
        return p
    own: dict[str, float] = {}
    for name, v in p.own:
        key = rename.get(name, name)
        own[key] = own.get(key, 0.0) + v
    edges: dict[tuple[str, str], float] = {}
    for e in p.edges:
        pair = (rename.get(e.caller, e.caller), rename.get(e.callee, e.callee))
        if pair[0] != pair[1]:
            edges[pair] = edges.get(pair, 0.0) + e.inclusive
    kept = sorted(edges.items(), key=lambda kv: (-kv[1], kv[0]))
    return FlameProfile(p.per, tuple(own.items()), p.others,
                        tuple(Edge(a, b, v) for (a, b), v in kept))  # fmt: skip


def _signed(x: float) -> str:
    return f"{'+' if x > 0 else ''}{svg.exact(x)}"


def _flame(p: CellProfile | FlameProfile) -> FlameProfile:
    return p.flame() if isinstance(p, CellProfile) else p


def flame_sections(cells: Sequence[Cell], sid: str) -> list[str]:
    """The report's flame graphs: one folded section per cell that kept its calls."""
    out = []
    for k, c in enumerate(cells):
        fig = None if c.profile is None else flame_figure(
            c.profile, f"{c.key_text}: where its instructions go", f"{sid}-f{k}"
        )  # fmt: skip
        if fig is not None:
            summary = svg.esc(f"Flame graph: {c.key_text}")
            chart = f'<div class="chart">{inline(fig)}</div>'  # a wide chart scrolls
            out.append(f"<details><summary>{summary}</summary>{chart}</details>")
        elif c.profile is not None and {f.name for f in c.profile.functions} == {UNNAMED}:
            # a static stripped binary: callgrind names every function by its address
            out.append(f'<p class="muted">{svg.esc(f"No flame graph: {c.key_text}")}: all '
                       "its code is without a symbol (stripped), one pool with no calls "
                       "between functions to draw.</p>")  # fmt: skip
    if any(part.startswith("<details>") for part in out):
        out.insert(
            0,
            '<h3>Where the instructions go</h3><p class="muted">Each function as wide '
            "as its inclusive instructions under its caller, callers on top; a function "
            "called from several places is split among them by its calls' costs.</p>",
        )
    return out


Pair = tuple[str, CellProfile | FlameProfile, CellProfile | FlameProfile]


def diff_sections(pairs: Sequence[Pair], sid: str) -> list[str]:
    """A comparison's differential flame graphs: one folded section per changed cell
    whose two sides kept their calls (label, base, new)."""
    out = []
    for k, (label, base, new) in enumerate(pairs):
        fig = flame_figure(new, f"{label}: base -> new, by call path", f"{sid}-d{k}", base)
        if fig is not None:
            summary = svg.esc(f"Flame graph of the change: {label}")
            chart = f'<div class="chart">{inline(fig)}</div>'
            out.append(f"<details><summary>{summary}</summary>{chart}</details>")
    if out:
        out.insert(0, '<p class="muted">Drawn as the new build runs; red: a function that '
                   "costs more in all its calls than in the base, green: less, grey: the "
                   "same.</p>")  # fmt: skip
    return out
