"""Every table icount prints on a terminal, without rich, and never cutting a number.

rich lays out a table that is wider than the terminal by shrinking its columns, which
cuts numbers (`517.01 K` for 517.01 KiB, `111.7k (111.7k-111.` beside a long cell
name), and importing and running it costs ~50 ms, a third of a small file's whole
run. This module draws the same table rich draws with icount's settings (box
SIMPLE_HEAD, no edge, cells padded by one: columns three spaces apart, a rule of `─`
under the header, the title centred over the table, notes word-wrapped as rich wraps
them; tests/size/test_terminal.py checks it against rich on tables that fit) and, when
the table does not fit:

0. wraps the prose columns (`wrap`: a doctor check's detail) to the room left;
1. shortens the labels (first column) in the middle with `…` (`.dynamic` and
   `.dynsym` stay apart), down to MIN_LABEL characters;
2. then splits the other columns, whole groups at a time (one file's file and VM
   columns; a diff's file and VM halves), into blocks printed one under the other,
   each with the label column again;
3. a single group wider than the terminal is printed whole: numbers are never cut.

Grouped tables (several files side by side) get a two-line header: the group's name
(the file) over its columns, so a long file name does not widen a column of numbers.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from icount import shortening

MIN_LABEL = 24
MIN_PROSE = 20  # a wrapped column narrower than this reads one word a line
GAP = 3  # one cell of padding, one blank box edge, one cell of padding
RULE = "─"
_WORD = re.compile(r"\s*\S+\s*")


class Group(NamedTuple):
    """`size` consecutive columns after the label column; `name` heads them ("": none)."""

    name: str
    size: int


def cell_len(text: str) -> int:
    """Terminal cells `text` takes: wide (East Asian) characters take two."""
    if text.isascii():
        return len(text)
    n = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        n += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return n


def _chop(word: str, width: int) -> list[str]:
    """`word` in pieces of at most `width` cells."""
    out: list[str] = []
    piece, used = "", 0
    for ch in word:
        w = cell_len(ch)
        if used + w > width and piece:
            out.append(piece)
            piece, used = "", 0
        piece += ch
        used += w
    out.append(piece)
    return out


def wrap(text: str, width: int) -> list[str]:
    """Word-wrapped lines of at most `width` cells, broken where rich breaks them: a
    word fits when it does without its trailing blanks; a word longer than a line is
    folded."""
    width = max(1, width)
    breaks: list[int] = []
    used = 0
    for m in _WORD.finditer(text):
        start, word = m.start(), m.group(0)
        length = cell_len(word.rstrip())
        if width - used >= length:
            used += cell_len(word)
        elif length > width:
            pieces = _chop(word, width)
            for k, piece in enumerate(pieces):
                if start:
                    breaks.append(start)
                if k == len(pieces) - 1:
                    used = cell_len(piece)
                else:
                    start += len(piece)
        elif used and start:
            breaks.append(start)
            used = cell_len(word)
    bounds = [0, *breaks, len(text)]
    return [text[a:b].rstrip() for a, b in itertools.pairwise(bounds)]


def shorten(text: str, room: int) -> str:
    """`text` in at most `room` cells, its middle replaced by `…` between words (never
    inside a number): names that share a prefix (`server/sections/.dynsym`,
    `.../.dynstr`) or a suffix stay apart."""
    if text.isascii():  # a cell each: the plain count is faster
        return shortening.shorten(text, room, shortening.BOTH)
    return shortening.shorten(text, room, shortening.BOTH, cell_len)


def _pad(text: str, width: int, left: bool) -> str:
    fill = " " * max(0, width - cell_len(text))
    return text + fill if left else fill + text


class Grid(NamedTuple):
    """What to draw: column titles and alignments, rows of cells, and how the columns
    after the first group."""

    titles: Sequence[str]
    left: Sequence[bool]  # per column: left-aligned
    rows: Sequence[Sequence[str]]
    groups: Sequence[Group]
    title: str | None = None
    notes: Sequence[str] = ()
    heading: Sequence[str] = ()  # lines printed before everything, left-aligned
    wrap: Sequence[bool] = ()  # per column: prose, wrapped to fit (default: none)


def _widths(grid: Grid, columns: Iterable[int], titles: Sequence[str]) -> list[int]:
    return [
        max([cell_len(titles[c]), *(cell_len(r[c]) for r in grid.rows)], default=0) for c in columns
    ]


def _natural_width(grid: Grid) -> int:
    widths = _widths(grid, range(len(grid.titles)), grid.titles)
    return sum(widths) + GAP * (len(widths) - 1)


def _wrap_prose(grid: Grid, width: int) -> Grid:
    """The rows with each prose cell wrapped to the room the other columns leave (at
    least MIN_PROSE), on continuation rows whose other cells are empty."""
    prose = [c for c, w in enumerate(grid.wrap) if w]
    if not prose or _natural_width(grid) <= width:
        return grid
    fixed = [c for c in range(len(grid.titles)) if c not in prose]
    used = sum(_widths(grid, fixed, grid.titles)) + GAP * (len(grid.titles) - 1)
    room = max(MIN_PROSE, (width - used) // len(prose))
    rows: list[list[str]] = []
    for row in grid.rows:
        lines = [wrap(cell, room) if c in prose else [cell] for c, cell in enumerate(row)]
        for k in range(max(len(p) for p in lines)):
            rows.append([p[k] if k < len(p) else "" for p in lines])
    return grid._replace(rows=rows)


def render(grid: Grid, width: int) -> str:
    """The table as lines of at most `width` cells (wider only where one group of
    numbers is wider on its own)."""
    grid = _wrap_prose(grid, width)
    ncols = len(grid.titles)
    if sum(g.size for g in grid.groups) != ncols - 1:
        raise ValueError("groups must cover every column after the first")
    titles = list(grid.titles)
    named = any(g.name for g in grid.groups)
    if named:  # the group's name is in its header line: strip it from the titles
        c = 1
        for g in grid.groups:
            for k in range(c, c + g.size):
                if g.name and titles[k].startswith(g.name + " "):
                    titles[k] = titles[k][len(g.name) + 1 :]
            c += g.size
    spans: list[list[int]] = []
    c = 1
    for g in grid.groups:
        spans.append(list(range(c, c + g.size)))
        c += g.size
    group_w = [
        _group_width(grid, s, titles, g.name) for s, g in zip(spans, grid.groups, strict=True)
    ]
    label_w = _widths(grid, [0], titles)[0]
    label_min = min(label_w, max(MIN_LABEL, cell_len(titles[0])))

    def fits(blocks: list[list[int]], label: int) -> bool:
        return all(label + sum(group_w[g] + GAP for g in b) <= width for b in blocks)

    every = list(range(len(grid.groups)))
    if fits([every], label_w):
        blocks, label = [every], label_w
    else:
        label = max(label_min, width - sum(group_w[g] + GAP for g in every))
        if fits([every], label):
            blocks = [every]
        else:
            label = label_min
            blocks = _blocks(group_w, width - label)
    lines = [x for h in grid.heading for x in wrap(h, width)]
    if lines:
        lines.append("")
    for k, block in enumerate(blocks):
        if k:
            lines.append("")
        lines += _block(grid, titles, spans, block, label, named, k == 0)
    for note in grid.notes:
        lines += wrap(note, width)
    return "\n".join(x.rstrip() for x in lines) + "\n"


def _group_width(grid: Grid, span: list[int], titles: Sequence[str], name: str) -> int:
    w = sum(_widths(grid, span, titles)) + GAP * (len(span) - 1)
    return max(w, cell_len(name))


def _blocks(group_w: list[int], room: int) -> list[list[int]]:
    """Groups in order, as few blocks as fit in `room`, evened out (4 files in two
    blocks of 2, not 3 and 1)."""
    greedy: list[list[int]] = [[]]
    used = 0
    for g, w in enumerate(group_w):
        if greedy[-1] and used + w + GAP > room:
            greedy.append([])
            used = 0
        greedy[-1].append(g)
        used += w + GAP
    n = len(group_w)
    per = -(-n // len(greedy))
    even = [list(range(i, min(i + per, n))) for i in range(0, n, per)]
    if len(even) == len(greedy) and all(sum(group_w[g] + GAP for g in b) <= room for b in even):
        return even
    return greedy


def _block(
    grid: Grid,
    titles: Sequence[str],
    spans: list[list[int]],
    block: list[int],
    label: int,
    named: bool,
    first: bool,
) -> list[str]:
    columns = [0, *(c for g in block for c in spans[g])]
    widths = [label, *_widths(grid, columns[1:], titles)]
    # a group's name wider than its columns widens its last column
    for g in block:
        span = spans[g]
        need = cell_len(grid.groups[g].name) - (
            sum(widths[columns.index(c)] for c in span) + GAP * (len(span) - 1)
        )
        if need > 0:
            widths[columns.index(span[-1])] += need
    total = sum(widths) + GAP * (len(widths) - 1)
    out: list[str] = []
    if grid.title and first:
        for line in wrap(grid.title, total):
            out.append(" " * ((total - cell_len(line)) // 2) + line)
    if named:
        head = " " * label
        for g in block:
            span = [columns.index(c) for c in spans[g]]
            w = sum(widths[i] for i in span) + GAP * (len(span) - 1)
            head += " " * GAP + _pad(grid.groups[g].name, w, left=False)
        out.append(head)

    def draw(cells: Sequence[str], name: str) -> str:
        parts = []
        for i, c in enumerate(columns):
            parts.append(_pad(cells[c] if c else name, widths[i], grid.left[c]))
        return (" " * GAP).join(parts)

    out.append(draw(titles, shorten(titles[0], label)))
    out.append(RULE * total)
    # shortened together: a name that would read as another's shows where they differ
    labels = [r[0] for r in grid.rows]
    width = None if all(x.isascii() for x in labels) else cell_len
    names = shortening.distinct(labels, label, shortening.BOTH, width)
    out += [draw(r, name) for r, name in zip(grid.rows, names, strict=True)]
    return out
