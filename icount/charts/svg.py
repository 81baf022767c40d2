"""SVG primitives every chart shares: escaping, fixed number formatting, marks with
their titles, and the one style sheet (light and dark) used inline and standalone.

Coordinates are written with at most one decimal and figures with a fixed format, so
the same data always gives the same bytes. Colours live in CSS custom properties on
the chart's root class: a page or a standalone SVG switches them for dark mode in one
media query, and the marks carry only class names.
"""

from __future__ import annotations

import math

from icount.escapes import xml_text

# Average advance of a character of the sans-serif fonts browsers fall back to, in em:
# labels are shortened with this estimate because an SVG cannot measure its text.
CHAR_EM = 0.62
FONT_PX = 12

STYLE = """\
.ic{--fg:#1f2328;--muted:#59636e;--grid:#d1d9e0;--bar:#3b6fd4;--bar2:#9fbaf0;--dot:#0b2a66;\
--bad:#8c959f;--reg:#cf222e;--imp:#1a7f37;--same:#6e7781;--band:#dde3ea;--edge:#ffffff;\
--c0:#3b6fd4;--c1:#e8833a;--c2:#2f9e72;--c3:#c8427a;--c4:#8a63d2;--c5:#b5942b;--c6:#3aa1c4;\
--c7:#a0522d;--c8:#5b7083;--c9:#a3a3a3;\
color-scheme:light dark;\
font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;font-size:12px}
@media (prefers-color-scheme:dark){.ic{--fg:#e6edf3;--muted:#9aa4ae;--grid:#3a424b;\
--bar:#6d9bff;--bar2:#2e4a80;--dot:#dbe6ff;--bad:#6e7681;--reg:#ff6b6b;--imp:#3fb950;\
--same:#8b949e;--band:#2a3139;--edge:#0d1117;--c0:#6d9bff;--c1:#f0a060;--c2:#4cc38a;\
--c3:#e06c9f;--c4:#a78bfa;--c5:#d4b44a;--c6:#5cc0e0;--c7:#c8794f;--c8:#8aa0b4;--c9:#6e7681}}
.ic text{fill:var(--fg)}
.ic .t{font-weight:600;font-size:13px}
.ic .m{fill:var(--muted)}
.ic .b{font-weight:600}
.ic .r{font-size:11px}
.ic .halo{paint-order:stroke;stroke:var(--edge);stroke-width:3px;stroke-linejoin:round}
.ic .grid{stroke:var(--grid);stroke-width:1}
.ic .axis{stroke:var(--muted);stroke-width:1}
.ic .bar{fill:var(--bar)}
.ic .bar2{fill:var(--bar2)}
.ic .bad{fill:var(--bad)}
.ic .wh{fill:none;stroke:var(--fg);stroke-width:1.2}
.ic .dot{fill:var(--dot);stroke:var(--edge);stroke-width:.8}
.ic .band{fill:var(--band)}
.ic .thr{stroke:var(--muted);stroke-width:1;stroke-dasharray:3 2}
.ic .reg{fill:var(--reg)}
.ic .imp{fill:var(--imp)}
.ic .same{fill:var(--same)}
.ic .seg{stroke:var(--edge);stroke-width:1}
.ic .line{fill:none;stroke:var(--bar);stroke-width:1.8}
.ic .pt{fill:var(--bar);stroke:var(--edge);stroke-width:1}
.ic .hs{stroke:var(--edge);stroke-width:1.6}
.ic .c0{fill:var(--c0)}
.ic .c1{fill:var(--c1)}
.ic .c2{fill:var(--c2)}
.ic .c3{fill:var(--c3)}
.ic .c4{fill:var(--c4)}
.ic .c5{fill:var(--c5)}
.ic .c6{fill:var(--c6)}
.ic .c7{fill:var(--c7)}
.ic .c8{fill:var(--c8)}
.ic .c9{fill:var(--c9)}
.ic text.in{fill:#fff;font-weight:600;pointer-events:none}
@media (prefers-color-scheme:dark){.ic text.in{fill:#0d1117}}
"""


