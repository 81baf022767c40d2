"""Labels shortened to a width with `…`, cut only between words: at a space, a path's
`/`, a `.`, `_`, `-`, `::`, a bracket or another separator, never inside a number
(`1,234.5`, `1234567890`) and never between the two colons of `::`. Only where whole
words would keep less than half the room are camelCase and letter-digit changes cut,
and only where those keep less than a quarter any character outside a number (a
number that does not fit is left out whole).

Widths are given per character (a terminal's cells: wide characters take two; a
chart's estimate: one each), so one algorithm serves the terminal and the SVG charts.
`distinct` shortens labels that would read alike (`[section .debug_str (compressed)]`
and `[section .debug_info (compressed)]` both `[section…(compressed)]`) to the part
where they differ.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable, Sequence

ELLIPSIS = "…"
START, END, BOTH = "start", "end", "both"  # what a shortened label keeps
_SEP = frozenset(" \t/\\._-:()[]{}<>,;=*&+|@#!?'\"`~$%^")
_NUMBER = re.compile(r"[0-9]+(?:[.,][0-9]+)*")
MAX_APART = 64  # labels read alike beyond this many stay as they are (the search is slow)
EPS = 1e-6  # widths are sums of floats: 150.00000000000003 fits in 150
MIN_BOTH = 8  # narrower than this many letters, a label keeps its start

Width = Callable[[str], float]


def _one(ch: str) -> float:
    return 1.0


def _inside_numbers(text: str) -> set[int]:
    """Positions that would cut a number in two (between its first and last digit)."""
    return {i for m in _NUMBER.finditer(text) for i in range(m.start() + 1, m.end())}


_SEP_RE = re.compile("[" + re.escape("".join(sorted(_SEP))) + "]")


def _word_cuts(text: str, banned: set[int]) -> list[int]:
    """Cuts beside a separator: not inside a number, not between the colons of `::`,
    not between a word and the sign that starts it (-b1, --verify, .text)."""
    n = len(text)
    near = {i for m in _SEP_RE.finditer(text) for i in (m.start(), m.start() + 1)}
    out = []
    for i in sorted(near):
        if not 0 < i < n or i in banned:
            continue
        a, b = text[i - 1], text[i]
        if a == ":" and b == ":":
            continue
        if a in "-_." and b.isalnum() and (i < 2 or not text[i - 2].isalnum()):
            continue
        out.append(i)
    return out


def _change(a: str, b: str) -> bool:
    """A camelCase change (`aB`) or one between letters and digits (`geo6`, `6Square`)."""
    if a.islower() and b.isupper():
        return True
    return a.isalnum() and b.isalnum() and a.isdigit() != b.isdigit()


def _levels(text: str) -> list[list[int]]:
    """Where `text` may be cut, best first: between words; also at camelCase and
    letter-digit changes; at any character outside a number."""
    banned = _inside_numbers(text)
    words = _word_cuts(text, banned)
    chars = [i for i in range(1, len(text)) if i not in banned]
    changes = {i for i in chars if _change(text[i - 1], text[i])}
    fine = sorted(changes.union(words))
    return [words, fine, chars]


class _Text:
    """`text` with the width of each of its slices (heads and tails kept, as the
    searches below ask for the same ones many times)."""

    def __init__(self, text: str, width: Width) -> None:
        self.text = text
        if width is _one:
            self.sums = [float(i) for i in range(len(text) + 1)]
        else:
            self.sums = [0.0, *itertools.accumulate(width(ch) for ch in text)]
        self._heads: dict[int, str] = {}
        self._tails: dict[int, str] = {}

    def head(self, i: int) -> str:
        """The first `i` characters, kept where they hold a letter or a digit."""
        if i not in self._heads:
            head = self.text[:i].rstrip()
            self._heads[i] = head if any(ch.isalnum() for ch in head) else ""
        return self._heads[i]

    def tail(self, i: int) -> str:
        if i not in self._tails:
            tail = self.text[i:].lstrip()
            self._tails[i] = tail if any(ch.isalnum() for ch in tail) else ""
        return self._tails[i]

    def w(self, a: int, b: int) -> float:
        return self.sums[b] - self.sums[a]

    def w_head(self, i: int) -> float:
        return self.w(0, len(self.head(i)))

    def w_tail(self, i: int) -> float:
        n = len(self.text)
        return self.w(n - len(self.tail(i)), n)

    def mid(self, a: int, b: int) -> tuple[str, float]:
        """text[a:b] without the blanks beside an ellipsis, and its width."""
        n = len(self.text)
        while a and a < b and self.text[a].isspace():
            a += 1
        while b < n and b > a and self.text[b - 1].isspace():
            b -= 1
        return self.text[a:b], self.w(a, b)


def shorten(
    text: str, room: float, keep: str = START, width: Width = _one, words: bool = False
) -> str:
    """`text` in at most `room` (measured by `width` per character), cut between words
    where that keeps at least half the room: its start (START), its end (END: a
    function's own name ends a qualified one) or both (BOTH: names that share a start
    and differ at the end). `words`: never inside a word; "" where no cut between
    words fits (a small mark goes without a label rather than with a piece of one)."""
    room += EPS
    t = _Text(text, width)
    n = len(text)
    if t.w(0, n) <= room:
        return text
    el = width(ELLIPSIS)
    if room < el:
        return ""
    budget = room - el
    if keep == BOTH and room < MIN_BOTH * width("a"):
        keep = START
    banned = _inside_numbers(text)
    between = _word_cuts(text, banned)
    got = _best(t, between, budget, keep)
    if got is not None and got[0] * 2 >= budget:  # between words, keeping half the room
        return got[1]
    _, fine, chars = _levels(text)
    found = [x for x in (got, _best(t, fine, budget, keep)) if x is not None]
    for x in found:
        if x[0] * 2 >= budget:
            return x[1]
    for x in sorted(found, reverse=True):  # else camelCase too, where it keeps a quarter
        if x[0] * 4 >= budget:
            return x[1]
    if words:
        return found[0][1] if found else ""
    got = _best(t, chars, budget, keep)  # else inside a word, never inside a number
    return got[1] if got else ELLIPSIS


def _best(t: _Text, cuts: Sequence[int], budget: float, keep: str) -> tuple[float, str] | None:
    """(width kept, shortened text) of the longest cut of `cuts` within `budget`."""
    n = len(t.text)
    if keep == START:  # heads grow with the cut: the last that fits, blanks stripped
        last = bisect.bisect_right([t.sums[i] for i in cuts], budget) + 2  # blanks stripped
        for i in reversed(cuts[:last]):
            if t.head(i) and t.w_head(i) <= budget:
                return t.w_head(i), t.head(i) + ELLIPSIS
        return None
    if keep == END:
        for i in cuts:
            if t.tail(i) and t.w_tail(i) <= budget:
                return t.w_tail(i), ELLIPSIS + t.tail(i)
        return None
    tails = [*cuts, n]
    # the width of each tail, falling as the cut moves right (negated: rising)
    rising = [t.sums[i] - t.sums[n] for i in tails]
    best: tuple[float, float, str] | None = None
    for h in [0, *cuts]:
        left = budget - t.w_head(h)
        if left < 0:
            break
        # the first tail cut at or after h whose tail fits in what the head leaves
        j = max(bisect.bisect_left(tails, h), bisect.bisect_left(rising, -left - EPS))
        while j < len(tails) and not (t.tail(tails[j]) or tails[j] == n):
            j += 1
        if j == len(tails):
            continue
        tail = t.tail(tails[j])
        kept = t.w_head(h) + t.w_tail(tails[j])
        if kept == 0:
            continue
        rank = (kept, -abs(t.w_head(h) - t.w_tail(tails[j])))
        if best is None or rank > best[:2]:
            best = (*rank, t.head(h) + ELLIPSIS + tail)
    return (best[0], best[2]) if best else None


def distinct(
    texts: Sequence[str],
    room: float,
    keep: str = BOTH,
    width: Width | None = None,
    short: Callable[[str], str] | None = None,
) -> list[str]:
    """Each of `texts` shortened (`short`, else shorten with `keep`); texts that would
    read alike are shown where they differ instead: their start where it fits, then
    the part that differs with as much of its words around it as fits
    (`[section…debug_str (compressed)]`, `…debug_info (compressed)]`)."""
    room += EPS
    width = width or _one
    make = short or (lambda x: shorten(x, room, keep, width))
    out = [make(x) for x in texts]
    alike: dict[str, set[str]] = {}
    for x, s in zip(texts, out, strict=True):
        alike.setdefault(s, set()).add(x)
    index = _Index(texts)
    for k, x in enumerate(texts):
        group = alike[out[k]]
        if out[k] == x or len(group) > MAX_APART:  # a crowd: the search would take long
            continue
        if len(group) > 1 or index.ambiguous(out[k], x):
            out[k] = _apart(x, index, room, width) or out[k]
    return out


class _Index:
    """Texts by their starts and their ends, to find those a label could be quickly."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.starts = sorted(set(texts))
        self.ends = sorted(x[::-1] for x in self.starts)

    @staticmethod
    def _with(keys: list[str], start: str) -> list[str]:
        lo = bisect.bisect_left(keys, start)
        hi = bisect.bisect_left(keys, start + "\U0010ffff")
        return keys[lo:hi]

    def ambiguous(self, short: str, own: str) -> bool:
        """`short` could be another text than `own` (of the MAX_APART texts that share
        its start or its end, whichever fewer do)."""
        pieces = short.split(ELLIPSIS)
        starting = self._with(self.starts, pieces[0])
        ending = self._with(self.ends, pieces[-1][::-1])
        texts = starting if len(starting) <= len(ending) else [x[::-1] for x in ending]
        return any(x != own and could_be(short, x) for x in texts[: MAX_APART + 1])


