"""A counted window's functions (a serve rep, a run of a command), as the backends that
see functions (callgrind) hand them over: every function's self and inclusive
instructions and the calls into it, and the calls into the allocator from outside it.
A cell keeps the medians of these per request (results/cell_profile.py)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

from icount.names import ADDRESS, recursion_base

UNNAMED = "[code without a symbol: JIT-compiled or stripped]"

PROFILE_TOP = 20  # functions each cell's profile keeps (~2 KB of JSON a cell); 0: none


class FunctionCost(NamedTuple):
    """One function's instructions in a window: its own, with its callees', and the
    calls made into it."""

    self_ir: float
    inclusive: float
    calls: int


class WindowProfile(Mapping[str, float]):
    """A window's functions. As a mapping it is their self instructions by name (what
    the spread notes compare); `costs` holds the whole figures, `allocations` and
    `frees` the calls into the allocator from outside it, `top` how many functions its
    cell keeps; `edges` the inclusive instructions of the calls from one function into
    another (a flame graph's layers), by (caller, callee)."""

    def __init__(
        self,
        costs: Mapping[str, FunctionCost],
        allocations: int = 0,
        frees: int = 0,
        top: int = PROFILE_TOP,
        edges: Mapping[tuple[str, str], float] | None = None,
    ) -> None:
        self.edges = dict(edges or {})
        self.costs = dict(costs)
        self.allocations = allocations
        self.frees = frees
        self.top = top

    def __getitem__(self, name: str) -> float:
        return self.costs[name].self_ir

    def __iter__(self) -> Iterator[str]:
        return iter(self.costs)

    def __len__(self) -> int:
        return len(self.costs)

    def pooled(self) -> dict[str, FunctionCost]:
        """Functions by name, those callgrind knows only by address in one row (a JIT
        moves its code: compared by address, windows would differ in pairs that are the
        same code), recursion levels with their function."""
        out: dict[str, FunctionCost] = {}
        # A recursion level's inclusive cost is inside its first level's, and a mutual
        # recursion's (`ping'2` under `pong` under `ping`) holds the deeper levels' again:
        # the first level's is the function's; the levels' costliest only where the
        # window opened inside the recursion and has no first level.
        levels: dict[str, float] = {}
        for name, c in self.costs.items():
            base = recursion_base(name)
            key = UNNAMED if ADDRESS.fullmatch(base) else base
            incl = c.inclusive
            if base != name:
                levels[key] = max(levels.get(key, 0.0), incl)
                incl = 0.0
            had = out.get(key)
            out[key] = FunctionCost(c.self_ir, incl, c.calls) if had is None else FunctionCost(
                had.self_ir + c.self_ir, had.inclusive + incl, had.calls + c.calls
            )  # fmt: skip
        for key, incl in levels.items():
            if out[key].inclusive == 0:
                out[key] = out[key]._replace(inclusive=incl)
        return out

    def pooled_edges(self) -> dict[tuple[str, str], float]:
        """`edges` with the code without a symbol in one pool, as `pooled` has it. A
        recursion level keeps its name (`f'2`): pooled with its first level, the calls
        between them would be a cycle, and a flame graph's layers would have none."""
        out: dict[tuple[str, str], float] = {}
        for (a, b), cost in self.edges.items():
            key = (_unnamed(a), _unnamed(b))
            if key[0] != key[1]:
                out[key] = out.get(key, 0.0) + cost
        return out


def _unnamed(name: str) -> str:
    return UNNAMED if ADDRESS.fullmatch(recursion_base(name)) else name


def sum_windows(profiles: Sequence[WindowProfile]) -> WindowProfile:
    """The profiles of one window's processes as one (every process of a server)."""
    costs: dict[str, FunctionCost] = {}
    for p in profiles:
        for name, c in p.costs.items():
            had = costs.get(name)
            costs[name] = c if had is None else FunctionCost(
                had.self_ir + c.self_ir, had.inclusive + c.inclusive, had.calls + c.calls
            )  # fmt: skip
    edges: dict[tuple[str, str], float] = {}
    for p in profiles:
        for key, cost in p.edges.items():
            edges[key] = edges.get(key, 0.0) + cost
    top = profiles[0].top if profiles else PROFILE_TOP
    return WindowProfile(costs, sum(p.allocations for p in profiles),
                         sum(p.frees for p in profiles), top, edges)  # fmt: skip
