"""The state machine of callgrind's specification lines, run over whole arrays.

What `fn=`, `calls=`, `cfn=`... mean depends on the lines before them (the current
object, file and function; the call target set up since the previous call). For a
file written with name compression (callgrind's default) every such line carries a
number, `fn=(12)`, so that state is a set of "last value set before this line"
lookups: forward fills with numpy. Only name definitions (`fn=(12) main`, one per
distinct name) and header lines go through Python.

This path is optimistic: on anything unusual (uncompressed names, an id redefined to
another name, a reference before its definition, a malformed line) it returns None
and the parser's line-by-line loop, which reports errors precisely, runs instead.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from icount.callgrind import tokens
from icount.callgrind.model import Function

I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

# Line kinds, by their key.
CALLS, CFN, COB, CFI, FN, FI, FL, OB, JFI, JFN, JUMP, OTHER = range(12)
_KEYS: list[tuple[bytes, int]] = [
    (b"calls=", CALLS),
    (b"cfn=", CFN),
    (b"cob=", COB),
    (b"cfi=", CFI),
    (b"cfl=", CFI),
    (b"jump=", JUMP),
    (b"jcnd=", JUMP),
    (b"jfi=", JFI),
    (b"jfn=", JFN),
    (b"fn=", FN),
    (b"fi=", FI),
    (b"fe=", FI),
    (b"fl=", FL),
    (b"ob=", OB),
]
_NAME_KIND = {CFN: 0, FN: 0, JFN: 0, COB: 1, OB: 1, CFI: 2, FI: 2, FL: 2, JFI: 2}
_IS_NAME = np.array([k in _NAME_KIND for k in range(OTHER + 1)])
_CARRIES = np.array([k in (FN, FL, FI, OB) for k in range(OTHER + 1)])  # state lines
_KEY_LEN = np.zeros(OTHER + 1, dtype=np.int64)
for _key, _code in _KEYS:
    _KEY_LEN[_code] = len(_key) if _code != JUMP else 0
_MAX_IDS = 1 << 20  # larger compression ids: the line loop (lookup tables stay small)


@dataclass(frozen=True)
class SpecResult:
    """What the parser's Python loop would have collected, as arrays."""

    functions: list[Function]  # in first-seen order
    fn_lines: I64  # file line of each fn= ...
    fn_ids: I64  # ... and the function it names
    call_lines: I64  # file line of each call's cost line
    call_edges: I64
    edges: I64  # (caller, callee) rows in first-seen order
    edge_counts: I64


# Every key is known by its first three bytes, and those by a perfect hash: a multiply
# and a shift give each its own slot of 32 (a search among the keys cost 8x more).
# The whole key is then compared, so any other line lands on a slot and fails.
_HASH_MUL = np.uint64(0xEC148CB48E73CA47)
_HASH_SHIFT = np.uint64(64 - 5)
_SLOT_CODE = np.full(32, OTHER, dtype=np.int64)
_SLOT_WORD = np.zeros(32, dtype=np.uint64)
_SLOT_MASK = np.zeros(32, dtype=np.uint64)
for _key, _code in _KEYS:
    _slot = (int.from_bytes(_key[:3], "little") * int(_HASH_MUL) % (1 << 64)) >> int(_HASH_SHIFT)
    assert _SLOT_CODE[_slot] == OTHER, "the hash must keep the keys apart"
    _SLOT_CODE[_slot] = _code
    _SLOT_WORD[_slot] = int.from_bytes(_key, "little")
    _SLOT_MASK[_slot] = (1 << (8 * len(_key))) - 1


def classify(arr: tokens.U8, starts: I64, ends: I64) -> I64:
    """The kind of each line (OTHER: a header or something else for Python)."""
    # The first eight bytes of each line as one little-endian word. Bytes past a
    # short line's end belong to the next line, but its '\n' comes first and no key
    # holds one; keys end with their only '=', so none is a prefix of another.
    word = tokens.words8(arr, starts)
    slot = word & np.uint64(0xFFFFFF)
    slot *= _HASH_MUL
    slot >>= _HASH_SHIFT
    match = (word & _SLOT_MASK[slot]) == _SLOT_WORD[slot]
    kind: I64 = np.where(match, _SLOT_CODE[slot], OTHER)
    return kind


def _last(mask: Mask, at: I64, reset: Mask | None = None) -> I64:
    """For each line in `at`, the last line at or before it where `mask` holds
    (-1: none, or a `reset` line came after it)."""
    rows = np.flatnonzero(mask if reset is None else (mask | reset))
    if not len(rows):
        return np.full(len(at), -1, dtype=np.int64)
    k = np.searchsorted(rows, at, side="right") - 1
    found = np.where(k >= 0, rows[np.maximum(k, 0)], -1)
    if reset is not None:
        found[reset[np.maximum(found, 0)] & (found >= 0)] = -1
    return found


