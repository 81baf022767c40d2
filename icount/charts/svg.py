"""SVG primitives every chart shares: escaping, fixed number formatting, marks with
their titles, and the one style sheet (light and dark) used inline and standalone.

Coordinates are written with at most one decimal and figures with a fixed format, so
the same data always gives the same bytes. Colours live in CSS custom properties on
the chart's root class: a page or a standalone SVG switches them for dark mode in one
media query, and the marks carry only class names.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from icount import shortening
from icount.escapes import xml_text
from icount.text import printable

# Advance widths of DejaVu Sans (what Chromium on Linux falls back to, and wider than
# the system fonts of macOS and Windows), in em, rounded up to 0.05, regular and bold:
# labels are shortened with these because an SVG cannot measure its text. A character
# not listed (an ellipsis, a letter of another script) takes 1 em.
FONT_PX = 12
# fmt: off
_REGULAR = (
    (0.3, "'IJijl"), (0.35, " ,./:;\\f|"), (0.4, "()-[]rt"), (0.45, "!"), (0.5, '"*_`'),
    (0.55, "?csz"), (0.6, "FLTkvxy"), (0.65, "$0123456789EPSYabdeghnopqu{}"),
    (0.7, "BCKRVXZ"), (0.75, "ANU"), (0.8, "&DGHOQ"), (0.85, "#+<=>^w~"), (0.9, "M"),
)
_BOLD = (
    (0.35, " 'ijl"), (0.4, ",./:;IJ\\|"), (0.45, "-f"), (0.5, "!()[]_`rt"), (0.55, '"*'),
    (0.6, "?csz"), (0.65, "Lx"), (0.7, "$0123456789EFSaekovy"), (0.75, "CPTYZbdghnpqu{}"),
    (0.8, "ABKRVX"), (0.85, "#+<=>DGHNU^~"), (0.9, "&OQ"), (0.95, "w"), (1.05, "%m"),
    (1.15, "W"),
)
# fmt: on
EM = {ch: em for em, chars in _REGULAR for ch in chars}
EM_BOLD = {ch: em for em, chars in _BOLD for ch in chars}


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


def char_px(ch: str, size: float = FONT_PX, bold: bool = False) -> float:
    return (EM_BOLD if bold else EM).get(ch, 1.0) * size


def text_px(text: str, size: float = FONT_PX, bold: bool = False) -> float:
    return round(sum(char_px(ch, size, bold) for ch in text), 6)  # no 150.00000000000003


def clip(
    text: str,
    width_px: float,
    size: float = FONT_PX,
    middle: bool = False,
    tail: bool = False,
    bold: bool = False,
    words: bool = False,
) -> str:
    """`text` shortened with an ellipsis to fit `width_px`, cut between words and never
    inside a number (shortening.shorten; the whole text goes in the mark's title);
    `middle` keeps both ends, where names differ at the end (C++ symbols, section
    names); `tail` keeps the end (a function's own name ends a qualified one); `words`:
    "" rather than a cut inside a word (a treemap tile's label)."""
    keep = shortening.END if tail else shortening.BOTH if middle else shortening.START
    width = lambda ch: char_px(ch, size, bold)  # noqa: E731
    # as drawn: a control character is drawn as its escape (\x1b), four characters
    return shortening.shorten(printable(text), width_px, keep, width, words)


def is_bold(cls: str) -> bool:
    """Whether the style sheet draws text of these classes bold."""
    return bool({"b", "t", "in"} & set(cls.split()))


def clip_path(text: str, width_px: float, size: float = FONT_PX) -> str:
    """A `/`-separated name shortened by whole parts from the middle: its first part
    and at least two of its last where they fit (`server/…/.dynstr/vm`), else as many
    of its last as fit (`…/.data.rel.ro/file`); cut between words in the middle where
    whole parts would keep less than half the room."""
    text = printable(text)
    if text_px(text, size) <= width_px:
        return text
    parts = text.split("/")
    best: tuple[int, int, str] | None = None
    for head in (parts[:1], []):
        for k in range(1, len(parts) - len(head)):
            tail = parts[len(parts) - k :]
            short = "/".join([*head, "…", *tail])
            rank = (len(head) if k >= 2 else 0, k)
            kept = text_px("/".join(tail), size)
            fits = text_px(short, size) <= width_px and 2 * kept >= width_px
            if fits and (best is None or rank > best[:2]):
                best = (*rank, short)
    return best[2] if best else clip(text, width_px, size, middle=True)


def distinct_clips(texts: list[str], width_px: float, size: float = FONT_PX) -> list[str]:
    """Each of `texts` shortened to `width_px` (clip_path); one that could then be
    read as another (`[section .debug_str (compressed)]` and `…debug_info…`, both
    `[section…(compressed)]`) shows where it differs instead (shortening.distinct)."""
    return shortening.distinct(
        [printable(t) for t in texts],
        width_px,
        width=lambda ch: char_px(ch, size),
        short=lambda t: clip_path(t, width_px, size),
    )


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
    short = clip(content, width_px, middle=middle, bold=is_bold(cls))
    return text(x, y, short, cls, tip=content if short != content else None)


GAP = 12.0  # between a label and the column of figures after it


def label_room(
    labels: Sequence[tuple[float, str, bool]],
    figures: Sequence[str],
    right: float,
    max_shift: float,
) -> float:
    """How far a chart's columns move right so that its labels ((x, text, bold)) end
    before its first column of figures (right-aligned at `right`) without shortening:
    0 where they fit, at most `max_shift`."""
    widest = max((text_px(f) for f in figures), default=0.0)
    need = max((x + text_px(t, bold=b) for x, t, b in labels), default=0.0)
    return min(max(0.0, need - (right - widest - GAP)), max_shift)


TITLE_PX = 13
TITLE_LINE = 16.0  # from one line of a chart's title to the next


def heading(x: float, y: float, content: str, width_px: float, most: int = 3) -> tuple[str, float]:
    """A chart's title (class t) in as many lines of `width_px` as it needs, up to
    `most`, each broken at a phrase boundary (shortening.lines); and the height it
    takes beyond its first line, by which the chart under it moves down."""
    shown = printable(content)
    rows = shortening.lines(shown, width_px, most, lambda ch: char_px(ch, TITLE_PX, True))
    cut = rows[-1].endswith("…") and not shown.endswith("…")
    body = "".join(
        text(x, y + k * TITLE_LINE, row, "t", tip=content if cut and k == len(rows) - 1 else None)
        for k, row in enumerate(rows)
    )
    return body, (len(rows) - 1) * TITLE_LINE


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