def esc(text: str) -> str:
    """`text` for SVG or HTML, text or attribute: control characters (XML 1.0 forbids
    most, even as references), noncharacters and bidi overrides escaped visibly."""
    return xml_text(text)


def n(x: float) -> str:
    """A coordinate: at most one decimal, no trailing zeros, never '-0'."""
    text = f"{round(x, 1):.1f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def exact(value: float) -> str:
    """A figure as measured, for titles: 2107284 -> '2,107,284', 13240.25 -> '13,240.25'."""
    if not math.isfinite(value):
        return "-"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3f}".rstrip("0").rstrip(".")


def text_px(text: str, size: float = FONT_PX) -> float:
    return len(text) * size * CHAR_EM


def clip(
    text: str, width_px: float, size: float = FONT_PX, middle: bool = False, tail: bool = False
) -> str:
    """`text` shortened with an ellipsis to fit about `width_px` (the whole text goes in
    the mark's title); `middle` keeps both ends, where names differ at the end (C++
    symbols, section names); `tail` keeps the end (a function's own name ends a
    qualified one)."""
    room = max(1, int(width_px / (size * CHAR_EM)))
    if len(text) <= room:
        return text
    if tail:
        return "…" + text[len(text) - room + 1 :] if room > 1 else "…"
    if middle and room >= 8:
        end = (room - 1) // 2
        return text[: room - 1 - end] + "…" + text[len(text) - end :]
    return text[: max(0, room - 1)] + "…"


def clip_path(text: str, width_px: float, size: float = FONT_PX) -> str:
    """A `/`-separated name shortened by whole parts from the middle: its first part
    and at least two of its last where they fit (`server/…/.dynstr/vm`), else as many
    of its last as fit (`…/.data.rel.ro/file`); a character middle ellipsis where whole
    parts would keep less than half the room."""
    room = max(1, int(width_px / (size * CHAR_EM)))
    if len(text) <= room:
        return text
    parts = text.split("/")
    best: tuple[int, int, str] | None = None
    for head in (parts[:1], []):
        for k in range(1, len(parts) - len(head)):
            tail = parts[len(parts) - k :]
            short = "/".join([*head, "…", *tail])
            rank = (len(head) if k >= 2 else 0, k)
            fits = len(short) <= room and 2 * len("/".join(tail)) >= room
            if fits and (best is None or rank > best[:2]):
                best = (*rank, short)
    return best[2] if best else clip(text, width_px, size, middle=True)


def distinct_clips(texts: list[str], width_px: float) -> list[str]:
    """Each of `texts` shortened to `width_px` (clip_path). Texts that would be
    shortened alike (`.rela.data.rel.ro.local._ZTVN3geo6SquareE` and
    `.rela.data.rel.ro._ZTIN3geo6SquareE`, both `.rela.data…o6SquareE`) keep their
    start and show where they differ: `.rela.…local._ZTVN…`, `.rela.…_ZTIN3geo6S…`."""
    out = [clip_path(t, width_px) for t in texts]
    groups: dict[str, set[str]] = {}
    for t, short in zip(texts, out, strict=True):
        groups.setdefault(short, set()).add(t)
    room = max(1, int(width_px / (FONT_PX * CHAR_EM)))
    for k, t in enumerate(texts):
        alike = groups[out[k]]
        if len(alike) > 1:
            out[k] = _from_difference(t, _shared_start(alike), room, width_px)
    return out


def _shared_start(texts: set[str]) -> int:
    """How many leading characters all of `texts` share."""
    first, last = min(texts), max(texts)  # the two that differ soonest
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return n


HEAD = 6  # characters of a name's start kept before the part where names differ


def _from_difference(text: str, shared: int, room: int, width_px: float) -> str:
    if shared <= HEAD + 2 or room < HEAD + 8:  # a middle ellipsis keeps the difference
        return clip(text, width_px, middle=True)
    rest = text[shared - 1 :]  # one shared character, for context
    budget = room - HEAD - 1
    if len(rest) > budget:
        rest = rest[: budget - 1] + "…"
    return text[:HEAD] + "…" + rest