@dataclass(frozen=True)
class _State:
    """What the lines before each fn= and calls= set, as the line loop keeps it."""

    fl_of_fn: I64  # fl= in effect at each fn= (a name code, -1: none)
    ob_of_fn: I64  # ob= in effect at each fn=
    file: I64  # the current source file at each call: fl=, fi=/fe=, or its fn='s fl=
    ob: I64  # ob= in effect at each call
    fn_index: I64  # the fn= line (its index among fn= lines) of each call, -1: none


def _state(kind: I64, line_name: I64, part_start: Mask, calls: I64) -> _State:
    """The state carried by fn=, fl=, fi=/fe= and ob= lines (and part starts), at each
    fn= and calls= line.

    These lines are few (a profile of 88,000 calls has 14,000): the state is carried
    along them with forward fills, and each call finds its own with one search.
    """
    rows = np.flatnonzero(_CARRIES[kind] | part_start)
    k = kind[rows]
    name = line_name[rows]
    at = np.arange(len(rows))

    def carried(mask: Mask, value: I64) -> I64:
        """value at the last of these rows, at or before each, where mask holds."""
        last = np.where(mask, at, -1)
        np.maximum.accumulate(last, out=last)
        out: I64 = np.where(last >= 0, value[np.maximum(last, 0)], -1)
        return out

    fl = carried(k == FL, name)
    ob = carried(k == OB, name)
    is_fn = k == FN
    # The current file: the last fl=, fi= or fe=, or fn= (back to its fl=).
    file = carried((k == FL) | (k == FI) | is_fn, np.where(is_fn, fl, name))
    # The current function (its fn= number), forgotten at a part's start.
    fn_number = np.cumsum(is_fn) - 1
    fn = carried(is_fn | part_start[rows], np.where(is_fn, fn_number, -1))
    seg = np.searchsorted(rows, calls, side="right") - 1
    none = np.full(len(calls), -1, dtype=np.int64)

    def at_calls(value: I64) -> I64:
        out: I64 = np.where(seg >= 0, value[np.maximum(seg, 0)], none)
        return out

    return _State(fl[is_fn], ob[is_fn], at_calls(file), at_calls(ob), at_calls(fn))


def _call_targets(
    kind: I64, line_name: I64, part_start: Mask, calls: I64, cur_file: I64, cur_ob: I64
) -> tuple[I64, I64, I64] | None:
    """(function, file, object) name codes each call names: cfn=, and cfi=/cob= since
    the previous call, else the current file and object; None: a cfn= missing."""
    before = np.concatenate([[-1], calls[:-1]])
    if len(calls) and calls[0] >= 3 and (kind[calls - 1] == CFN).all():
        # Callgrind writes `[cob=] [cfi=] cfn= calls=`: the target's lines are the
        # two before cfn=, which is checked by finding every cfi=/cob= line there.
        k2, k3 = kind[calls - 2], kind[calls - 3]
        cfi_at = np.where(k2 == CFI, calls - 2, np.where((k3 == CFI) & (k2 == COB), calls - 3, -1))
        cob_at = np.where(k2 == COB, calls - 2, np.where((k3 == COB) & (k2 == CFI), calls - 3, -1))
        chain = (k2 == CFI) | (k2 == COB)
        seen = int(chain.sum()) + int((chain & ((k3 == CFI) | (k3 == COB))).sum())
        if seen == int(((kind == CFI) | (kind == COB)).sum()):
            callee_fn: I64 = line_name[calls - 1]
            fl: I64 = np.where(cfi_at >= 0, line_name[np.maximum(cfi_at, 0)], cur_file)
            ob: I64 = np.where(cob_at >= 0, line_name[np.maximum(cob_at, 0)], cur_ob)
            return callee_fn, fl, ob
    # Anything else: the last such line before each call, wherever it is.
    cfi_at = _last(kind == CFI, calls, part_start)
    cob_at = _last(kind == COB, calls, part_start)
    cfn_at = _last(kind == CFN, calls, part_start)

    def name_at(rows: I64) -> I64:
        out: I64 = np.where(rows >= 0, line_name[np.maximum(rows, 0)], -1)
        return out

    fl = np.where(cfi_at > before, name_at(cfi_at), cur_file)
    ob = np.where(cob_at > before, name_at(cob_at), cur_ob)
    return name_at(cfn_at), fl, ob