def could_be(short: str, text: str) -> bool:
    """`short` could be `text` shortened: its pieces between `…` are in `text` in
    order, the first at its start and the last at its end unless `…` stands there."""
    pieces = short.split(ELLIPSIS)
    if not text.startswith(pieces[0]) or not text.endswith(pieces[-1]):
        return False
    at = len(pieces[0])
    for piece in pieces[1:-1]:
        at = text.find(piece, at)
        if at < 0:
            return False
        at += len(piece)
    return at <= len(text) - len(pieces[-1])


def _apart(text: str, index: _Index, room: float, width: Width) -> str | None:
    """`text` shortened to read as none of the other texts of `index`: `head…middle…`
    (either part may be left out) with as much kept as fits, cut between words where
    that can tell it apart."""
    t = _Text(text, width)
    n = len(text)
    el = width(ELLIPSIS)
    for cuts in _levels(text):
        found: list[tuple[float, int, int, str]] = []
        heads = [(h, t.head(h), t.w_head(h)) for h in cuts]
        heads = [(h, head, w) for h, head, w in heads if head]
        starts = [h for h, _, _ in heads]
        for a in [0, *cuts]:
            for b in [*(i for i in cuts if i > a), n]:
                mid, used = t.mid(a, b)
                used += (el if a else 0.0) + (el if b < n else 0.0)
                if used > room:
                    break  # longer ones neither
                if not any(ch.isalnum() for ch in mid):
                    continue
                tail = ELLIPSIS if b < n else ""
                found.append((used, b, 0, (ELLIPSIS if a else "") + mid + tail))
                if a:  # the start too, where it fits before the part kept
                    fit = [(head, w) for h, head, w in heads[: bisect.bisect_left(starts, a)]]
                    for head, w in [x for x in fit if x[1] + used <= room][-3:]:
                        found.append((used + w, b, len(head), head + ELLIPSIS + mid + tail))
        for *_, short in sorted(found, reverse=True):
            if not index.ambiguous(short, text):
                return short
    return None


