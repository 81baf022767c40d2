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

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from icount.callgrind import tokens

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
_KEY_LEN = np.zeros(OTHER + 1, dtype=np.int64)
for _key, _code in _KEYS:
    _KEY_LEN[_code] = len(_key) if _code != JUMP else 0
_MAX_ID_DIGITS = 9
_MAX_IDS = 1 << 20  # larger compression ids: the line loop (lookup tables stay small)


@dataclass(frozen=True)
class SpecResult:
    """What the parser's Python loop would have collected, as arrays."""

    functions: list[tuple[str, str, str]]  # (name, file, object) in first-seen order
    fn_lines: I64  # file line of each fn= ...
    fn_ids: I64  # ... and the function it names
    call_lines: I64  # file line of each call's cost line
    call_edges: I64
    edges: I64  # (caller, callee) rows in first-seen order
    edge_counts: I64


def classify(arr: tokens.U8, starts: I64, ends: I64) -> I64:
    """The kind of each line (OTHER: a header or something else for Python)."""
    # The first eight bytes of each line as one little-endian word. Bytes past a
    # short line's end belong to the next line, but its '\n' comes first and no key
    # holds one; keys end with their only '=', so none is a prefix of another.
    word = tokens.words8(arr, starts)
    kind = np.full(len(starts), OTHER, dtype=np.int64)
    for size in sorted({len(key) for key, _ in _KEYS}):
        head = word & np.uint64((1 << (8 * size)) - 1)
        for key, code in _KEYS:
            if len(key) == size:
                kind[head == np.uint64(int.from_bytes(key, "little"))] = code
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


