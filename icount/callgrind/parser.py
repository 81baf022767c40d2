"""Parser of callgrind's profile format (valgrind's "Callgrind Format, Version 1").

Pure: bytes in, `Profile` out, `ParseError(msg, source=...)` for anything malformed.

Speed comes from splitting the work by line kind. Cost lines (most of a file) are
never looked at one by one in Python: tokens.py decodes their numbers in bulk and
they are summed into per-function and per-edge matrices with `np.add.at`. Only
specification lines (`fn=`, `calls=`, headers...) go through the Python loop that
keeps the state machine: current object/file/function, the call target, name
compression tables and part boundaries.

Format facts this relies on, checked against valgrind 3.19 output (see
fixtures/callgrind/README.md):
- `(id) name` defines a compressed name, `(id)` refers to it; objects (ob/cob),
  files (fl/fi/fe/cfi/cfl/jfi) and functions (fn/cfn/jfn) have separate tables,
  and callgrind redefines them at the start of every part of a combined file.
- the cost line after `calls=` holds the inclusive cost of the calls; `calls=`'s
  own target position is relative to the previous cost line but does not move it,
  so relative positions chain from cost line to cost line.
- `cob=`/`cfi=` apply to the next call only; `cfn=` names the target of `calls=`.
  Without `cfi=`, the target is in the current source file, which `fi=`/`fe=`
  (inlined code) change: callgrind omits `cfi=` for a call made from code inlined
  from the callee's own file (callgrind_annotate reads it the same way).
- `totals:` (end of each part) equals the sum of the part's self-cost lines;
  `summary:` may be larger (callgrind's cache simulation rounds it).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

from icount.callgrind import bulk, costs, tokens
from icount.callgrind.model import Profile
from icount.callgrind.state import Collected, PartState
from icount.errors import ParseError

_HEADER_PROBE = 4096

# Keys of `key=value` body lines. Name lines map to their compression table.
_CALLS, _CFN, _COB, _CFI, _FN, _FI, _FL, _OB, _JFI, _JFN, _JUMP = range(1, 12)
_CODES = {
    b"calls": _CALLS,
    b"cfn": _CFN,
    b"cob": _COB,
    b"cfi": _CFI,
    b"cfl": _CFI,
    b"fn": _FN,
    b"fi": _FI,
    b"fe": _FI,
    b"fl": _FL,
    b"ob": _OB,
    b"jfi": _JFI,
    b"jfn": _JFN,
    b"jump": _JUMP,
    b"jcnd": _JUMP,
}
_KIND = {_CFN: 0, _FN: 0, _JFN: 0, _COB: 1, _OB: 1, _CFI: 2, _FI: 2, _FL: 2, _JFI: 2}
_HEADER_KEYS = frozenset(
    [
        b"version",
        b"creator",
        b"pid",
        b"cmd",
        b"part",
        b"thread",
        b"desc",
        b"event",
        b"events",
        b"positions",
        b"summary",
        b"totals",
    ]
)
_KNOWN_POSITIONS = ("instr", "bb", "line")
# Bulk line kinds that give a part a body: a lookup table (np.isin costs 15x more)
_BODY_LINE = np.zeros(bulk.OTHER + 1, dtype=bool)
_BODY_LINE[[bulk.CALLS, bulk.FN, bulk.FL, bulk.OB]] = True
# What a line is, by its first byte: a cost line (a digit, '+', '-', '*'), blank or a
# comment, or anything else (specification and header lines).
_SPEC_LINE, _COST_LINE, _SKIPPED_LINE = 0, 1, 2
_LINE_KIND = np.full(256, _SPEC_LINE, dtype=np.uint8)
_LINE_KIND[[*b"0123456789+-*"]] = _COST_LINE
_LINE_KIND[[*b"\n#\r"]] = _SKIPPED_LINE
# Counts are held in int64: numbers of up to 18 digits, sums up to 2**63-1. Callgrind
# itself counts in 64 bits; 2**63 instructions would take valgrind centuries.
_MAX_DIGITS = tokens.MAX_DECIMAL_DIGITS
_INT64_MAX = (1 << 63) - 1
_MAX_ID_DIGITS = 18


def parse_file(path: str | Path, *, keep_lines: bool = False) -> Profile:
    """Parse a callgrind output file. Looks at the first 4 KiB before reading it all,
    so that a large file that is not a profile is refused without loading it.
    `keep_lines` keeps every cost line (positions decoded) in `Profile.lines`."""
    source = str(path)
    try:
        with open(path, "rb") as f:
            head = f.read(_HEADER_PROBE)
            _check_looks_like_callgrind(head, source)
            if f.seekable():  # one read: `head + rest` would copy the whole file again
                f.seek(0)
                data = f.read()
            else:
                data = head + f.read()
    except IsADirectoryError:
        raise ParseError("is a directory, not a callgrind file", source=source) from None
    except OSError as e:
        raise ParseError(f"cannot read: {e.strerror or e}", source=source) from None
    return parse_bytes(data, source, keep_lines=keep_lines)


def parse_bytes(
    data: bytes, source: str, *, keep_lines: bool = False, method: str = "auto"
) -> Profile:
    """Parse the bytes of a callgrind file; `source` names it in error messages.

    `method` is for tests and benchmarks: "auto" runs the bulk state machine and
    falls back to the line loop, "lines" runs the loop only, "bulk" refuses to fall
    back (ParseError when the bulk path declines the file).
    """
    _check_looks_like_callgrind(data[:_HEADER_PROBE], source)
    if not data.endswith(b"\n"):
        raise ParseError(
            "truncated: the last line has no end (callgrind ends every line with a newline)",
            source=source,
        )
    if method not in ("auto", "lines", "bulk"):
        raise ValueError(f"unknown method {method!r}")
    return _Parser(data, source, keep_lines, bulk=method != "lines", strict=method == "bulk").run()


def looks_like_callgrind(head: bytes) -> bool:
    """Whether the first bytes of a file start like a callgrind profile."""
    if b"\0" in head:
        return False
    for raw in head.split(b"\n"):
        line = raw.strip()
        if not line or (line.startswith(b"#") and not line.startswith(b"# callgrind")):
            continue
        return line.startswith(b"# callgrind format") or line.partition(b":")[0] in _HEADER_KEYS
    return False


def _check_looks_like_callgrind(head: bytes, source: str) -> None:
    if not head.strip():
        raise ParseError("empty file, not a callgrind profile", source=source)
    if b"\0" in head:
        raise ParseError("binary data, not a callgrind profile", source=source)
    if not looks_like_callgrind(head):
        raise ParseError(
            "not a callgrind profile (it should start with '# callgrind format' "
            "or header lines such as 'events:')",
            source=source,
        )


class _Parser(Collected):
    """Reads the specification lines into its Collected state, then sums the costs."""

    def __init__(
        self, data: bytes, source: str, keep_lines: bool, bulk: bool = True, strict: bool = False
    ) -> None:
        super().__init__(data, source)
        self.bulk = bulk  # try bulk.py first; the line loop is the fallback ...
        self.strict = strict  # ... unless strict (tests)
        self.keep_lines = keep_lines
        # Name compression: id -> name per kind (fn, ob, file), and a cache from the
        # exact bytes of a reference `(id)` or plain name to the name.
        self.tables: list[dict[int, str]] = [{}, {}, {}]
        self.cache: list[dict[bytes, str]] = [{}, {}, {}]

    def run(self) -> Profile:
        arr = np.frombuffer(self.data, dtype=np.uint8)
        ends = np.flatnonzero(arr == 10)
        starts = np.empty_like(ends)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        line_kind = _LINE_KIND[arr[starts]]
        is_cost = line_kind == _COST_LINE
        spec = np.flatnonzero(line_kind == _SPEC_LINE)
        if self.bulk:
            if not self._bulk_spec_lines(arr, spec, starts[spec], ends[spec]):
                if self.strict:
                    raise ParseError("the bulk parser declined this file", source=self.source)
                return _Parser(self.data, self.source, self.keep_lines, bulk=False).run()
        else:
            self._spec_lines(spec.tolist(), starts[spec].tolist(), ends[spec].tolist())
        if not self.parts or all(p.events is None for p in self.parts):
            raise ParseError("no 'events:' line, not a callgrind profile", source=self.source)
        calls = self.index_arrays()[2]
        followed = np.append(is_cost, False)[np.minimum(calls, len(is_cost))]
        if not followed.all():
            bad = int(calls[np.argmin(followed)])
            raise self.fail(bad, "a calls= line must be followed by its cost line")
        return costs.build_profile(self, arr, ends, is_cost, keep_lines=self.keep_lines)

    # -- specification and header lines (the Python state machine) ----------

    def _name(self, kind: int, value: bytes, index: int) -> str:
        """Slow path of name resolution: definitions, first sight of a name."""
        value = value.strip()
        cache = self.cache[kind]
        if value.startswith(b"(") and value[1:2].isdigit():
            close = value.find(b")")
            if close < 0 or not value[1:close].isdigit() or close > _MAX_ID_DIGITS + 1:
                raise self.fail(index, f"malformed compressed name {value[:60]!r}")
            ident = int(value[1:close])
            rest = value[close + 1 :].strip()
            table = self.tables[kind]
            if rest:
                name = rest.decode("utf-8", "replace")
                table[ident] = name
                cache[b"(%d)" % ident] = name
                return name
            try:
                return table[ident]
            except KeyError:
                raise self.fail(index, f"name ({ident}) used before it is defined") from None
        name = value.decode("utf-8", "replace")
        cache[value] = name
        return name

    def _function_id(self, key: tuple[str, str, str]) -> int:
        ident = self.functions.get(key)
        if ident is None:
            ident = self.functions[key] = len(self.functions)
        return ident

    def _new_part(self, index: int) -> PartState:
        part = PartState(index)
        self.parts.append(part)
        self.fn_lines.append(index)
        self.fn_ids.append(-1)
        return part

    def _bulk_spec_lines(
        self, arr: tokens.U8, spec: npt.NDArray[np.intp], starts: tokens.I64, ends: tokens.I64
    ) -> bool:
        """Headers here, everything else in bulk.run; False: use the line loop."""
        kind = bulk.classify(arr, starts, ends)
        # Lines that make a part "have a body" (a later part: header starts a new part).
        body_before = np.cumsum(_BODY_LINE[kind])
        part_start = np.zeros(len(spec), dtype=bool)
        part = self._new_part(0)
        start_count = 0
        for j in np.flatnonzero(kind == bulk.OTHER).tolist():
            before = int(body_before[j - 1]) if j else 0
            part.has_body = part.has_body or before > start_count
            new = self._header(int(spec[j]), self.data[int(starts[j]) : int(ends[j])], part)
            if new is not part:
                part, part_start[j], start_count = new, True, before
        if len(spec):
            part.has_body = part.has_body or int(body_before[-1]) > start_count
        result = bulk.run(self.data, arr, spec.astype(np.int64), starts, ends, kind, part_start)
        if result is None:
            return False
        self.bulk_graph = (result.functions, result.edges, result.edge_counts)
        lines = np.concatenate([np.array(self.fn_lines, dtype=np.int64), result.fn_lines])
        ids = np.concatenate([np.array(self.fn_ids, dtype=np.int64), result.fn_ids])
        order = np.argsort(lines, kind="stable")
        self.bulk_arrays = (lines[order], ids[order], result.call_lines, result.call_edges)
        return True

    def _spec_lines(self, indices: list[int], starts: list[int], ends: list[int]) -> None:
        data = self.data
        cache_fn, cache_ob, cache_fl = self.cache
        caches = self.cache
        functions = self.functions
        edges = self.edges
        edge_counts = self.edge_counts
        part = self._new_part(0)
        body = False  # whether the current part has body lines yet
        ob = fl = cur_file = ""
        fn = -1
        c_ob: str | None = None
        c_fl: str | None = None
        c_fn: str | None = None
        for i, s, e in zip(indices, starts, ends, strict=True):
            line = data[s:e]
            key, eq, value = line.partition(b"=")
            code = _CODES.get(key, 0) if eq else 0
            if code == _CALLS:
                if fn < 0:
                    raise self.fail(i, "calls= outside a function (no fn= before it)")
                if c_fn is None:
                    raise self.fail(i, "calls= without a cfn= naming the called function")
                words = value.split(None, 1)
                if not words or not words[0].isdigit() or len(words[0]) > _MAX_DIGITS:
                    raise self.fail(
                        i, f"calls= needs a call count (up to 18 digits), got {value[:40]!r}"
                    )
                ckey = (c_fn, cur_file if c_fl is None else c_fl, ob if c_ob is None else c_ob)
                callee = functions.get(ckey)
                if callee is None:
                    callee = self._function_id(ckey)
                edge = edges.get((fn, callee))
                if edge is None:
                    edge = edges[(fn, callee)] = len(edge_counts)
                    edge_counts.append(0)
                edge_counts[edge] += int(words[0])
                if edge_counts[edge] > _INT64_MAX:
                    raise self.fail(i, "the calls= counts of this call add up beyond 2**63-1")
                self.call_lines.append(i + 1)
                self.call_edges.append(edge)
                c_ob = c_fl = None
                body = True
            elif code == _CFN:
                c_fn = cache_fn.get(value) or self._name(0, value, i)
            elif code == _COB:
                c_ob = cache_ob.get(value) or self._name(1, value, i)
            elif code == _CFI:
                c_fl = cache_fl.get(value) or self._name(2, value, i)
            elif code == _FN:
                name = cache_fn.get(value) or self._name(0, value, i)
                fkey = (name, fl, ob)
                fn = functions.get(fkey, -1)
                if fn < 0:
                    fn = self._function_id(fkey)
                cur_file = fl
                self.fn_lines.append(i)
                self.fn_ids.append(fn)
                body = True
            elif code == _FI:
                cur_file = cache_fl.get(value) or self._name(2, value, i)
            elif code == _FL:
                fl = cur_file = cache_fl.get(value) or self._name(2, value, i)
                body = True
            elif code == _OB:
                ob = cache_ob.get(value) or self._name(1, value, i)
                body = True
            elif code in (_JFI, _JFN):
                kind = _KIND[code]
                if caches[kind].get(value) is None:
                    self._name(kind, value, i)  # only feeds the name table
            elif code == _JUMP:
                pass  # jump statistics (--collect-jumps): not needed for costs
            else:
                part.has_body = part.has_body or body
                new = self._header(i, line, part)
                if new is not part:
                    part, body = new, False
                    fn = -1
                    c_ob = c_fl = c_fn = None
        part.has_body = part.has_body or body

    def _header(self, i: int, line: bytes, part: PartState) -> PartState:
        """One `key: value` line; returns the part it belongs to (maybe a new one)."""
        hkey, colon, hvalue = line.partition(b":")
        if not colon or hkey not in _HEADER_KEYS:
            raise self.fail(i, f"not a callgrind line: {line[:60]!r}")
        text = hvalue.strip().decode("utf-8", "replace")
        # A part header after a part's body (or a second events:) starts a new part.
        if hkey in (b"part", b"events", b"thread", b"positions") and (
            part.has_body or (hkey == b"events" and part.events is not None)
        ):
            if part.events is None:
                raise self.fail(i, "new part starts before the previous one declared events:")
            part = self._new_part(i)
        if hkey == b"totals":
            part.totals = self._cost_list(text, i, part, "totals")
            part.has_body = True
        elif hkey == b"summary":
            part.summary = self._cost_list(text, i, part, "summary")
        elif hkey == b"events":
            part.events = text.split()
            if not part.events:
                raise self.fail(i, "events: names no event")
        elif hkey == b"positions":
            part.positions = text.split()
            if any(p not in _KNOWN_POSITIONS for p in part.positions):
                raise self.fail(i, f"unknown positions: {text[:60]!r}")
        elif hkey == b"version":
            if text not in ("0", "1"):
                raise self.fail(i, f"callgrind format version {text[:20]} is not supported (1 is)")
        elif hkey == b"creator":
            self.creator = text
        elif hkey == b"cmd":
            self.command = text
        elif hkey in (b"pid", b"part", b"thread"):
            if not _is_count(text):
                raise self.fail(
                    i, f"{hkey.decode()}: needs a number up to 2**63-1, got {text[:40]!r}"
                )
            if hkey == b"pid":
                self.pid = int(text)
            elif hkey == b"part":
                part.number = int(text)
            else:
                part.thread = int(text)
        # desc: and event: carry descriptions only.
        return part

    def _cost_list(self, text: str, index: int, part: PartState, key: str) -> list[int]:
        if part.events is None:
            raise self.fail(index, "totals:/summary: before events:")
        words = text.split()
        if not all(map(_is_count, words)) or len(words) > len(part.events):
            raise self.fail(index, f"{key}: malformed costs (numbers up to 2**63-1) {text[:60]!r}")
        return [int(w) for w in words] + [0] * (len(part.events) - len(words))


def _is_count(text: str) -> bool:
    """ASCII digits of a number up to 2**63-1, what costs are held in. (str.isdigit()
    also accepts '²' and other Unicode digits, which int() refuses.)"""
    return text.isascii() and text.isdigit() and len(text) <= 19 and int(text) <= _INT64_MAX