# Where a title may break, best first: after a clause, after a list's comma or before
# a parenthesis, at any space, between words.
_PHRASES = (("; ", ": ", " - "), (", ", " ("), (" ",))


def lines(text: str, room: float, most: int, width: Width = _one) -> list[str]:
    """`text` in at most `most` lines of `room`, each broken at the best phrase
    boundary that keeps the line at least half full (a clause before a list's comma,
    a comma before any space); the last line shortened where the text goes on."""
    room += EPS
    t = _Text(text, width)
    out: list[str] = []
    start = 0
    n = len(text)
    while len(out) < most - 1 and t.w(start, n) > room:
        cut = _line_end(t, start, room)
        out.append(text[start:cut].rstrip())
        start = cut
        while start < n and text[start] == " ":
            start += 1
    out.append(shorten(text[start:].rstrip(), room, START, width))
    return out


def _line_end(t: _Text, start: int, room: float) -> int:
    """Where a line from `start` ends: after the best boundary that fits."""
    text = t.text
    fits = [i for i in range(start + 1, len(text)) if t.w(start, i) <= room]
    last = fits[-1] if fits else start + 1
    for marks in _PHRASES:
        ends = [i + len(m.rstrip()) for m in marks for i in _find(text, m, start, last)]
        good = [i for i in ends if i <= last and t.w(start, i) * 2 >= room]
        if good:
            return max(good)
    cuts = [i for i in _levels(text)[0] if start < i <= last]
    return cuts[-1] if cuts else last


def _find(text: str, mark: str, start: int, end: int) -> list[int]:
    out = []
    at = text.find(mark, start)
    while 0 <= at < end:
        out.append(at)
        at = text.find(mark, at + 1)
    return out
