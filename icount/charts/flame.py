"""A cell's flame graph, drawn as an icicle: the callers on top, each function as wide
as its inclusive instructions per request (per run) under its caller.

Callgrind records calls between functions, not whole stacks, so a function called from
several places is split among them in proportion to the instructions of each call (the
layers below it alike), and a cycle of calls (glibc's `(below main)` and
`__libc_start_main` call each other) is drawn once, its share spread over the cycle: the
figure in each mark's title says both that path's share and the function's whole
inclusive cost as measured, which is exact. Only the calls the cell kept
(results/profile.py: the costliest, by inclusive cost) are drawn, down to MIN_SHARE of
the cell; no script, so the page stays self-contained.
"""

from __future__ import annotations

import html
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from icount.charts import svg
from icount.charts.figure import Figure, inline
from icount.results import Cell
from icount.results.profile import CellProfile, Edge, FlameProfile

WIDTH = 960.0
ROW = 17.0
MIN_SHARE = 0.002  # marks narrower than this share of the cell are left out
MAX_DEPTH = 48
MAX_MARKS = 1500


@dataclass(frozen=True)
class Mark:
    name: str
    depth: int
    start: float  # instructions per request from the left edge
    value: float  # this path's inclusive instructions per request
    path: tuple[str, ...]  # the callers down to it, itself last


def _layers(p: FlameProfile) -> tuple[list[Mark], float]:
    """The marks, and the figure the width stands for (the cell's, or the roots' when
    they hold more)."""
    calls: dict[str, list[Edge]] = {}
    into: dict[str, float] = {}
    for e in p.edges:
        calls.setdefault(e.caller, []).append(e)
        into[e.callee] = into.get(e.callee, 0.0) + e.inclusive
    own = dict(p.own)
    made = {name: sum(e.inclusive for e in out) + own.get(name, 0.0) for name, out in calls.items()}
    # A root is what runs more than its callers account for: nobody's callee (a thread's
    # start), or, where callgrind pools code without a symbol, the entry code whose pool
    # the program's PLT stubs also call into.
    roots = sorted(((w - into.get(name, 0.0), name) for name, w in made.items()
                    if w > into.get(name, 0.0)), key=lambda r: (-r[0], r[1]))  # fmt: skip
    cell = sum(own.values()) + p.others
    total = max(cell, sum(w for w, _ in roots))
    marks: list[Mark] = []

    def place(name: str, depth: int, start: float, value: float, path: tuple[str, ...]) -> None:
        if len(marks) >= MAX_MARKS or value < total * MIN_SHARE:
            return
        marks.append(Mark(name, depth, start, value, path))
        whole = max(into.get(name, 0.0), made.get(name, 0.0)) or value
        out = sorted(calls.get(name, ()), key=lambda e: (-e.inclusive, e.callee))
        scale = value / whole if whole else 0.0
        x = start
        for e in out:
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
    its path grew since the base, green where it shrank, grey where it held."""
    p = _flame(profile)
    if not p.edges:
        return None
    marks, total = _layers(p)
    if not marks or total <= 0:
        return None
    before = {m.path: m.value for m in _layers(_flame(base))[0]} if base is not None else None
    whole = {e.callee: 0.0 for e in p.edges}
    for e in p.edges:
        whole[e.callee] += e.inclusive
    unit = f"instructions per {p.per}"
    px = WIDTH / total
    parts = []
    for m in marks:
        x, w, y = m.start * px, max(m.value * px, 0.5), m.depth * ROW
        share = m.value / total * 100
        title = f"{m.name}: {svg.exact(m.value)} {unit} on this path ({share:.3g}% of the cell)"
        if m.depth and m.name in whole:  # a root has no caller to share it with
            title += f"; {svg.exact(whole[m.name])} in all its calls"
        cls = f"c{zlib.crc32(m.name.encode()) % 10}"
        if before is not None:
            was = before.get(m.path, 0.0)
            moved = m.value - was
            title += f"; base {svg.exact(was)} on this path ({'+' if moved > 0 else ''}"
            title += f"{svg.exact(moved)})"
            held = abs(moved) < max(0.5, total * MIN_SHARE)  # rounding, not a change
            cls = "same" if held else "reg" if moved > 0 else "imp"
        parts.append(
            f'<g class="flame"><title>{svg.esc(title)}</title>'
            f'<rect class="{cls}" x="{svg.n(x)}" y="{svg.n(y)}" width="{svg.n(w)}" '
            f'height="{svg.n(ROW - 1)}"/>'
        )
        if w > 40:
            text = svg.clip(m.name, w - 6, tail=True)
            parts.append(
                f'<text class="in" x="{svg.n(x + 3)}" y="{svg.n(y + ROW - 5)}">'
                f"{svg.esc(text)}</text>"
            )
        parts.append("</g>")
    depth = max(m.depth for m in marks) + 1
    return Figure("".join(parts), WIDTH, depth * ROW, label, prefix)


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
            summary = html.escape(f"Flame graph: {c.key_text}")
            chart = f'<div class="chart">{inline(fig)}</div>'  # a wide chart scrolls
            out.append(f"<details><summary>{summary}</summary>{chart}</details>")
    if out:
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
            summary = html.escape(f"Flame graph of the change: {label}")
            chart = f'<div class="chart">{inline(fig)}</div>'
            out.append(f"<details><summary>{summary}</summary>{chart}</details>")
    if out:
        out.insert(0, '<p class="muted">Drawn as the new build runs; red: a call path that '
                   "costs more than in the base, green: less, grey: the same.</p>")  # fmt: skip
    return out
