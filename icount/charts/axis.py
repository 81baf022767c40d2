"""Scales with round tick values, and the axis drawn from them: linear (counts that
span orders of magnitude get an axis per group of like size, magnitude_groups); and a
symmetric log ("symlog") for changes, linear near 0 and compressed beyond, so that a
threshold band stays visible beside a change many times larger."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from icount.charts import svg


def nice_step(span: float, target: int) -> float:
    """A step of 1, 2 or 5 times a power of ten giving about `target` intervals."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max(1, target)
    if raw <= 0:  # a span of a few denormals: 5e-324 / 5 is 0
        return 1.0
    power = 10.0 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * power * (1 + 1e-9):
            return m * power
    return 10 * power


LINEAR, SYMLOG = "linear", "symlog"


@dataclass(frozen=True)
class Scale:
    """Maps [lo, hi] onto [x0, x1] pixels; `ticks` are the round values in between.
    `kind` SYMLOG maps sign(v) log10(1 + |v|/knee), about linear within +-knee."""

    lo: float
    hi: float
    x0: float
    x1: float
    ticks: tuple[float, ...]
    kind: str = LINEAR
    knee: float = 1.0

    def _t(self, v: float) -> float:
        if self.kind == SYMLOG:
            return math.copysign(math.log10(1 + abs(v) / self.knee), v)
        return v

    def __call__(self, v: float) -> float:
        if self.hi == self.lo:
            return self.x0
        v = min(max(v, self.lo), self.hi)
        lo, hi = self._t(self.lo), self._t(self.hi)
        return self.x0 + (self._t(v) - lo) / (hi - lo) * (self.x1 - self.x0)

    def beyond(self, v: float) -> bool:
        """`v` lies outside the scale (its mark is drawn clamped at the edge)."""
        return v > self.hi * (1 + 1e-9) or v < self.lo - abs(self.lo) * 1e-9


def linear(lo: float, hi: float, x0: float, x1: float, target: int = 5, base: float = 1.0) -> Scale:
    """A scale over at least [lo, hi], widened to round ticks (round in units of
    `base`: 1024**k gives ticks of whole KiB or MiB)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        lo, hi = 0.0, 1.0
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    step = nice_step((hi - lo) / base, target) * base
    start = math.floor(lo / step + 1e-9) * step
    stop = math.ceil(hi / step - 1e-9) * step
    count = round((stop - start) / step)
    ticks = tuple(_clean(start + i * step) for i in range(count + 1))
    return Scale(ticks[0], ticks[-1], x0, x1, ticks)


NICE = (1.0, 2.0, 2.5, 5.0)


def symlog_percent(v: float) -> str:
    """A symlog tick's label, a fraction in percent: its ticks have no one step, so
    each has the decimals it needs (+2.5%, +50%, +5e-05%)."""
    return "0%" if v == 0 else f"{float(f'{v * 100:.4g}'):+g}%"


def symlog(limit: float, knee: float, x0: float, x1: float, gap_px: float = 10.0) -> Scale:
    """A symmetric log scale of fractions over [-m, m], m the first round value >=
    `limit`, linear within about +-`knee`. Ticks are round values (1, 2, 2.5, 5 times
    a power of ten) kept from 0 outwards where their labels (symlog_percent) stay
    `gap_px` apart from the last one kept's."""
    candidates: list[float] = []
    power = 10.0 ** math.floor(math.log10(knee / 2))
    while not candidates or candidates[-1] < limit * (1 - 1e-9):
        candidates += [_clean(m * power) for m in NICE if m * power >= knee / 2 * (1 - 1e-9)]
        power *= 10
    m = next(c for c in candidates if c >= limit * (1 - 1e-9))
    probe = Scale(-m, m, x0, x1, (), SYMLOG, knee)

    def room(a: float, b: float) -> float:  # between the centres of two tick labels
        return (svg.text_px(symlog_percent(a)) + svg.text_px(symlog_percent(b))) / 2 + gap_px

    kept: list[float] = []
    last = 0.0
    for c in (c for c in candidates if c < m):
        if probe(c) - probe(last) >= room(c, last) and probe(m) - probe(c) >= room(m, c):
            kept.append(c)
            last = c
    positive = [*kept, m]
    ticks = (*(-t for t in reversed(positive)), 0.0, *positive)
    return Scale(-m, m, x0, x1, ticks, SYMLOG, knee)


GROUP_RATIO = 20.0  # a size this many times smaller than a group's largest starts another
GROUP_GAP = 24.0  # above a group after the first: room for its own tick labels


def magnitude_groups(values: Sequence[float], ratio: float = GROUP_RATIO) -> list[list[int]]:
    """Indices of `values` in groups of like size, for charts that draw each group on
    its own axis (where one axis would leave the small ones no visible bar, and a log
    axis would break what a bar's length means: stacked or nested bars). Largest
    first, each joins the first group whose largest is under `ratio` times it; groups
    come in the order of their first index, indices in order within a group."""
    groups: list[list[int]] = []
    size = [max(v, 1.0) for v in values]  # an empty file is of a 1-byte one's size
    for i in sorted(range(len(values)), key=lambda i: (-size[i], i)):
        home = next((g for g in groups if size[g[0]] < ratio * size[i]), None)
        if home is None:
            groups.append([i])
        else:
            home.append(i)
    return sorted((sorted(g) for g in groups), key=lambda g: g[0])


