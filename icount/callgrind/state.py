"""What reading the specification lines of a callgrind file collects.

The parser fills a `Collected` (parts, functions, call edges, where each function's
lines start); costs.py then sums the cost lines into a Profile.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from icount.callgrind.model import Function
from icount.errors import ParseError

I64 = npt.NDArray[np.int64]


class PartState:
    """One part's header as read so far."""

    def __init__(self, first_line: int) -> None:
        self.first_line = first_line
        self.number: int | None = None
        self.thread: int | None = None
        self.events: list[str] | None = None
        self.positions: list[str] | None = None
        self.summary: list[int] | None = None
        self.totals: list[int] | None = None
        self.has_body = False


class Collected:
    """State shared by both ways of reading specification lines (bulk and loop)."""

    def __init__(self, data: bytes, source: str) -> None:
        self.data = data
        self.source = source
        self.functions: dict[tuple[str, str, str], int] = {}  # (name, file, object) -> id
        self.edges: dict[tuple[int, int], int] = {}  # (caller, callee) -> edge id
        self.edge_counts: list[int] = []
        self.fn_lines: list[int] = []  # line index of each fn= (or part start) ...
        self.fn_ids: list[int] = []  # ... and the function it starts (-1: none)
        self.call_lines: list[int] = []  # index of each call's cost line ...
        self.call_edges: list[int] = []  # ... and the edge it belongs to
        # The same four as arrays, when the bulk path made them (no list round trip),
        # and its functions, edges (caller, callee rows) and edge counts.
        self.bulk_arrays: tuple[I64, I64, I64, I64] | None = None
        self.bulk_graph: tuple[list[Function], I64, I64] | None = None
        self.parts: list[PartState] = []
        self.creator: str | None = None
        self.command: str | None = None
        self.pid: int | None = None

    def fail(self, index: int, message: str) -> ParseError:
        return ParseError(f"line {index + 1}: {message}", source=self.source)

    def index_arrays(self) -> tuple[I64, I64, I64, I64]:
        """(fn_lines, fn_ids, call_lines, call_edges) as int64 arrays."""
        if self.bulk_arrays is not None:
            return self.bulk_arrays
        return (
            np.array(self.fn_lines, dtype=np.int64),
            np.array(self.fn_ids, dtype=np.int64),
            np.array(self.call_lines, dtype=np.int64),
            np.array(self.call_edges, dtype=np.int64),
        )

    def graph(self) -> tuple[list[Function], I64, I64]:
        """(function keys in id order, (caller, callee) rows, call counts)."""
        if self.bulk_graph is not None:
            return self.bulk_graph
        pairs = np.array(list(self.edges), dtype=np.int64).reshape(-1, 2)
        functions = list(map(Function._make, self.functions))
        return functions, pairs, np.array(self.edge_counts, dtype=np.int64)