def _count_digits(arr: tokens.U8, start: I64, end: I64) -> I64:
    """How many digits each [start, end) begins with (at most 19: more is refused)."""
    stop = start.copy()
    running = np.ones(len(start), dtype=bool)  # still inside the number
    for _ in range(19):
        running &= (stop < end) & (tokens.DIGIT[arr[np.minimum(stop, len(arr) - 1)]] < 10)
        if not running.any():
            break
        stop += running
    out: I64 = stop - start
    return out


def _first_seen_ids(keys: I64, at: I64 | None = None) -> tuple[I64, I64]:
    """Numbers for `keys` in order of first appearance: (number of each key, index of
    one key of each number). `at`: where each key appears (in file order; not
    necessarily increasing along `keys`), its index if None.

    The sort is stable (timsort): keys come in long runs (a function's calls, the
    fn= lines in file order), which it merges 1.5-2x faster than the default
    quicksort sorts them on a cc1plus profile; and equal keys keep their order, so
    without `at` a group's first entry is its first appearance. With `at`, that is
    the smallest `at` among its equals.
    """
    if not len(keys):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    new = np.empty(len(keys), dtype=bool)
    new[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    group_start = np.flatnonzero(new)
    if at is None:
        first_at = order[group_start]
    else:
        first_at = np.minimum.reduceat(at[order], group_start)
    by_first = np.argsort(first_at, kind="stable")
    rank = np.empty(len(first_at), dtype=np.int64)
    rank[by_first] = np.arange(len(first_at))
    ids = np.empty(len(keys), dtype=np.int64)
    ids[order] = rank[np.cumsum(new) - 1]
    one: I64 = order[group_start][by_first].astype(np.int64)
    return ids, one


def _pack(columns: list[I64], bits: int) -> I64:
    """Rows of small non-negative ints as one int64 each (for 1-D np.unique)."""
    packed = np.zeros(len(columns[0]), dtype=np.int64)
    for c in columns:
        packed = (packed << bits) | c
    return packed


def run(
    data: bytes,
    arr: tokens.U8,
    line_idx: I64,
    starts: I64,
    ends: I64,
    kind: I64,
    part_start: Mask,
) -> SpecResult | None:
    """State of every specification line. `part_start` marks the lines (among these)
    where a new part begins: the current function and call target are forgotten."""
    n = len(line_idx)
    is_name = _IS_NAME[kind]
    key_len = _KEY_LEN[kind]
    # -- compressed names: `(id)` or `(id) name` -----------------------------
    vstart = starts + key_len
    last = len(arr) - 1
    names = np.flatnonzero(is_name)
    if len(names) == 0:
        return None
    vs = vstart[names]
    ve = ends[names]
    if not (arr[np.minimum(vs, last)] == ord("(")).all() or not (ve > vs + 2).all():
        return None
    # The id's digits and its ')' lie in the word after '(' (ids below 10**7; larger
    # ones are beyond _MAX_IDS anyway). Digits are checked, so a ')' found past the
    # line's end (after its '\n') is refused with them.
    word = tokens.words8(arr, vs + 1)
    digits = tokens.first_byte_equal(word, ord(")"))
    ident, ok = tokens.decimal_words(word, np.minimum(digits, 7))
    if not (ok.all() and (digits >= 1).all() and (digits <= 7).all()):
        return None
    close = vs + 1 + digits
    defines = close + 1 < ve
    name_kind = np.array([_NAME_KIND.get(int(k), -1) for k in range(OTHER + 1)])[kind[names]]
    if ident.max() >= _MAX_IDS:
        return None
    # Per kind, id -> canonical code (one per distinct (kind, name): callgrind numbers
    # function *nodes*, so one name can have several ids, and the line loop keys
    # functions by name) and id -> position of its first definition.
    size = int(ident.max()) + 1
    # Each (kind, id) as one number: flat lookups are cheaper than 2-D ones.
    slot = name_kind * size + ident
    rows = np.flatnonzero(defines)
    if len(rows) and not np.isin(arr[close[rows] + 1], (ord(" "), ord("\t"))).all():
        return None
    row_kind = name_kind[rows]
    _, first_at, again_of = np.unique(slot[rows], True, True)
    spans = zip((close[rows] + 1).tolist(), ve[rows].tolist(), strict=True)
    raw = [data[a:b].strip() for a, b in spans]
    if not all(raw):
        return None
    # Each part of a combined file defines its names again: they must be the same
    # (an id reused for another name is left to the line loop).
    first_of = first_at[again_of.reshape(-1)]
    for j in np.flatnonzero(first_of != np.arange(len(rows))).tolist():
        if raw[j] != raw[first_of[j]]:
            return None
    # One decode of all the names: a line holds no '\n' to split them at, and an
    # undecodable byte is replaced the same way in one string or in many.
    unique_raw = [raw[j] for j in first_at.tolist()]
    texts = b"\n".join(unique_raw).decode("utf-8", "replace").split("\n")
    strings: list[str] = []
    codes = np.zeros(len(first_at), dtype=np.int64)
    for k in range(3):
        of_kind = np.flatnonzero(row_kind[first_at] == k)
        code_by_name: dict[str, int] = {}
        local = [code_by_name.setdefault(texts[j], len(code_by_name)) for j in of_kind.tolist()]
        codes[of_kind] = np.array(local, dtype=np.int64) + len(strings)
        strings.extend(code_by_name)
    code_of = np.full(3 * size, -1, dtype=np.int64)
    defined_at = np.full(3 * size, len(names), dtype=np.int64)
    defined = rows[first_at]
    code_of[slot[defined]] = codes
    defined_at[slot[defined]] = defined
    # Every use must come after the name's definition.
    if (defined_at[slot] > np.arange(len(names))).any():
        return None
    line_name = np.full(n, -1, dtype=np.int64)
    line_name[names] = code_of[slot]
    # -- state at each fn= and calls= line: the last line that set it -------
    fn_rows = np.flatnonzero(kind == FN)
    calls = np.flatnonzero(kind == CALLS)
    state = _state(kind, line_name, part_start, calls)
    targets = _call_targets(kind, line_name, part_start, calls, state.file, state.ob)
    if targets is None:
        return None
    callee_fn, callee_fl, callee_ob = targets
    # (name, file, object) of every fn= line, then of every call's target.
    key_name = np.concatenate([line_name[fn_rows], callee_fn])
    key_file = np.concatenate([state.fl_of_fn, callee_fl])
    key_ob = np.concatenate([state.ob_of_fn, callee_ob])
    if not len(key_name) or len(strings) >= 1 << 21:
        return None
    if min(key_name.min(), key_file.min(), key_ob.min()) < 0:
        return None  # calls= without cfn=, fn= before fl=/ob=: the loop says which
    # Number functions in the order the file first names them, as the loop does.
    packed = _pack([key_name, key_file, key_ob], 21)
    fid, firsts = _first_seen_ids(packed, np.concatenate([fn_rows, calls]))
    fn_of_row = fid[: len(fn_rows)]
    callee = fid[len(fn_rows) :]
    # Current function at each call: the last fn=, forgotten at part starts.
    caller = np.where(state.fn_index >= 0, fn_of_row[np.maximum(state.fn_index, 0)], -1)
    if (caller < 0).any():
        return None
    # -- call counts: `calls=N target` -------------------------------------------
    cs = starts[calls] + 6
    # The count ends at the first blank (or the line's end): in its first word unless
    # it has 8 digits or more.
    word = tokens.words8(arr, cs)
    digits = tokens.first_byte_below(word, ord(" ") + 1)
    count, ok = tokens.decimal_words(word, np.clip(digits, 1, 8))
    ok &= digits >= 1
    longer = np.flatnonzero(digits == 8)
    if len(longer):
        digits[longer] = _count_digits(arr, cs[longer], ends[calls][longer])
        count[longer], ok[longer] = tokens.unsigned(arr, cs[longer], cs[longer] + digits[longer])
    count_end = cs + digits
    after = arr[np.minimum(count_end, last)]
    if not ok.all() or not ((count_end == ends[calls]) | (after == 32) | (after == 9)).all():
        return None
    if len(count) and int(count.max()) > ((1 << 63) - 1) // len(count):
        return None  # the sums could pass int64: the line loop checks them one by one
    if len(calls):
        edge_id, edge_first = _first_seen_ids(_pack([caller, callee], 31))
        edge_counts = np.zeros(len(edge_first), dtype=np.int64)
        np.add.at(edge_counts, edge_id, count)
    else:
        edge_id = np.zeros(0, dtype=np.int64)
        edge_first = np.zeros(0, dtype=np.int64)
        edge_counts = np.zeros(0, dtype=np.int64)
    # -- back to names ------------------------------------------------------------
    names, files, objects = (column[firsts].tolist() for column in (key_name, key_file, key_ob))
    name_of = strings.__getitem__
    # tuple.__new__ through map: no Python-level call per function (Function._make
    # is one, ~0.3 us each)
    functions: list[Function] = list(
        map(
            tuple.__new__,
            itertools.repeat(Function),
            zip(map(name_of, names), map(name_of, files), map(name_of, objects), strict=True),
        )
    )
    return SpecResult(
        functions=functions,
        fn_lines=line_idx[fn_rows],
        fn_ids=fn_of_row,
        call_lines=line_idx[calls] + 1,
        call_edges=edge_id,
        edges=np.stack([caller[edge_first], callee[edge_first]], axis=1).reshape(-1, 2),
        edge_counts=edge_counts,
    )