def title(text: str) -> str:
    return f"<title>{esc(text)}</title>"


def rect(x: float, y: float, w: float, h: float, cls: str, tip: str | None) -> str:
    head = f'<rect class="{cls}" x="{n(x)}" y="{n(y)}" width="{n(max(w, 0))}" height="{n(h)}"'
    return f"{head}>{title(tip)}</rect>" if tip is not None else f"{head}/>"


def line(x1: float, y1: float, x2: float, y2: float, cls: str, tip: str | None = None) -> str:
    head = f'<line class="{cls}" x1="{n(x1)}" y1="{n(y1)}" x2="{n(x2)}" y2="{n(y2)}"'
    return f"{head}>{title(tip)}</line>" if tip is not None else f"{head}/>"


def whisker(lo: float, hi: float, y: float, cap: float, tip: str) -> str:
    """A min-max range: a line from lo to hi with a cap at each end, as one mark."""
    d = (
        f"M{n(lo)} {n(y)}H{n(hi)}M{n(lo)} {n(y - cap)}V{n(y + cap)}"
        f"M{n(hi)} {n(y - cap)}V{n(y + cap)}"
    )
    return f'<path class="wh" d="{d}">{title(tip)}</path>'


def label(
    x: float, y: float, content: str, width_px: float, cls: str = "", middle: bool = False
) -> str:
    """A text shortened to `width_px`; only a shortened one carries the whole as title."""
    short = clip(content, width_px, middle=middle)
    return text(x, y, short, cls, tip=content if short != content else None)


def circle(cx: float, cy: float, r: float, cls: str, tip: str) -> str:
    return f'<circle class="{cls}" cx="{n(cx)}" cy="{n(cy)}" r="{n(r)}">{title(tip)}</circle>'


def text(
    x: float,
    y: float,
    content: str,
    cls: str = "",
    anchor: str = "start",
    tip: str | None = None,
) -> str:
    attrs = f' class="{cls}"' if cls else ""
    if anchor != "start":
        attrs += f' text-anchor="{anchor}"'
    body = esc(content) + (title(tip) if tip is not None else "")
    return f'<text x="{n(x)}" y="{n(y)}"{attrs}>{body}</text>'


def legend(parts: list[str]) -> str:
    """Legend swatches are not data: grouped, so that tests and readers can tell them
    from the marks (which all carry titles)."""
    return f'<g class="legend">{"".join(parts)}</g>'


def patterns(prefix: str) -> str:
    """The fill that tells marks apart without colour: a hatch (invalid, regressed)."""
    return (
        f'<pattern id="{prefix}-hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><line class="hs" x1="0" y1="0" x2="0" y2="6"/></pattern>'
    )


def fill_overlay(prefix: str, kind: str, x: float, y: float, w: float, h: float) -> str:
    """A pattern drawn over a coloured mark (kind 'hatch'); it has no title of
    its own and lets pointer events through to the mark under it."""
    return (
        f'<rect x="{n(x)}" y="{n(y)}" width="{n(max(w, 0))}" height="{n(h)}" '
        f'fill="url(#{prefix}-{kind})" pointer-events="none"/>'
    )


def document(body: str, width: float, height: float, label: str, prefix: str) -> str:
    """An <svg> element for inline use in the report page (the page holds the style)."""
    return (
        f'<svg class="ic" viewBox="0 0 {n(width)} {n(height)}" '
        f'width="{n(width)}" height="{n(height)}" role="img" aria-labelledby="{prefix}-title">'
        f'<title id="{prefix}-title">{esc(label)}</title><defs>{patterns(prefix)}</defs>'
        f"{body}</svg>"
    )


def standalone(svg_element: str) -> str:
    """A chart as its own .svg file: the XML declaration, the namespace (which HTML does
    not need) and the style sheet inside."""
    head, rest = svg_element.split(">", 1)
    head = head.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{head}><style>{STYLE}</style>{rest}\n'
