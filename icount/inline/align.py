"""Two callgrind profiles of one workload, reduced to function names and aligned.

Functions are matched by the (demangled) name callgrind prints, after two
normalisations that would otherwise hide a match:
- callgrind's recursion levels (`fib'2`, from its default --separate-recs=2) are
  folded into the function, so `fib→fib'2` becomes the self-call `fib→fib`;
- Rust's legacy hash suffix `::h<16 hex>` differs between builds of the same code.
Code without a symbol, which callgrind names by its address (`0x0000000000001170`:
PLT stubs, `_init`), is gathered under `(no symbol)`: its addresses move from build to
build. Compiler clones (`foo.part.0`, `foo.constprop.0`, `foo.cold`) are real, separate
symbols and stay apart: their appearing in one build only is what an outlining
decision looks like.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from icount.callgrind.model import Profile
from icount.names import ADDRESS, recursion_base

_RUST_HASH = re.compile(r"::h[0-9a-f]{16}(?=$|')")
NO_SYMBOL = "(no symbol)"


def normalise_name(name: str) -> str:
    """`fib'2` -> `fib`; `app::main::h0123456789abcdef` -> `app::main`."""
    name = recursion_base(_RUST_HASH.sub("", name))
    return NO_SYMBOL if ADDRESS.fullmatch(name) else name


@dataclass(frozen=True)
class FunctionStats:
    self_cost: int
    inclusive: int
    calls: int  # times called, self-calls (recursion) included


@dataclass(frozen=True)
class EdgeStats:
    count: int
    cost: int  # inclusive cost of those calls


@dataclass(frozen=True)
class Side:
    """One build's profile as names: what `icount inline` compares."""

    total: int
    functions: dict[str, FunctionStats]
    edges: dict[tuple[str, str], EdgeStats]


def side_of(profiles: Iterable[Profile], event: str) -> Side:
    """Sum one or more profiles (e.g. one file per thread) into name-keyed stats."""
    self_by: dict[str, int] = {}
    incl_by: dict[str, int] = {}
    calls: dict[str, int] = {}
    edges: dict[tuple[str, str], list[int]] = {}
    total = 0
    for prof in profiles:
        col = prof.event_index(event)
        total += prof.totals[event]
        names = [normalise_name(f.name) for f in prof.functions]
        for name, cost in zip(names, prof.self_cost[:, col].tolist(), strict=True):
            self_by[name] = self_by.get(name, 0) + cost
        inclusive = prof.inclusive_cost()[:, col].tolist()
        for i in _outermost(prof, names):
            incl_by[names[i]] = incl_by.get(names[i], 0) + inclusive[i]
        for a, b, n, c in zip(
            prof.call_caller.tolist(),
            prof.call_callee.tolist(),
            prof.call_count.tolist(),
            prof.call_cost[:, col].tolist(),
            strict=True,
        ):
            acc = edges.setdefault((names[a], names[b]), [0, 0])
            acc[0] += n
            acc[1] += c
            calls[names[b]] = calls.get(names[b], 0) + n
    functions = {
        name: FunctionStats(self_by.get(name, 0), incl_by.get(name, 0), calls.get(name, 0))
        for name in sorted(set(self_by) | set(calls))
        if self_by.get(name, 0) or calls.get(name, 0)
    }
    return Side(total, functions, {k: EdgeStats(n, c) for k, (n, c) in sorted(edges.items())})


def _outermost(prof: Profile, names: list[str]) -> list[int]:
    """Functions whose inclusive cost counts for their name.

    When several of a profile's functions share a name (`fib` and its recursion
    level `fib'2`; libc's `(below main)` called from the executable's), one that the
    call graph reaches from another is nested in it: its cost is already inside
    that one's inclusive cost and adding it again would count it twice.
    """
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        groups.setdefault(name, []).append(i)
    shared = [g for g in groups.values() if len(g) > 1]
    if not shared:
        return list(range(len(names)))
    callees: dict[int, list[int]] = {}
    for a, b in zip(prof.call_caller.tolist(), prof.call_callee.tolist(), strict=True):
        if a != b:
            callees.setdefault(a, []).append(b)
    nested: set[int] = set()
    for group in shared:
        # One walk from all members at once, each function keeping up to two of the
        # members it is reached from: a member reached from one other than itself is
        # nested. Two are enough (one of them is not the member), and each function is
        # entered at most twice: linear in the calls, where a walk per member is
        # quadratic.
        reached: dict[int, list[int]] = {}
        todo = [(c, m) for m in group for c in callees.get(m, ())]
        while todo:
            f, source = todo.pop()
            got = reached.setdefault(f, [])
            if source in got or len(got) == 2:
                continue
            got.append(source)
            todo.extend((c, source) for c in callees.get(f, ()))
        nested.update(m for m in group if any(s != m for s in reached.get(m, ())))
    # Members that reach each other (a cycle) would all be dropped: keep the first.
    for group in shared:
        if all(i in nested for i in group):
            nested.discard(group[0])
    return [i for i in range(len(names)) if i not in nested]


@dataclass(frozen=True)
class FunctionDelta:
    name: str
    a: FunctionStats | None  # None: not in build A's profile
    b: FunctionStats | None

    @property
    def self_delta(self) -> int:
        return (self.b.self_cost if self.b else 0) - (self.a.self_cost if self.a else 0)

    @property
    def inclusive_delta(self) -> int:
        return (self.b.inclusive if self.b else 0) - (self.a.inclusive if self.a else 0)

    @property
    def calls_delta(self) -> int:
        return (self.b.calls if self.b else 0) - (self.a.calls if self.a else 0)


@dataclass(frozen=True)
class EdgeDelta:
    caller: str
    callee: str
    a: EdgeStats | None
    b: EdgeStats | None

    @property
    def count_delta(self) -> int:
        return (self.b.count if self.b else 0) - (self.a.count if self.a else 0)


@dataclass(frozen=True)
class Alignment:
    a: Side
    b: Side
    only_a: list[FunctionDelta]  # sorted by self cost, highest first
    only_b: list[FunctionDelta]
    functions: list[FunctionDelta]  # every function that changed, by impact
    edges: list[EdgeDelta]  # every edge whose call count changed, by |Δcalls|


def _impact(d: FunctionDelta) -> tuple[int, int, str]:
    # What moves the total is the self cost; inclusive breaks ties (a caller whose
    # own code is unchanged but whose callees changed), then the name.
    return (-abs(d.self_delta), -abs(d.inclusive_delta), d.name)


def align(a: Side, b: Side) -> Alignment:
    names = sorted(set(a.functions) | set(b.functions))
    deltas = [FunctionDelta(n, a.functions.get(n), b.functions.get(n)) for n in names]
    only_a = sorted((d for d in deltas if d.b is None), key=lambda d: (d.self_delta, d.name))
    only_b = sorted((d for d in deltas if d.a is None), key=lambda d: (-d.self_delta, d.name))
    changed = [
        d
        for d in deltas
        if d.self_delta or d.inclusive_delta or d.calls_delta or d.a is None or d.b is None
    ]
    changed.sort(key=_impact)
    edge_keys = sorted(set(a.edges) | set(b.edges))
    edges = [EdgeDelta(c, e, a.edges.get((c, e)), b.edges.get((c, e))) for c, e in edge_keys]
    edges = [e for e in edges if e.count_delta]
    edges.sort(key=lambda e: (-abs(e.count_delta), e.caller, e.callee))
    return Alignment(a, b, only_a, only_b, changed, edges)
