"""What a parsed callgrind profile holds: functions, their self costs, call edges.

Costs are numpy int64 matrices with one column per event (in `Profile.events`
order), so that whole-profile sums and per-function lookups stay vectorised.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

Costs = npt.NDArray[np.int64]


class Function(NamedTuple):
    """A function as callgrind identifies it: name within a source file within an object.

    A NamedTuple rather than a dataclass: large profiles hold tens of thousands.
    """

    name: str
    file: str
    object: str


@dataclass(frozen=True)
class Part:
    """One dump (`part:`) of the file, e.g. one `--dump-before` window or one thread."""

    number: int | None
    thread: int | None
    totals: dict[str, int]
    # Whether `totals` comes from a `totals:` line (checked against the cost lines)
    # or was summed from the cost lines because the part declares none.
    declared: bool
    # The part's `summary:` line, if any (the cache simulator's can exceed totals).
    summary: dict[str, int] | None = None


@dataclass(frozen=True)
class CostLines:
    """Every cost line of a file, kept on request (`parse_file(..., keep_lines=True)`).

    `positions[k]` holds the line's subpositions in `Profile.positions` order
    (`instr` addresses, `line` numbers), relative compression resolved. `edge[k]` is
    the call edge whose inclusive cost the line gives, or -1 for self cost.
    """

    line: npt.NDArray[np.int64]  # 1-based line number in the file
    function: npt.NDArray[np.int64]
    edge: npt.NDArray[np.int64]
    positions: npt.NDArray[np.int64]
    costs: Costs


@dataclass
class Profile:
    """A callgrind file: header facts, per-function self costs and caller→callee edges.

    `self_cost[i]` is the self (exclusive) cost of `functions[i]` summed over all parts.
    Edge k goes from `functions[call_caller[k]]` to `functions[call_callee[k]]`, was
    executed `call_count[k]` times and `call_cost[k]` is the inclusive cost of those calls.
    """

    source: str
    events: list[str]
    positions: list[str]
    totals: dict[str, int]
    summary: dict[str, int] | None
    command: str | None
    pid: int | None
    creator: str | None
    parts: list[Part]
    functions: list[Function]
    self_cost: Costs
    call_caller: npt.NDArray[np.int64]
    call_callee: npt.NDArray[np.int64]
    call_count: npt.NDArray[np.int64]
    call_cost: Costs
    lines: CostLines | None = None

    def event_index(self, event: str) -> int:
        try:
            return self.events.index(event)
        except ValueError:
            raise KeyError(f"event {event} not in this profile ({' '.join(self.events)})") from None

    def inclusive_cost(self) -> Costs:
        """Self cost plus the cost of every call a function makes to another function.

        Calls of a function to itself are left out, so direct recursion is not counted
        twice; like callgrind_annotate and KCachegrind without cycle detection, mutual
        recursion (a→b→a) still counts the inner calls again.
        """
        incl = self.self_cost.copy()
        keep = self.call_caller != self.call_callee
        np.add.at(incl, self.call_caller[keep], self.call_cost[keep])
        return incl
