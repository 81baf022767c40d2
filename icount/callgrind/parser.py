"""Parser of callgrind's profile format (valgrind's "Callgrind Format, Version 1").

Pure: bytes in, `Profile` out, `ParseError(msg, source=...)` for anything malformed.

Speed comes from splitting the work by line kind. Cost lines (most of a file) are
never looked at one by one in Python: their tokens are split and converted by numpy
in bulk and summed into per-function and per-edge matrices with `np.add.at`. Only
specification lines (`fn=`, `calls=`, headers...) go through the Python loop that
keeps the state machine: current object/file/function, the call target, name
compression tables and part boundaries.

Format facts this relies on, checked against valgrind 3.19 output (see
fixtures/callgrind/README.md):
- `(id) name` defines a compressed name, `(id)` refers to it; objects (ob/cob),
  files (fl/fi/fe/cfi/cfl/jfi) and functions (fn/cfn/jfn) have separate tables,
  and callgrind redefines them at the start of every part of a combined file.
- the cost line after `calls=` holds the inclusive cost of the calls; `calls=`'s
  own target position is relative to the previous cost line but does not move it.
- `cob=`/`cfi=` apply to the next call only; `cfn=` names the target of `calls=`.
  Without `cfi=`, the target is in the current source file, which `fi=`/`fe=`
  (inlined code) change: callgrind omits `cfi=` for a call made from code inlined
  from the callee's own file (callgrind_annotate reads it the same way).
- `totals:` (end of each part) equals the sum of the part's self-cost lines;
  `summary:` may be larger (callgrind's cache simulation rounds it).
"""

from __future__ import annotations

import operator
import re
from pathlib import Path

import numpy as np
import numpy.typing as npt

from icount.callgrind.model import Function, Part, Profile
from icount.errors import ParseError

_HEADER_PROBE = 4096

# Keys of `key=value` body lines, mapped to their name-compression table.
_NAME_KINDS = {
    b"ob": "ob",
    b"cob": "ob",
    b"fl": "fl",
    b"fi": "fl",
    b"fe": "fl",
    b"cfi": "fl",
    b"cfl": "fl",
    b"jfi": "fl",
    b"fn": "fn",
    b"cfn": "fn",
    b"jfn": "fn",
}
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
_COMPRESSED = re.compile(rb"\((\d+)\)[ \t]*(.*)", re.DOTALL)
_POSITION_TOKENS = re.compile(rb"(?:(?:\d+|0x[0-9a-fA-F]+|[+-]\d+|\*)(?: |\Z))*")
_WHITESPACE = b" \t\n\r\x0b\x0c"  # what bytes.split() splits on


def parse_file(path: str | Path) -> Profile:
    """Parse a callgrind output file. Looks at the first 4 KiB before reading it all,
    so that a large file that is not a profile is refused without loading it."""
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
    return parse_bytes(data, source)


