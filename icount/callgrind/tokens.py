"""Numbers of callgrind cost lines, decoded in bulk with numpy.

A cost line is `positions... costs...`, whitespace-separated. Rather than split
hundreds of thousands of lines in Python, the whole file is one uint8 array: token
boundaries come from a whitespace mask, and every token's digits are read eight
at a time as one uint64 and folded into its value with word-wide arithmetic (SWAR).
A file of a few million lines costs a few dozen array passes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
U8 = npt.NDArray[np.uint8]
U64 = npt.NDArray[np.uint64]

DIGIT = np.full(256, 99, dtype=np.int64)  # 99: not a digit in any base used here
DIGIT[ord("0") : ord("9") + 1] = np.arange(10)
DIGIT[ord("a") : ord("f") + 1] = np.arange(10, 16)
DIGIT[ord("A") : ord("F") + 1] = np.arange(10, 16)

# Longest accepted number: 18 decimal digits (< 2**63), or 16 hex digits: addresses
# at or above 2**63 wrap to negative int64s, the same 64 bits, and differences
# between them stay right modulo 2**64.
MAX_DECIMAL_DIGITS = 18
_MAX_DIGITS = {10: MAX_DECIMAL_DIGITS, 16: 16}


@dataclass(frozen=True)
class CostTokens:
    """The tokens of a run of cost lines (split_cost_lines)."""

    start: I64
    end: I64
    counts: I64  # tokens per line
    first: I64  # each line's first token
    odd: I64  # offsets of token bytes that are not digits, well-formed signs left out
    width: int  # tokens per line when every line has as many (--dump-instr files), else 0

    def column(self, c: int) -> slice | I64:
        """Token c of every line (that has one): a strided slice when lines are alike."""
        if self.width:
            return slice(c, None, self.width)
        if int(self.counts.min(initial=c + 1)) > c:
            return self.first + c
        out: I64 = self.first[self.counts > c] + c
        return out


def split_cost_lines(arr: U8, line_ends: I64, selected: Mask, n_pos: int) -> CostTokens:
    """The tokens of the lines where `selected` is true (cost lines; `line_ends` are the
    lines' '\\n' offsets): their [start, end) byte spans, how many each line has, and
    of the first `n_pos` tokens (positions) the bytes that are neither digits nor the
    sign of a relative position.

    Every such byte (a hex address's, or a bad one) is `odd`: a token without one is
    1-18 digits once its length is checked, or a well-formed `+n`, `-n` or `*`. On
    files of line numbers or relative addresses nearly every chunk has none.
    """
    ts, te, odd_mask = _split(arr, line_ends, selected)
    # A cost line starts with a token (its first byte is a digit, a sign or '*'), so
    # its first token is the one right after a '\n': one gather, 1.5x faster than
    # searching every line's end among the tokens (a 7 MB cc1plus profile).
    line_start = np.empty(len(ts), dtype=bool)
    if len(ts):
        line_start[0] = True
        np.equal(arr[ts[1:] - 1], 10, out=line_start[1:])
    first = np.flatnonzero(line_start)
    if len(first) == np.count_nonzero(selected):
        counts = np.diff(first, append=len(ts))
    else:  # a selected line does not start with a token: count by line ends
        counts = _counts(ts, line_ends, selected)
        first = np.cumsum(counts) - counts
    width = int(counts[0]) if len(counts) and counts.min() == counts.max() else 0
    tok = CostTokens(ts, te, counts, first, np.zeros(0, dtype=np.int64), width)
    for c in range(n_pos):
        column = tok.column(c)
        at = ts[column]
        length = te[column] - at
        byte = arr[at]
        star = byte == ord("*")
        star &= length == 1
        sign = (byte == ord("+")) | (byte == ord("-"))
        sign &= length >= 2
        sign |= star
        odd_mask[at[sign]] = False
    if odd_mask.any():
        tok = CostTokens(ts, te, counts, first, np.flatnonzero(odd_mask), width)
    return tok


def _split(arr: U8, line_ends: I64, selected: Mask) -> tuple[I64, I64, Mask]:
    """Token spans of the selected lines, and the mask of their bytes that are not
    digits."""
    lengths = np.diff(line_ends, prepend=-1)
    body = np.repeat(selected, lengths)
    # 9..13 and ' ': what bytes.split() splits on. In place where possible: fresh
    # file-sized arrays cost page faults as much as the arithmetic.
    ws = np.subtract(arr, np.uint8(9)).view(np.bool_)
    np.less_equal(ws.view(np.uint8), 4, out=ws)
    ws |= arr == 32
    np.greater(body, ws, out=body)  # body and not ws
    odd_bytes = np.subtract(arr, np.uint8(48))
    odd_mask = np.greater(odd_bytes, 9, out=odd_bytes.view(np.bool_))
    odd_mask &= body
    # Token bytes come in runs: where the mask changes a token starts, then ends
    # (every run closes: the data ends with '\n').
    change = ws  # reused
    change[0] = body[0]
    np.not_equal(body[1:], body[:-1], out=change[1:])
    bounds = np.flatnonzero(change)
    return bounds[0::2], bounds[1::2], odd_mask


def _counts(ts: I64, line_ends: I64, selected: Mask) -> I64:
    """Tokens per selected line: those that start before each line's end (a search
    of sorted values among sorted values, cheaper than looking at every token)."""
    counts: I64 = np.diff(np.searchsorted(ts, line_ends[selected]), prepend=0)
    return counts


def unsigned(
    arr: U8, start: I64, end: I64, base: int | npt.NDArray[np.int64] = 10
) -> tuple[I64, Mask]:
    """Values of the digit strings arr[start:end] and whether each one is valid.

    `base` is 10, 16 or one of them per token. Digits are read eight at a time: the
    eight bytes at a token's start are one uint64 (a single gather), checked and
    folded into a number with a few word-wide operations (SWAR); only the rare
    tokens longer than eight digits take a second or third word.
    """
    length = end - start
    if np.ndim(base) == 0:
        hexa = int(base) == 16
        limit = _MAX_DIGITS[16 if hexa else 10]
        ok = (length > 0) & (length <= limit)
        # Invalid lengths are read as something in range; `ok` already refuses them.
        value, valid = _parse(arr, start, np.minimum(np.maximum(length, 1), limit), hexa)
        out: I64 = value.view(np.int64)
        return out, ok & valid
    # Mixed: hex tokens are few (absolute addresses), so read all as decimal first.
    out, ok = unsigned(arr, start, end, 10)
    hexa_at = np.flatnonzero(np.asarray(base) == 16)
    if len(hexa_at):
        out[hexa_at], ok[hexa_at] = unsigned(arr, start[hexa_at], end[hexa_at], 16)
    return out, ok


def _bytes8(byte: int) -> np.uint64:
    return np.uint64(int.from_bytes(bytes([byte]) * 8, "little"))


_U = np.uint64
_X01, _X06, _X0F, _X20, _X30, _X60, _X76, _X79, _X7F, _X80, _XF0 = (
    _bytes8(b) for b in (0x01, 0x06, 0x0F, 0x20, 0x30, 0x60, 0x76, 0x79, 0x7F, 0x80, 0xF0)
)


def words8(arr: U8, start: I64) -> U64:
    """The 8 bytes from each start as a little-endian uint64 (zero bytes past the end)."""
    if len(arr) < 8:
        arr = np.concatenate([arr, np.zeros(8 - len(arr), dtype=np.uint8)])
    last = len(arr) - 8
    # Every byte offset as the start of a uint64: an unaligned, overlapping view.
    view = np.ndarray(shape=(last + 1,), dtype="<u8", buffer=arr, strides=(1,))
    if not len(start) or int(start.max()) <= last:  # one reduction: the usual case
        out: U64 = view[start]
        return out
    late = np.flatnonzero(start > last)
    out = view[np.minimum(start, last)]
    out[late] >>= (start[late] - last).astype(np.uint64) * _U(8)
    return out


def first_byte_below(w: U64, limit: int) -> I64:
    """Index (0-7) of the first byte of each word below `limit` (at most 128), 8 if none.

    The classic "has a byte less than n" test: (w - n*0x01..) & ~w & 0x80.. flags
    bytes below n. Borrows can flag bytes after the first one, never before it,
    so the lowest flag is exact.
    """
    t = w - _bytes8(limit)
    t &= ~w
    t &= _X80
    t &= ~t + _U(1)  # the lowest flag alone: 2**(8i + 7)
    exponent = np.frexp(t.astype(np.float64))[1]  # 8i + 8 (powers of two are exact)
    index: I64 = np.where(t == 0, 8, (exponent.astype(np.int64) - 8) >> 3)
    return index


def first_byte_equal(w: U64, byte: int) -> I64:
    """Index (0-7) of the first byte of each word equal to `byte`, 8 if none."""
    return first_byte_below(w ^ _bytes8(byte), 1)


def decimal_words(w: U64, length: I64) -> tuple[I64, Mask]:
    """The numbers written in the first `length` (1-8) bytes of each word, and
    whether those bytes are all digits."""
    value, ok = _decimal8(w, length.view(np.uint64))
    out: I64 = value.view(np.int64)
    return out, ok


def _align(w: U64, r: U64) -> U64:
    """The first r bytes (1..8) of each word moved to its top, '0's below them:
    r digits become the 8-digit string with leading zeros."""
    # In place, here and in _decimal8: each fresh array of a few MB costs page
    # faults comparable to the arithmetic on it.
    shift = np.subtract(_U(8), r)
    shift <<= _U(3)
    out = np.left_shift(w, shift)
    np.left_shift(r, _U(3), out=shift)
    np.right_shift(_X30, shift, out=shift)
    out |= shift
    return out


def _decimal8(w: U64, r: U64) -> tuple[U64, Mask]:
    v = _align(w, r)
    # Each byte 0x30..0x39: high nibble 3, low nibble + 6 does not carry.
    t = np.bitwise_and(v, _XF0)
    ok = t == _X30
    v &= _X0F
    np.add(v, _X06, out=t)
    t &= _XF0
    ok &= t == 0
    return _fold8(v), ok


def _digits8(w: U64, length: I64) -> U64:
    """_decimal8 for bytes already known to be digits: their low nibbles are the
    digits, and the bytes shifted in below them are zeros. Tokens longer than 8 read
    as 0 (a shift by 64 or more gives 0 in numpy)."""
    shift = np.multiply(length, -8).view(np.uint64)
    shift += _U(64)
    v = np.left_shift(w, shift)
    v &= _X0F
    return _fold8(v)


def _fold8(v: U64) -> U64:
    """Eight digit values, one per byte (first digit lowest), into their number, in
    place."""
    # Pairs, then quads, then all eight digits, each step one multiply that adds a
    # lane to its neighbour times 10, 100 or 10**4 (D. Lemire's eight-digit parse):
    # 8 passes in place: 2.2x faster than 11 through a scratch array (1.6M words).
    v *= _U(10 * 256 + 1)
    v >>= _U(8)
    v &= _U(0x00FF00FF00FF00FF)
    v *= _U(100 * 65536 + 1)
    v >>= _U(16)
    v &= _U(0x0000FFFF0000FFFF)
    v *= _U(10000 * (1 << 32) + 1)
    v >>= _U(32)
    return v


def _hex8(w: U64, r: U64) -> tuple[U64, Mask]:
    v = _align(w, r)
    # Per byte (all below 0x80): a digit is v ^ 0x30 < 10; a letter is
    # (v | 0x20) ^ 0x60 in 1..6. Adding to a byte below 0x80 sets its top bit
    # without carrying into the next byte.
    not_digit = ((v ^ _X30) + _X76) & _X80
    low = (v | _X20) ^ _X60
    letter = (low + _X7F) & ~(low + _X79) & _X80
    ok = ((v & _X80) == 0) & (((not_digit ^ _X80) | letter) == _X80)
    nib = (v & _X0F) + _U(9) * ((v >> _U(6)) & _X01)  # letters have bit 6 set
    x = ((nib & _U(0x0F000F000F000F00)) >> _U(8)) | ((nib & _U(0x000F000F000F000F)) << _U(4))
    x = ((x & _U(0x00FF000000FF0000)) >> _U(16)) | ((x & _U(0x000000FF000000FF)) << _U(8))
    x = ((x & _U(0x0000FFFF00000000)) >> _U(32)) | ((x & _U(0x000000000000FFFF)) << _U(16))
    return x, ok


def _parse(arr: U8, start: I64, length: I64, hexa: bool) -> tuple[U64, Mask]:
    """Tokens of 1..18 decimal or 1..16 hex digits: a first word of 1..8 digits,
    then whole words of 8 (uint64 arithmetic wraps like the int64 Horner did)."""
    parse = _hex8 if hexa else _decimal8
    if not len(length) or int(length.max()) <= 8:
        return parse(words8(arr, start), length.astype(np.uint64))
    chunks = (length + 7) >> 3
    first = (length - ((chunks - 1) << 3)).astype(np.uint64)
    value, ok = parse(words8(arr, start), first)
    scale = _U(1 << 32) if hexa else _U(10**8)
    at = start + first.astype(np.int64)
    for j in range(1, int(chunks.max())):
        sel = np.flatnonzero(chunks > j)
        more, good = parse(words8(arr, at[sel]), np.full(len(sel), 8, dtype=np.uint64))
        value[sel] = value[sel] * scale + more
        ok[sel] &= good
        at[sel] += 8
    return value, ok


def digit_values(arr: U8, start: I64, length: I64) -> I64:
    """Values of tokens of 1 to 18 bytes already known to be digits (split_cost_lines'
    `odd` found none in them): costs without the checks."""
    value = _digits8(words8(arr, start), length)
    if len(length) and int(length.max()) > 8:
        # The last 8 digits are one word, those before them the same problem again
        # (twice at most: 18 digits); unsigned() would check them all again, in
        # several times as many array passes, once per chunk with a long cost.
        longer = np.flatnonzero(length > 8)
        s, n = start[longer], length[longer]
        high = digit_values(arr, s, n - 8).view(np.uint64)
        high *= _U(10**8)
        high += _digits8(words8(arr, s + n - 8), np.full(len(longer), 8, dtype=np.int64))
        value[longer] = high
    out: I64 = value.view(np.int64)
    return out


def costs(arr: U8, start: I64, end: I64) -> tuple[I64, Mask]:
    """Cost tokens: plain decimal numbers. The same as `unsigned(..., 10)`, faster:
    nearly all costs have up to 8 digits, one word; longer ones are read again."""
    length = end - start
    value, ok = _decimal8(words8(arr, start), np.minimum(length, 8).view(np.uint64))
    ok &= length > 0
    longer = np.flatnonzero(length > 8)
    if len(longer):
        value[longer], ok[longer] = unsigned(arr, start[longer], end[longer], 10)
    out: I64 = value.view(np.int64)
    return out, ok


def positions(arr: U8, start: I64, end: I64) -> tuple[I64, Mask, Mask]:
    """Position tokens: (value or signed difference, is_absolute, valid).

    Absolute: decimal or `0x` hex. Relative: `+n`, `-n` (decimal) or `*` (same).
    """
    # In place where it is cheap: these arrays have one entry per cost line.
    length = end - start
    word = words8(arr, start)
    byte = word & _U(0xFF)
    star = byte == ord("*")
    star &= length == 1
    minus = byte == ord("-")
    relative = byte == ord("+")
    relative |= minus
    hexa = byte == ord("0")
    hexa &= length > 2
    np.right_shift(word, _U(8), out=byte)
    byte &= _U(0xDF)  # the second byte, upper-cased
    hexa &= byte == ord("X")
    skip = relative.astype(np.int64)
    skip += hexa
    skip += hexa
    # Nearly every token fits in its first word: its digits are that word, shifted.
    short = length <= 8
    digits = np.subtract(length, skip, out=length)
    short &= digits >= 1
    size = np.clip(digits, 1, 8).view(np.uint64)
    np.left_shift(skip.view(np.uint64), _U(3), out=byte)
    shifted = np.right_shift(word, byte, out=word)
    parsed, ok = _decimal8(shifted, size)
    value = parsed.view(np.int64)
    ok &= short
    hexa_at = np.flatnonzero(hexa & short)
    if len(hexa_at):
        parsed, ok[hexa_at] = _hex8(shifted[hexa_at], size[hexa_at])
        value[hexa_at] = parsed.view(np.int64)
    rest = np.flatnonzero(~short)
    if len(rest):
        base = np.where(hexa[rest], 16, 10)
        value[rest], ok[rest] = unsigned(arr, start[rest] + skip[rest], end[rest], base)
    np.negative(value, out=value, where=minus)
    np.copyto(value, 0, where=star)
    ok |= star
    star |= relative
    absolute = np.logical_not(star, out=star)
    return value, absolute, ok


def resolve(value: I64, absolute: Mask) -> I64:
    """Absolute positions of one column: each relative entry adds to the one before."""
    delta = np.where(absolute, 0, value)
    running = np.cumsum(delta)
    idx = np.where(absolute, np.arange(len(value)), -1)
    last_abs = np.maximum.accumulate(idx) if len(idx) else idx
    has = last_abs >= 0
    base = np.where(has, value[np.maximum(last_abs, 0)], 0)
    since = running - np.where(has, running[np.maximum(last_abs, 0)], 0)
    out: I64 = base + since
    return out