def groups_note(groups: Sequence[Sequence[object]], what: str) -> str | None:
    """What a chart of several axes says: None for one."""
    if len(groups) < 2:
        return None
    return (
        f"{len(groups)} axes: the {what} differ in size by more than {GROUP_RATIO:.0f}x, "
        "so each group of like size has its own"
    )


def bytes_scale(hi: float, x0: float, x1: float, target: int = 4) -> Scale:
    """0 to at least `hi` bytes, ticks at round numbers of the largest binary unit."""
    return linear(0.0, hi, x0, x1, target, _binary_unit(hi)[0])


_BINARY = ((1024.0**4, "TiB"), (1024.0**3, "GiB"), (1024.0**2, "MiB"), (1024.0, "KiB"))
_DECIMAL = ((1e9, "G"), (1e6, "M"), (1e3, "k"))


def _binary_unit(v: float) -> tuple[float, str]:
    for size, name in _BINARY:
        if abs(v) >= size:
            return size, name
    return 1.0, "B"


def _decimals(scale: Scale, unit: float) -> int:
    if len(scale.ticks) < 2:
        return 0
    step = (scale.ticks[1] - scale.ticks[0]) / unit
    for d in range(7):  # the fewest decimals that write every tick exactly
        if abs(step * 10**d - round(step * 10**d)) < 1e-6:
            return d
    return 6


def si_labels(scale: Scale) -> Callable[[float], str]:
    """Tick labels with a k/M/G suffix and as many decimals as the step needs: 7.81k, 40k."""
    top = max(abs(scale.lo), abs(scale.hi))
    unit, suffix = next(((u, s) for u, s in _DECIMAL if top >= u), (1.0, ""))
    decimals = _decimals(scale, unit)
    return lambda v: "0" if v == 0 else f"{v / unit:.{decimals}f}{suffix}"


def bytes_labels(scale: Scale, signed: bool = False) -> Callable[[float], str]:
    """Tick labels in the largest binary unit: 0, 256 KiB, 1.5 MiB (+2 KiB if signed)."""
    unit, name = _binary_unit(max(abs(scale.lo), abs(scale.hi)))
    decimals = _decimals(scale, unit)
    sign = "+" if signed else ""
    return lambda v: "0" if v == 0 else f"{v / unit:{sign}.{decimals}f} {name}"


def binary_unit(v: float) -> float:
    """1024**k for the largest binary unit not above |v| (1 below 1 KiB)."""
    return _binary_unit(v)[0]


def percent_labels(scale: Scale) -> Callable[[float], str]:
    """Signed percent tick labels for a scale of fractions: -10%, 0%, +2.5% (on a
    symlog scale, whose ticks have no one step, each with the decimals it needs)."""
    if scale.kind == SYMLOG:
        return symlog_percent
    decimals = max(0, _decimals(scale, 0.01))
    return lambda v: "0%" if v == 0 else f"{v * 100:+.{decimals}f}%"


def symmetric(limit: float, x0: float, x1: float, target: int = 4, base: float = 1.0) -> Scale:
    """A scale over [-m, m] with 0 in the middle, m the first round tick >= limit
    (round in units of `base`, as for `linear`)."""
    limit = limit if limit > 0 and math.isfinite(limit) else base
    step = nice_step(limit / base, target) * base
    m = math.ceil(limit / step - 1e-9) * step
    count = round(m / step)
    ticks = tuple(_clean(i * step) for i in range(-count, count + 1))
    return Scale(-m, m, x0, x1, ticks)


def _clean(v: float) -> float:
    """Tick values without float dust (0.30000000000000004 -> 0.3)."""
    return 0.0 if abs(v) < 1e-12 else float(f"{v:.12g}")


# Charts taller than this repeat their tick labels under the last row too: the top
# of a long chart is out of sight when its last rows are read.
REPEAT_BELOW = 480.0
BELOW = 16.0  # the height the repeated labels take under the grid
BELOW_GAP = 12.0  # more room after them where another group's axis follows


def vertical_grid(
    scale: Scale,
    y_top: float,
    y_bottom: float,
    label: Callable[[float], str],
    right: float,
    below: bool = False,
) -> list[str]:
    """Tick labels above `y_top` (and under `y_bottom` if `below`) and grid lines in
    between. A label that would cross the chart's `right` edge ends at its line
    instead, one that would reach into the text columns left of the plot starts at
    it, and one that would touch the label before it is left out (its grid line
    stays)."""
    out: list[str] = []
    last_right = -math.inf
    for t in scale.ticks:
        x = scale(t)
        text = label(t)
        width = svg.text_px(text)
        out.append(svg.line(x, y_top, x, y_bottom, "grid"))
        anchor, left = "middle", x - width / 2
        if x + width / 2 > right - 2:
            anchor, left = "end", x - width
        elif left < scale.x0 - 8:  # into the text columns left of the plot
            anchor, left = "start", x
        # svg.text_px rounds each character up: a gap of 3 estimated pixels is one
        # drawn, and a wider one dropped the -2.5% beside a -5.0% at the left edge.
        if left < last_right + 3:
            continue
        out.append(svg.text(x, y_top - 4, text, "m", anchor))
        if below:
            out.append(svg.text(x, y_bottom + 12, text, "m", anchor))
        last_right = left + width
    return out