def _first_seen_ids(keys: I64) -> tuple[I64, I64]:
    """Numbers for `keys` in order of first appearance: (number of each, first index)."""
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[inverse.reshape(-1)].astype(np.int64), first[order].astype(np.int64)


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
    # The first ')' after each '(' within the longest id: eight bytes at a time.
    close = np.full(len(vs), -1, dtype=np.int64)
    for word_at in (0, 8):
        pending = np.flatnonzero(close < 0)
        if not len(pending):
            break
        word = tokens.words8(arr, vs[pending] + word_at)
        found = np.full(len(pending), -1, dtype=np.int64)
        for d in range(7, -1, -1):  # downwards: the first ')' wins
            if 2 <= word_at + d <= _MAX_ID_DIGITS + 1:
                byte = (word >> np.uint64(8 * d)) & np.uint64(0xFF)
                found[byte == ord(")")] = word_at + d
        close[pending] = np.where(found >= 0, vs[pending] + found, -1)
    if ((close < 0) | (close >= ve)).any():
        return None
    ident, ok = tokens.unsigned(arr, vs + 1, close, 10)
    if not ok.all():
        return None
    defines = close + 1 < ve
    name_kind = np.array([_NAME_KIND.get(int(k), -1) for k in range(OTHER + 1)])[kind[names]]
    if ident.max() >= _MAX_IDS:
        return None
    # Per kind, id -> canonical code (one per distinct (kind, name): callgrind numbers
    # function *nodes*, so one name can have several ids, and the line loop keys
    # functions by name) and id -> position of its first definition.
    strings: list[str] = []
    canon: dict[tuple[int, str], int] = {}
    size = int(ident.max()) + 1
    code_of = np.full((3, size), -1, dtype=np.int64)
    defined_at = np.full((3, size), len(names), dtype=np.int64)
    tables: list[dict[int, str]] = [{}, {}, {}]
    rows = np.flatnonzero(defines)
    set_k: list[int] = []
    set_i: list[int] = []
    set_code: list[int] = []
    set_row: list[int] = []
    for j, k, i, a, b in zip(
        rows.tolist(),
        name_kind[rows].tolist(),
        ident[rows].tolist(),
        (close[rows] + 1).tolist(),
        ve[rows].tolist(),
        strict=True,
    ):
        text = data[a:b]
        name_bytes = text.strip()
        if text[:1] not in (b" ", b"\t") or not name_bytes:
            return None
        name = name_bytes.decode("utf-8", "replace")
        known = tables[k].setdefault(i, name)
        if known != name:
            return None  # an id reused for another name: leave it to the line loop
        if known is name:  # first definition of this id
            code = canon.get((k, name))
            if code is None:
                code = canon[(k, name)] = len(strings)
                strings.append(name)
            set_k.append(k)
            set_i.append(i)
            set_code.append(code)
            set_row.append(j)
    code_of[set_k, set_i] = set_code
    defined_at[set_k, set_i] = set_row
    # Every use must come after the name's definition.
    if (defined_at[name_kind, ident] > np.arange(len(names))).any():
        return None
    line_name = np.full(n, -1, dtype=np.int64)
    line_name[names] = code_of[name_kind, ident]
    # -- state at each fn= and calls= line: the last line that set it -------
    is_fn = kind == FN
    fn_rows = np.flatnonzero(is_fn)
    calls = np.flatnonzero(kind == CALLS)

    def name_at(rows: I64) -> I64:
        return np.where(rows >= 0, line_name[np.maximum(rows, 0)], -1)

    fl_of_fn = name_at(_last(kind == FL, fn_rows))
    ob_of_fn = name_at(_last(kind == OB, fn_rows))
    # The current source file: the last fl=, fi= or fe=, or fn= (back to its fl=).
    file_value = line_name.copy()
    file_value[fn_rows] = fl_of_fn
    file_row = _last((kind == FL) | (kind == FI) | is_fn, calls)
    cur_file = np.where(file_row >= 0, file_value[np.maximum(file_row, 0)], -1)
    # The call target's file/object: a cfi=/cob= since the previous call, else current.
    before = np.concatenate([[-1], calls[:-1]])
    cfi_at = _last(kind == CFI, calls, part_start)
    cob_at = _last(kind == COB, calls, part_start)
    callee_fl = np.where(cfi_at > before, name_at(cfi_at), cur_file)
    callee_ob = np.where(cob_at > before, name_at(cob_at), name_at(_last(kind == OB, calls)))
    callee_fn = name_at(_last(kind == CFN, calls, part_start))
    keys = np.concatenate(
        [
            np.stack([line_name[fn_rows], fl_of_fn, ob_of_fn], axis=1),
            np.stack([callee_fn, callee_fl, callee_ob], axis=1),
        ]
    )
    if len(keys) == 0 or (keys < 0).any() or len(strings) >= 1 << 21:
        return None  # calls= without cfn=, fn= before fl=/ob=: the loop says which
    # Number functions in the order the file first names them, as the loop does.
    order = np.argsort(np.concatenate([fn_rows, calls]), kind="stable")
    packed = _pack([keys[:, 0], keys[:, 1], keys[:, 2]], 21)
    fid_sorted, firsts_sorted = _first_seen_ids(packed[order])
    fid = np.empty_like(fid_sorted)
    fid[order] = fid_sorted
    firsts = order[firsts_sorted]
    fn_of_row = fid[: len(fn_rows)]
    callee = fid[len(fn_rows) :]
    # Current function at each call: the last fn=, forgotten at part starts.
    fn_value = np.full(n, -1, dtype=np.int64)
    fn_value[fn_rows] = fn_of_row
    fn_at = _last(is_fn, calls, part_start)
    caller = np.where(fn_at >= 0, fn_value[np.maximum(fn_at, 0)], -1)
    if (caller < 0).any():
        return None
    # -- call counts: `calls=N target` -------------------------------------------
    cs = starts[calls] + 6
    count_end = cs.copy()
    running = np.ones(len(calls), dtype=bool)  # still inside the number
    for _ in range(19):
        running &= (count_end < ends[calls]) & (tokens.DIGIT[arr[np.minimum(count_end, last)]] < 10)
        if not running.any():
            break
        count_end += running
    count, ok = tokens.unsigned(arr, cs, count_end, 10)
    after = arr[np.minimum(count_end, last)]
    if not ok.all() or not ((count_end == ends[calls]) | (after == 32) | (after == 9)).all():
        return None
    edge_keys = np.stack([caller, callee], axis=1)
    if len(calls):
        edge_id, edge_first = _first_seen_ids(_pack([caller, callee], 31))
        edge_counts = np.zeros(len(edge_first), dtype=np.int64)
        np.add.at(edge_counts, edge_id, count)
    else:
        edge_id = np.zeros(0, dtype=np.int64)
        edge_first = np.zeros(0, dtype=np.int64)
        edge_counts = np.zeros(0, dtype=np.int64)
    # -- back to names ------------------------------------------------------------
    name_of = strings.__getitem__
    names, files, objects = keys[firsts].T.tolist()
    functions = list(
        zip(map(name_of, names), map(name_of, files), map(name_of, objects), strict=True)
    )
    return SpecResult(
        functions=functions,
        fn_lines=line_idx[fn_rows],
        fn_ids=fn_of_row,
        call_lines=line_idx[calls] + 1,
        call_edges=edge_id,
        edges=edge_keys[edge_first].reshape(-1, 2),
        edge_counts=edge_counts,
    )
