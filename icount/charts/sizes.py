"""Size breakdowns: stacked bars of sections (or segments) per binary on one scale,
treemaps of the largest symbols, and the changes of a size diff.

Every bar segment and treemap tile is numbered or labelled, with the exact bytes in
its title; the same label gets the same colour and number in every binary. Binaries
of very different sizes (a 737 B module beside a 1.84 MiB libc) are drawn in groups
of like size, each group on its own axis, where one axis would leave the small ones
no visible bar; the chart says so. (Stacked bars cannot take a log scale: a
segment's length would no longer be its bytes.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from icount import numfmt
from icount.charts import axis, svg
from icount.charts.diverging import BYTES, DivRow, diverging_figure
from icount.charts.figure import Figure, under
from icount.charts.inputs import DrawnSizes, SizeImage, SizeRow
from icount.names import function_name

WIDTH = 760.0
LABEL_X = 8.0
TOTAL_RIGHT = 228.0  # the total before the bar: a phone shows it before it scrolls
BAR_X0, BAR_X1 = 240.0, 748.0
ROW = 30.0
BAR_H = 18.0
TOP = 58.0
NOTE = 14.0  # the line saying the bars are on several axes
NAMED = 9  # labels with a colour of their own; the rest are summed as "others"
LEGEND_COL = 186.0
TILES = 40  # treemap tiles per binary; the rest is one tile
TREE_W, TREE_H = 744.0, 380.0
DIFF_ROWS = 30
MAX_SHIFT = 120.0  # how far the totals and bars move right for long names


def _categories(images: Sequence[SizeImage], by_share: bool = False) -> tuple[list[str], list[str]]:
    """(named, others): labels holding file bytes, largest first, the same for every
    image; `by_share`: largest by their share of a file, so that the sections of a
    small binary on its own axis are named too, not all left in "others"."""
    biggest: dict[str, float] = {}
    for img in images:
        for r in img.rows:
            if r.file_bytes > 0:
                size = r.file_bytes / max(img.file_bytes, 1) if by_share else r.file_bytes
                biggest[r.label] = max(biggest.get(r.label, 0), size)
    ranked = sorted(biggest, key=lambda lb: (-biggest[lb], lb))
    if len(ranked) <= NAMED + 1:
        return ranked, []
    return ranked[:NAMED], ranked[NAMED:]


# A view's rows, one of them: "1 section", "2 compile units".
_ROW_WORDS = {"compileunits": "compile unit"}


def row_word(view: str) -> str:
    return _ROW_WORDS.get(view, view.removesuffix("s"))


def size_groups(images: Sequence[SizeImage]) -> list[list[int]]:
    return axis.magnitude_groups([float(i.file_bytes) for i in images])


def stacked_figure(doc: DrawnSizes, prefix: str) -> Figure:
    """The binaries' bars, their names drawn whole where moving the bars right (at most
    MAX_SHIFT) makes room; the legend in as many columns as its longest label allows,
    its labels told apart where they must still be shortened."""
    images = doc.images
    groups = size_groups(images)
    note = axis.groups_note(groups, "binaries")
    named, others = _categories(images, by_share=len(groups) > 1)
    what = row_word(doc.view)
    labels = [*named, *([f"others ({len(others)})"] if others else [])]
    keys = [f"{k + 1} {lb}" for k, lb in enumerate(labels)]
    col = max([LEGEND_COL, *(svg.text_px(k) + 24 for k in keys)])
    per_row = max(1, int((WIDTH - LABEL_X) // col))
    col = max(LEGEND_COL, (WIDTH - LABEL_X) / per_row) if per_row > 1 else WIDTH - LABEL_X
    legend_rows = -(-len(labels) // per_row)
    top = TOP + (NOTE if note else 0.0)
    heading = f"file bytes by {what}"
    out = [svg.text(LABEL_X, 15, heading + (" (old and new)" if doc.diff else ""), "t")]
    if note:
        out.append(svg.text(LABEL_X, 15 + 2 * NOTE, svg.clip(note, WIDTH - 16), "m", tip=note))
    totals = [numfmt.human_bytes(img.file_bytes) for img in images]
    names = [(LABEL_X, img.name, False) for img in images]
    shift = svg.label_room(names, totals, TOTAL_RIGHT, MAX_SHIFT)
    room = TOTAL_RIGHT + shift - max(map(svg.text_px, totals)) - svg.GAP - LABEL_X
    out.append(svg.text(TOTAL_RIGHT + shift, top - 10, "file", "m b", "end"))
    y = top
    for k, group in enumerate(groups):
        y += axis.GROUP_GAP if k else 0.0
        largest = max(images[i].file_bytes for i in group)
        scale = axis.bytes_scale(max(largest, 1), BAR_X0 + shift, BAR_X1)
        bottom = y + ROW * len(group)
        below = top + ROW * len(group) > axis.REPEAT_BELOW
        tick = axis.bytes_labels(scale)
        out += axis.vertical_grid(scale, y - 6, bottom, tick, WIDTH, below)
        for i in group:
            out += _stacked_row(images[i], named, others, what, scale, y + ROW / 2, room)
            y += ROW
        if below:  # and room between them and the next group's own labels
            y += axis.BELOW + (axis.BELOW_GAP if k + 1 < len(groups) else 0.0)
    bars_bottom = y
    height = bars_bottom + 14 + 20 * legend_rows + 8
    key: list[str] = []
    shown = svg.distinct_clips(keys, col - 24)
    for k, (full, short) in enumerate(zip(keys, shown, strict=True)):
        column, row = k % per_row, k // per_row
        lx = LABEL_X + column * col
        ly = bars_bottom + 14 + 20 * row + 10
        cls = f"c{k}" if k < NAMED else "c9"
        key.append(svg.rect(lx, ly - 10, 14, 12, cls, None))
        key.append(svg.text(lx + 19, ly, short, tip=full if short != full else None))
    out.append(svg.legend(key))
    binaries = numfmt.plural(len(images), "binary", "binaries")
    label = f"{heading} of {binaries}" + (f"; {note}" if note else "")
    return Figure("".join(out), WIDTH, height, label, prefix)


def _stacked_row(
    img: SizeImage,
    named: Sequence[str],
    others: Sequence[str],
    what: str,
    scale: axis.Scale,
    mid: float,
    room: float,
) -> list[str]:
    name = f"{img.name}: {img.fmt} {img.kind}, {img.arch}"
    out = [svg.text(LABEL_X, mid + 4, svg.clip(img.name, room, middle=True), tip=name)]
    rows = {r.label: r for r in img.rows}
    x0 = x = scale.x0
    for k, lb in enumerate(named):
        r = rows.get(lb)
        if r is None or r.file_bytes == 0:
            continue
        w = scale(r.file_bytes) - x0
        tip = (
            f"{img.name}: {lb}: {svg.exact(r.file_bytes)} bytes in the file "
            f"({numfmt.share(r.file_bytes, img.file_bytes)}), "
            f"{svg.exact(r.vm_bytes)} bytes of VM"
        )
        out += _segment(x, mid, w, f"c{k}", tip, lb, str(k + 1))
        x += w
    rest = [rows[lb] for lb in others if lb in rows and rows[lb].file_bytes > 0]
    if rest:
        total = sum(r.file_bytes for r in rest)
        tip = (
            f"{img.name}: {numfmt.plural(len(rest), 'other ' + what)}: {svg.exact(total)} "
            "bytes in the file "
            f"({numfmt.share(total, img.file_bytes)})"
        )
        out += _segment(x, mid, scale(total) - x0, "c9", tip, "others", str(NAMED + 1))
    out.append(
        svg.text(
            TOTAL_RIGHT + x0 - BAR_X0,
            mid + 4,
            numfmt.human_bytes(img.file_bytes),
            anchor="end",
            tip=f"{img.name}: {svg.exact(img.file_bytes)} bytes in the file, "
            f"{svg.exact(img.vm_bytes)} bytes of VM",
        )
    )
    return out


def _segment(x: float, mid: float, w: float, cls: str, tip: str, name: str, num: str) -> list[str]:
    out = [svg.rect(x, mid - BAR_H / 2, w, BAR_H, f"{cls} seg", tip)]
    # Inside the segment: its label where it fits, else its legend number.
    for text in (name, num):
        if svg.text_px(text, bold=True) + 8 <= w:
            out.append(svg.text(x + w / 2, mid + 4, text, "in", "middle"))
            break
    return out


# ---------------------------------------------------------------- treemap


def squarify(
    values: Sequence[float], x: float, y: float, w: float, h: float
) -> list[tuple[float, float, float, float]]:
    """Squarified treemap (Bruls, Huizing, van Wijk): rectangles of areas proportional
    to `values` (largest first) tiling (x, y, w, h), each as close to square as a
    greedy row layout allows."""
    total = sum(values)
    if total <= 0 or w <= 0 or h <= 0:
        return [(x, y, 0.0, 0.0) for _ in values]
    areas = [v * w * h / total for v in values]
    out: list[tuple[float, float, float, float]] = []
    i = 0
    while i < len(areas):
        short = min(w, h)
        row = [areas[i]]
        j = i + 1
        while j < len(areas) and _worst([*row, areas[j]], short) <= _worst(row, short):
            row.append(areas[j])
            j += 1
        s = sum(row)
        # The last tile of a strip ends where the strip does, and the last strip fills
        # what is left: dividing a tiny area by a tiny width can overshoot the box by
        # rounding (200.0000064 in a 200-high box).
        last_strip = j == len(areas)
        if w >= h:  # a column along the left edge
            cw = w if last_strip else (s / h if h else 0.0)
            yy = y
            for k, a in enumerate(row):
                rh = (y + h - yy) if k == len(row) - 1 else (a / cw if cw else 0.0)
                out.append((x, yy, cw, rh))
                yy += rh
            x, w = x + cw, w - cw
        else:  # a row along the top edge
            rh = h if last_strip else (s / w if w else 0.0)
            xx = x
            for k, a in enumerate(row):
                cw = (x + w - xx) if k == len(row) - 1 else (a / rh if rh else 0.0)
                out.append((xx, y, cw, rh))
                xx += cw
            y, h = y + rh, h - rh
        i = j
    return out


def _worst(row: Sequence[float], short: float) -> float:
    s = sum(row)
    if s <= 0 or short <= 0:
        return float("inf")
    return max(max(short * short * a / (s * s), s * s / (short * short * a)) for a in row if a)


# The row `icount size --top` sums what it leaves out in: `[5282 others]`.
_OTHERS = re.compile(r"\[([0-9]+) others\]")


def _merged(r: SizeRow) -> int:
    """How many rows `r` stands for: N for a `[N others]` row, else 0."""
    m = _OTHERS.fullmatch(r.label)
    return int(m.group(1)) if m else 0


def treemap_figure(img: SizeImage, prefix: str) -> Figure:
    """The largest symbols as tiles; what --top left out (its `[N others]` row) and
    the tiles past TILES are one "others" tile. A C++ tile reads the function's name
    (`std::money_get::_M_extract`, not the return type `std::istreambuf_iterator…`),
    shortened from the left, where it ends; its title keeps the whole symbol."""
    rows = sorted((r for r in img.rows if r.file_bytes > 0), key=lambda r: (-r.file_bytes, r.label))
    symbols = [r for r in rows if not _merged(r)]
    shown, rest = symbols[:TILES], symbols[TILES:] + [r for r in rows if _merged(r)]
    tiles: list[tuple[SizeRow, int]] = [(r, 0) for r in shown]
    if rest:
        count = sum(_merged(r) or 1 for r in rest)
        label = numfmt.plural(count, "other")
        tiles.append((SizeRow(label, sum(r.file_bytes for r in rest), 0), count))
    top = 30.0
    height = top + TREE_H + 8
    name = f"{img.name} ({img.arch})" if img.arch else img.name
    heading = f"{name}: largest symbols by file bytes"
    head, dy = svg.heading(LABEL_X, 17, heading, WIDTH - 2 * LABEL_X)
    out = []
    rects = squarify([float(r.file_bytes) for r, _ in tiles], LABEL_X, top, TREE_W, TREE_H)
    for k, ((r, merged), (x, y, w, h)) in enumerate(zip(tiles, rects, strict=True)):
        cls = "c9" if merged else f"c{k % (NAMED)}"
        what = f"{numfmt.plural(merged, 'smaller row')}, " if merged else ""
        tip = (
            f"{img.name}: {r.label}: {what}{svg.exact(r.file_bytes)} bytes in the file "
            f"({numfmt.share(r.file_bytes, img.file_bytes)})"
        )
        out.append(svg.rect(x, y, w, h, f"{cls} seg", tip))
        # A label only where at least a few characters fit; the size only where whole.
        room = w - 8
        if h >= 16 and room >= svg.text_px("abcde"):
            name = r.label if merged else function_name(r.label)
            tail = "::" in name  # a qualified name ends with the function's own
            short = svg.clip(name, room, tail=tail, bold=True, words=True)
            if short:  # no piece of a word: the tile's title names it
                out.append(svg.text(x + 4, y + 14, short, "in"))
            size = numfmt.human_bytes(r.file_bytes)
            if h >= 32 and svg.text_px(size, bold=True) <= room:
                out.append(svg.text(x + 4, y + 28, size, "in"))
    total = len(symbols) + sum(_merged(r) for r in rows)
    label = f"{heading} ({len(shown)} largest of {numfmt.plural(total, 'row')})"
    return Figure(under(head, dy, "".join(out)), WIDTH, height + dy, label, prefix)


# ---------------------------------------------------------------- diffs


def _signed_bytes(v: float) -> str:
    if v == 0:
        return "0 B"
    return ("+" if v > 0 else "-") + numfmt.human_bytes(int(abs(v)))


def diff_figure(doc: DrawnSizes, old: SizeImage, new: SizeImage, prefix: str) -> Figure | None:
    """The rows whose file bytes changed, largest change first (None when none did)."""
    olds = {r.label: r for r in old.rows}
    news = {r.label: r for r in new.rows}
    changed = []
    for lb in sorted(set(olds) | set(news)):
        a = olds[lb].file_bytes if lb in olds else 0
        b = news[lb].file_bytes if lb in news else 0
        if a != b:
            changed.append((lb, a, b))
    if not changed:
        return None
    changed.sort(key=lambda t: (-abs(t[2] - t[1]), t[0]))
    rows = []
    for lb, a, b in changed[:DIFF_ROWS]:
        d = b - a
        rows.append(
            DivRow(
                label=lb,
                cols=(numfmt.human_bytes(a), numfmt.human_bytes(b)),
                value=float(d),
                band=None,
                cls="reg" if d > 0 else "imp",
                pattern="hatch" if d > 0 else None,
                tip=f"{lb}: {svg.exact(a)} -> {svg.exact(b)} bytes in the file "
                f"({'+' if d > 0 else ''}{svg.exact(d)})",
                change=_signed_bytes(d),
                verdict=(
                    "new" if a == 0 else "removed" if b == 0 else numfmt.signed_percent(d / a)
                ),
                verdict_tip=f"{lb}: {'grew' if d > 0 else 'shrank'}",
            )
        )
    more = f", {len(changed) - DIFF_ROWS} more not shown" if len(changed) > DIFF_ROWS else ""
    total = new.file_bytes - old.file_bytes
    heading = (
        f"{old.name} to {new.name}: file bytes {_signed_bytes(total)}; "
        f"{numfmt.plural(len(changed), row_word(doc.view))} changed{more}"
    )
    return diverging_figure(
        rows,
        heading,
        ("old", "new"),
        lambda scale: axis.bytes_labels(scale, signed=True),
        prefix,
        legend=False,
        base=axis.binary_unit,
        cols=BYTES,
        symmetric=False,
        last_title="relative",
    )


def size_figures(doc: DrawnSizes, prefix: str) -> list[Figure]:
    """Stacked bars for section and segment views, treemaps for symbols; a diff adds
    its changes."""
    figs: list[Figure] = []
    if doc.view != "symbols" and doc.images:
        figs.append(stacked_figure(doc, f"{prefix}s"))
    if doc.diff:
        pairs = zip(doc.images[::2], doc.images[1::2], strict=True)
        for k, (old, new) in enumerate(pairs):
            fig = diff_figure(doc, old, new, f"{prefix}d{k}")
            if fig is not None:
                figs.append(fig)
    elif doc.view == "symbols":
        figs += [treemap_figure(img, f"{prefix}t{k}") for k, img in enumerate(doc.images)]
    return figs
