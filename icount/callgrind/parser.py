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

from icount.callgrind import bulk, tokens
from icount.callgrind.model import CostLines, Function, Part, Profile
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


def parse_file(path: str | Path, *, keep_lines: bool = False) -> Profile:
    """Parse a callgrind output file. Looks at the first 4 KiB before reading it all,
    so that a large file that is not a profile is refused without loading it.
    `keep_lines` keeps every cost line (positions decoded) in `Profile.lines`."""
    source = str(path)
    try:
        with open(path, "rb") as f:
            head = f.read(_HEADER_PROBE)
            _check_looks_like_callgrind(head, source)
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


class _PartState:
    def __init__(self, first_line: int) -> None:
        self.first_line = first_line
        self.number: int | None = None
        self.thread: int | None = None
        self.events: list[str] | None = None
        self.positions: list[str] | None = None
        self.summary: list[int] | None = None
        self.totals: list[int] | None = None
        self.has_body = False


class _Parser:
    def __init__(
        self, data: bytes, source: str, keep_lines: bool, bulk: bool = True, strict: bool = False
    ) -> None:
        self.data = data
        self.bulk = bulk  # try bulk.py first; the line loop is the fallback ...
        self.strict = strict  # ... unless strict (tests)
        self.source = source
        self.keep_lines = keep_lines
        # Name compression: id -> name per kind (fn, ob, file), and a cache from the
        # exact bytes of a reference `(id)` or plain name to the name.
        self.tables: list[dict[int, str]] = [{}, {}, {}]
        self.cache: list[dict[bytes, str]] = [{}, {}, {}]
        self.functions: dict[tuple[str, str, str], int] = {}
        self.edges: dict[tuple[int, int], int] = {}
        self.edge_counts: list[int] = []
        self.fn_lines: list[int] = []  # line index of each fn= (or part start) ...
        self.fn_ids: list[int] = []  # ... and the function it starts (-1: none)
        self.call_lines: list[int] = []  # index of each call's cost line ...
        self.call_edges: list[int] = []  # ... and the edge it belongs to
        self.parts: list[_PartState] = []
        self.creator: str | None = None
        self.command: str | None = None
        self.pid: int | None = None

    def fail(self, index: int, message: str) -> ParseError:
        return ParseError(f"line {index + 1}: {message}", source=self.source)

    def run(self) -> Profile:
        arr = np.frombuffer(self.data, dtype=np.uint8)
        ends = np.flatnonzero(arr == 10).astype(np.int64)
        starts = np.empty_like(ends)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        first = arr[starts]
        is_cost = ((first >= 48) & (first <= 57)) | (first == 43) | (first == 45) | (first == 42)
        blank_or_comment = (first == 10) | (first == 35) | (first == 13)
        spec = np.flatnonzero(~(is_cost | blank_or_comment))
        if self.bulk:
            if not self._bulk_spec_lines(arr, spec, starts[spec], ends[spec]):
                if self.strict:
                    raise ParseError("the bulk parser declined this file", source=self.source)
                return _Parser(self.data, self.source, self.keep_lines, bulk=False).run()
        else:
            self._spec_lines(spec.tolist(), starts[spec].tolist(), ends[spec].tolist())
        if not self.parts or all(p.events is None for p in self.parts):
            raise ParseError("no 'events:' line, not a callgrind profile", source=self.source)
        calls = np.array(self.call_lines, dtype=np.int64)
        followed = np.append(is_cost, False)[np.minimum(calls, len(is_cost))]
        if not followed.all():
            bad = int(calls[np.argmin(followed)])
            raise self.fail(bad, "a calls= line must be followed by its cost line")
        return self._costs(arr, ends, is_cost)

    # -- specification and header lines (the Python state machine) ----------

    def _name(self, kind: int, value: bytes, index: int) -> str:
        """Slow path of name resolution: definitions, first sight of a name."""
        value = value.strip()
        cache = self.cache[kind]
        if value.startswith(b"(") and value[1:2].isdigit():
            close = value.find(b")")
            if close < 0 or not value[1:close].isdigit():
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

    def _new_part(self, index: int) -> _PartState:
        part = _PartState(index)
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
        body_before = np.cumsum(np.isin(kind, [bulk.CALLS, bulk.FN, bulk.FL, bulk.OB]))
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
        self.functions = {key: i for i, key in enumerate(result.functions)}
        self.edges = {key: i for i, key in enumerate(result.edges)}
        self.edge_counts = result.edge_counts
        lines = np.concatenate([np.array(self.fn_lines, dtype=np.int64), result.fn_lines])
        ids = np.concatenate([np.array(self.fn_ids, dtype=np.int64), result.fn_ids])
        order = np.argsort(lines, kind="stable")
        self.fn_lines, self.fn_ids = lines[order].tolist(), ids[order].tolist()
        self.call_lines = result.call_lines.tolist()
        self.call_edges = result.call_edges.tolist()
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
                if not words or not words[0].isdigit():
                    raise self.fail(i, f"calls= needs a call count, got {value[:40]!r}")
                ckey = (c_fn, cur_file if c_fl is None else c_fl, ob if c_ob is None else c_ob)
                callee = functions.get(ckey)
                if callee is None:
                    callee = self._function_id(ckey)
                edge = edges.get((fn, callee))
                if edge is None:
                    edge = edges[(fn, callee)] = len(edge_counts)
                    edge_counts.append(0)
                edge_counts[edge] += int(words[0])
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

    def _header(self, i: int, line: bytes, part: _PartState) -> _PartState:
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
            part.totals = self._cost_list(text, i, part)
            part.has_body = True
        elif hkey == b"summary":
            part.summary = self._cost_list(text, i, part)
        elif hkey == b"events":
            part.events = text.split()
            if not part.events:
                raise self.fail(i, "events: names no event")
        elif hkey == b"positions":
            part.positions = text.split()
            if any(p not in _KNOWN_POSITIONS for p in part.positions):
                raise self.fail(i, f"unknown positions: {text!r}")
        elif hkey == b"version":
            if text not in ("0", "1"):
                raise self.fail(i, f"callgrind format version {text} is not supported (1 is)")
        elif hkey == b"creator":
            self.creator = text
        elif hkey == b"cmd":
            self.command = text
        elif hkey in (b"pid", b"part", b"thread"):
            if not text.isdigit():
                raise self.fail(i, f"{hkey.decode()}: needs a number, got {text[:40]!r}")
            if hkey == b"pid":
                self.pid = int(text)
            elif hkey == b"part":
                part.number = int(text)
            else:
                part.thread = int(text)
        # desc: and event: carry descriptions only.
        return part

    def _cost_list(self, text: str, index: int, part: _PartState) -> list[int]:
        if part.events is None:
            raise self.fail(index, "totals:/summary: before events:")
        words = text.split()
        if not all(w.isdigit() for w in words) or len(words) > len(part.events):
            raise self.fail(index, f"malformed costs {text[:60]!r}")
        return [int(w) for w in words] + [0] * (len(part.events) - len(words))

    # -- cost lines (numpy) ----------------------------------------------------

    def _costs(self, arr: tokens.U8, ends: tokens.I64, is_cost: npt.NDArray[np.bool_]) -> Profile:
        events, positions = self._layout()
        n_ev, n_pos = len(events), len(positions)
        n_fn, n_edge = len(self.functions), len(self.edge_counts)
        cost_idx = np.flatnonzero(is_cost)

        tok = tokens.split_lines(arr, ends, is_cost)
        counts = tok.per_line[cost_idx]
        if len(counts) and (counts.min() < n_pos or counts.max() > n_pos + n_ev):
            bad = cost_idx[np.argmax((counts < n_pos) | (counts > n_pos + n_ev))]
            raise self.fail(
                int(bad), f"cost line needs {n_pos} position(s) and at most {n_ev} cost(s)"
            )
        is_val = tok.col >= n_pos
        vals, ok = tokens.costs(arr, tok.start[is_val], tok.end[is_val])
        if not ok.all():
            self._bad_token(tok, np.flatnonzero(is_val)[np.argmin(ok)], "cost")
        pos_sel = np.flatnonzero(~is_val)
        pos_start, pos_end = tok.start[pos_sel], tok.end[pos_sel]
        if self.keep_lines or not tokens.positions_valid(arr, pos_start, pos_end):
            pos_val, pos_abs, pos_ok = tokens.positions(arr, pos_start, pos_end)
            if not pos_ok.all():
                self._bad_token(tok, pos_sel[np.argmin(pos_ok)], "position")

        line_of_val = tok.line[is_val]
        ev_of_val = tok.col[is_val] - n_pos
        fn_lines = np.array(self.fn_lines, dtype=np.int64)
        fn_ids = np.array(self.fn_ids, dtype=np.int64)
        line_fn = fn_ids[np.searchsorted(fn_lines, cost_idx, side="right") - 1]
        if len(line_fn) and line_fn.min() < 0:
            bad = int(cost_idx[np.argmax(line_fn < 0)])
            raise self.fail(bad, "cost line outside a function (no fn= before it)")
        edge_of_line = np.full(len(is_cost), -1, dtype=np.int64)
        edge_of_line[np.array(self.call_lines, dtype=np.int64)] = self.call_edges
        ordinal = np.cumsum(is_cost) - 1  # file line -> index among cost lines
        val_line = ordinal[line_of_val]
        val_edge = edge_of_line[line_of_val]
        is_self = val_edge < 0

        self_cost = np.zeros((n_fn, n_ev), dtype=np.int64)
        call_cost = np.zeros((n_edge, n_ev), dtype=np.int64)
        part_sums = np.zeros((len(self.parts), n_ev), dtype=np.int64)
        sl, se, sv = val_line[is_self], ev_of_val[is_self], vals[is_self]
        np.add.at(self_cost, (line_fn[sl], se), sv)
        np.add.at(call_cost, (val_edge[~is_self], ev_of_val[~is_self]), vals[~is_self])
        part_starts = np.array([p.first_line for p in self.parts], dtype=np.int64)
        part_of_line = np.searchsorted(part_starts, cost_idx, side="right") - 1
        np.add.at(part_sums, (part_of_line[sl], se), sv)

        lines = None
        if self.keep_lines:
            line_costs = np.zeros((len(cost_idx), n_ev), dtype=np.int64)
            line_costs[val_line, ev_of_val] = vals
            pos = np.zeros((len(cost_idx), n_pos), dtype=np.int64)
            pos_col = tok.col[pos_sel]
            for c in range(n_pos):
                sel = pos_col == c
                pos[:, c] = tokens.resolve(pos_val[sel], pos_abs[sel])
            lines = CostLines(
                line=cost_idx.astype(np.int64) + 1,
                function=line_fn,
                edge=edge_of_line[cost_idx],
                positions=pos,
                costs=line_costs,
            )

        parts = self._check_parts(part_sums, events)
        totals = {e: sum(p.totals[e] for p in parts) for e in events}
        summaries = [p.summary for p in self.parts if p.events is not None]
        summary = None
        if summaries and all(s is not None for s in summaries):
            summary = {
                e: sum(s[k] for s in summaries if s is not None) for k, e in enumerate(events)
            }
        edge_keys = list(self.edges)
        return Profile(
            source=self.source,
            events=events,
            positions=positions,
            totals=totals,
            summary=summary,
            command=self.command,
            pid=self.pid,
            creator=self.creator,
            parts=parts,
            functions=[Function(*k) for k in self.functions],
            self_cost=self_cost,
            call_caller=np.array([k[0] for k in edge_keys], dtype=np.int64),
            call_callee=np.array([k[1] for k in edge_keys], dtype=np.int64),
            call_count=np.array(self.edge_counts, dtype=np.int64),
            call_cost=call_cost,
            lines=lines,
        )

    def _bad_token(self, tok: tokens.Tokens, k: np.intp | int, what: str) -> None:
        text = self.data[int(tok.start[k]) : int(tok.end[k])]
        raise self.fail(int(tok.line[k]), f"bad {what} {text[:30]!r}")

    def _layout(self) -> tuple[list[str], list[str]]:
        declared = [p for p in self.parts if p.events is not None]
        events = declared[0].events or []
        positions = declared[0].positions or ["line"]
        for p in declared[1:]:
            if p.events != events or (p.positions or ["line"]) != positions:
                raise self.fail(
                    p.first_line, "parts with different events:/positions: are not supported"
                )
        for p in self.parts:
            if p.events is None and p.has_body:
                raise self.fail(p.first_line, "part has cost lines but no events: line")
        return events, positions

    def _check_parts(self, sums: npt.NDArray[np.int64], events: list[str]) -> list[Part]:
        parts: list[Part] = []
        by_callgrind = (self.creator or "").startswith("callgrind")
        for k, p in enumerate(self.parts):
            if p.events is None:
                continue  # a header-only prologue, no costs
            summed = [int(x) for x in sums[k]]
            label = f"part {p.number if p.number is not None else k + 1}"
            if p.totals is not None:
                for e, got, want in zip(events, summed, p.totals, strict=True):
                    if got != want:
                        raise ParseError(
                            f"{label}: cost lines sum to {got} {e} but totals: says {want} "
                            "(file truncated or corrupt)",
                            source=self.source,
                        )
                declared = True
            else:
                if by_callgrind:
                    raise ParseError(
                        f"{label} has no totals: line (file truncated?)", source=self.source
                    )
                if p.summary is not None and any(
                    got > s for got, s in zip(summed, p.summary, strict=True)
                ):
                    raise ParseError(
                        f"{label}: cost lines sum to more than summary: says", source=self.source
                    )
                declared = False
            parts.append(
                Part(
                    number=p.number,
                    thread=p.thread,
                    totals=dict(zip(events, summed, strict=True)),
                    declared=declared,
                )
            )
        return parts