def parse_bytes(data: bytes, source: str) -> Profile:
    """Parse the bytes of a callgrind file; `source` names it in error messages."""
    _check_looks_like_callgrind(data[:_HEADER_PROBE], source)
    if not data.endswith(b"\n"):
        raise ParseError(
            "truncated: the last line has no end (callgrind ends every line with a newline)",
            source=source,
        )
    return _Parser(data, source).run()


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
    def __init__(self, data: bytes, source: str) -> None:
        self.data = data
        self.source = source
        self.lines = data.split(b"\n")
        self.lines.pop()  # data ends with a newline: the last item is empty
        self.names: dict[str, dict[int, str]] = {"ob": {}, "fl": {}, "fn": {}}
        self.functions: dict[Function, int] = {}
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

    # -- line classification -------------------------------------------------

    def run(self) -> Profile:
        arr = np.frombuffer(self.data, dtype=np.uint8)
        ends = np.flatnonzero(arr == 10)
        starts = np.empty_like(ends)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        first = arr[starts]
        is_cost = ((first >= 48) & (first <= 57)) | (first == 43) | (first == 45) | (first == 42)
        blank_or_comment = (first == 10) | (first == 35)
        spec = np.flatnonzero(~(is_cost | blank_or_comment))
        self.is_cost = is_cost
        self._spec_lines(spec.tolist())
        if not self.parts or all(p.events is None for p in self.parts):
            raise ParseError("no 'events:' line, not a callgrind profile", source=self.source)
        return self._costs(np.flatnonzero(is_cost))

    # -- specification and header lines (the Python state machine) ----------

    def _name(self, kind: str, value: bytes, index: int) -> str:
        if value.startswith(b"(") and value[1:2].isdigit():
            m = _COMPRESSED.fullmatch(value)
            if m is None:
                raise self.fail(index, f"malformed compressed name {value[:60]!r}")
            ident = int(m.group(1))
            table = self.names[kind]
            if m.group(2):
                name = m.group(2).decode("utf-8", "replace")
                table[ident] = name
                return name
            try:
                return table[ident]
            except KeyError:
                raise self.fail(index, f"name ({ident}) used before it is defined") from None
        return value.decode("utf-8", "replace")

    def _function_id(self, fn: Function) -> int:
        ident = self.functions.get(fn)
        if ident is None:
            ident = self.functions[fn] = len(self.functions)
        return ident

    def _new_part(self, index: int) -> _PartState:
        part = _PartState(index)
        self.parts.append(part)
        self.fn_lines.append(index)
        self.fn_ids.append(-1)
        return part

    def _spec_lines(self, indices: list[int]) -> None:
        lines = self.lines
        is_cost = self.is_cost
        n_lines = len(lines)
        part = self._new_part(0)
        ob = fl = cur_file = ""
        fn = -1
        c_ob: str | None = None
        c_fl: str | None = None
        c_fn: str | None = None
        for i in indices:
            line = lines[i]
            key, eq, value = line.partition(b"=")
            kind = _NAME_KINDS.get(key) if eq else None
            if kind is not None:
                name = self._name(kind, value.strip(), i)
                if key == b"fn":
                    fn = self._function_id(Function(name, fl, ob))
                    cur_file = fl
                    self.fn_lines.append(i)
                    self.fn_ids.append(fn)
                elif key == b"cfn":
                    c_fn = name
                elif key == b"fl":
                    fl = cur_file = name
                elif key in (b"fi", b"fe"):
                    cur_file = name
                elif key == b"ob":
                    ob = name
                elif key in (b"cfi", b"cfl"):
                    c_fl = name
                elif key == b"cob":
                    c_ob = name
                # jfi=/jfn= only feed the name tables.
                part.has_body = True
                continue
            if eq and key == b"calls":
                if fn < 0:
                    raise self.fail(i, "calls= outside a function (no fn= before it)")
                if c_fn is None:
                    raise self.fail(i, "calls= without a cfn= naming the called function")
                count_text = value.split(None, 1)[0] if value.strip() else b""
                if not count_text.isdigit():
                    raise self.fail(i, f"calls= needs a call count, got {value[:40]!r}")
                if i + 1 >= n_lines or not is_cost[i + 1]:
                    raise self.fail(i + 1, "a calls= line must be followed by its cost line")
                callee = self._function_id(
                    Function(c_fn, cur_file if c_fl is None else c_fl, ob if c_ob is None else c_ob)
                )
                edge = self.edges.get((fn, callee))
                if edge is None:
                    edge = self.edges[(fn, callee)] = len(self.edge_counts)
                    self.edge_counts.append(0)
                self.edge_counts[edge] += int(count_text)
                self.call_lines.append(i + 1)
                self.call_edges.append(edge)
                c_ob = c_fl = None
                part.has_body = True
                continue
            if eq and key in (b"jump", b"jcnd"):
                continue  # jump statistics (--collect-jumps): not needed for costs
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
                fn = -1
                c_ob = c_fl = c_fn = None
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

    def _cost_list(self, text: str, index: int, part: _PartState) -> list[int]:
        if part.events is None:
            raise self.fail(index, "totals:/summary: before events:")
        words = text.split()
        if not all(w.isdigit() for w in words) or len(words) > len(part.events):
            raise self.fail(index, f"malformed costs {text[:60]!r}")
        return [int(w) for w in words] + [0] * (len(part.events) - len(words))

    # -- cost lines (numpy) ----------------------------------------------------

    def _costs(self, cost_idx: npt.NDArray[np.intp]) -> Profile:
        events, positions = self._layout()
        n_ev, n_pos = len(events), len(positions)
        n_fn, n_edge = len(self.functions), len(self.edge_counts)
        part_starts = np.array([p.first_line for p in self.parts], dtype=np.int64)

        fn_lines = np.array(self.fn_lines, dtype=np.int64)
        fn_ids = np.array(self.fn_ids, dtype=np.int64)
        ctx = fn_ids[np.searchsorted(fn_lines, cost_idx, side="right") - 1]
        if len(ctx) and ctx.min() < 0:
            bad = int(cost_idx[np.argmax(ctx < 0)])
            raise self.fail(bad, "cost line outside a function (no fn= before it)")
        edge_of_line = np.full(len(self.lines), -1, dtype=np.int64)
        edge_of_line[np.array(self.call_lines, dtype=np.int64)] = self.call_edges
        cost_edge = edge_of_line[cost_idx]

        vals, line_of_val, ev_of_val = self._cost_tokens(cost_idx, n_pos, n_ev)
        self_cost = np.zeros((n_fn, n_ev), dtype=np.int64)
        call_cost = np.zeros((n_edge, n_ev), dtype=np.int64)
        part_sums = np.zeros((len(self.parts), n_ev), dtype=np.int64)
        val_edge = cost_edge[line_of_val]
        is_self = val_edge < 0
        sl, se, sv = line_of_val[is_self], ev_of_val[is_self], vals[is_self]
        np.add.at(self_cost, (ctx[sl], se), sv)
        np.add.at(call_cost, (val_edge[~is_self], ev_of_val[~is_self]), vals[~is_self])
        part_of_line = np.searchsorted(part_starts, cost_idx, side="right") - 1
        np.add.at(part_sums, (part_of_line[sl], se), sv)

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
            functions=list(self.functions),
            self_cost=self_cost,
            call_caller=np.array([k[0] for k in edge_keys], dtype=np.int64),
            call_callee=np.array([k[1] for k in edge_keys], dtype=np.int64),
            call_count=np.array(self.edge_counts, dtype=np.int64),
            call_cost=call_cost,
        )

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

    def _cost_tokens(
        self, cost_idx: npt.NDArray[np.intp], n_pos: int, n_ev: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Cost values of all cost lines, with the cost-line number and event of each."""
        n_lines = len(cost_idx)
        if n_lines == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty
        picked = operator.itemgetter(*cost_idx.tolist())(self.lines)
        joined = b"\n".join(picked) if n_lines > 1 else picked
        tokens = joined.split()
        a = np.frombuffer(joined, dtype=np.uint8)
        ws = np.isin(a, np.frombuffer(_WHITESPACE, dtype=np.uint8))
        tok_start = ~ws
        tok_start[1:] &= ws[:-1]
        line_of_tok = np.cumsum(a == 10)[tok_start]
        counts = np.bincount(line_of_tok, minlength=n_lines)
        if counts.min() < n_pos or counts.max() > n_pos + n_ev:
            bad = np.flatnonzero((counts < n_pos) | (counts > n_pos + n_ev))[0]
            raise self.fail(
                int(cost_idx[bad]),
                f"cost line needs {n_pos} position(s) and at most {n_ev} cost(s)",
            )
        col = np.arange(len(tokens), dtype=np.int64) - (np.cumsum(counts) - counts)[line_of_tok]
        tok = np.array(tokens)
        is_val = col >= n_pos
        pos_text = b" ".join(tok[~is_val].tolist())
        if _POSITION_TOKENS.fullmatch(pos_text) is None:
            self._locate_bad_token(cost_idx, line_of_tok, tok, ~is_val, positions=True)
        try:
            vals = tok[is_val].astype(np.int64)
        except (ValueError, OverflowError):
            self._locate_bad_token(cost_idx, line_of_tok, tok, is_val, positions=False)
            raise  # not reached: the search above raises
        if len(vals) and vals.min() < 0:
            self._locate_bad_token(cost_idx, line_of_tok, tok, is_val, positions=False)
        return vals, line_of_tok[is_val], col[is_val] - n_pos

    def _locate_bad_token(
        self,
        cost_idx: npt.NDArray[np.intp],
        line_of_tok: npt.NDArray[np.int64],
        tok: npt.NDArray[np.bytes_],
        sel: npt.NDArray[np.bool_],
        *,
        positions: bool,
    ) -> None:
        """Slow path, only on bad input: find the first bad token and name its line."""
        for k in np.flatnonzero(sel).tolist():
            t = bytes(tok[k])
            if positions:
                ok = _POSITION_TOKENS.fullmatch(t) is not None
            else:
                ok = t.isdigit() and int(t) < 2**63
            if not ok:
                what = "position" if positions else "cost"
                raise self.fail(int(cost_idx[line_of_tok[k]]), f"bad {what} {t[:30]!r}")
        raise self.fail(int(cost_idx[0]), "malformed cost lines")

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
