"""Names for the code callgrind could name only by address, from the function table a
stripped Go binary keeps (`size/gopclntab.py`).

Without symbols callgrind names a function by the address of the block it was entered
at, relative to its object's load bias (`0x00000000004583e0`, callgrind's fn.c): the
address the binary was linked at, which is what the table holds. Several blocks of one
function are then several functions, and a jump between them is a call; named, they are
one function again, and so merged here: self costs summed, calls between its blocks
calls of the function to itself (left out of its inclusive cost, as recursion is).
Without this a stripped Go server's profile names no runtime function: Go is not
detected, and its collector and scheduler are not counted apart.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from icount.callgrind.model import Function, Profile
from icount.errors import ParseError
from icount.size.gopclntab import go_functions

_ADDRESS = re.compile(r"0x([0-9a-fA-F]+)('[0-9]+)?")


def name_go_functions(prof: Profile) -> Profile:
    """`prof` with the functions named by address in a Go binary named from its table
    and merged by name; `prof` itself when there are none. A binary whose table cannot
    be read leaves its addresses as they were: the profile is still the profile."""
    wanted: dict[str, list[tuple[int, re.Match[str]]]] = {}
    for i, f in enumerate(prof.functions):
        m = _ADDRESS.fullmatch(f.name)
        if m:
            wanted.setdefault(f.object, []).append((i, m))
    names = [f.name for f in prof.functions]
    renamed = False
    for obj, found in wanted.items():
        try:
            table = go_functions(obj)
        except ParseError:
            table = None
        if table is None:
            continue
        at = table.index([int(m.group(1), 16) for _, m in found])
        for (i, m), k in zip(found, at, strict=True):
            if k < 0:
                continue
            try:
                names[i] = table.name(k) + (m.group(2) or "")  # a recursion level keeps its mark
            except ParseError:
                continue
            renamed = True
    if not renamed:
        return prof
    return _merged(
        prof, [Function(n, f.file, f.object) for n, f in zip(names, prof.functions, strict=True)]
    )


def _merged(prof: Profile, functions: list[Function]) -> Profile:
    """`prof` with `functions` for its functions, those now alike made one."""
    unique: dict[Function, int] = {}
    new = np.array([unique.setdefault(f, len(unique)) for f in functions], dtype=np.int64)
    self_cost = np.zeros((len(unique), prof.self_cost.shape[1]), dtype=np.int64)
    np.add.at(self_cost, new, prof.self_cost)
    caller, callee = new[prof.call_caller], new[prof.call_callee]
    edge_keys = caller * len(unique) + callee
    keys, edge = np.unique(edge_keys, return_inverse=True)
    edge = edge.reshape(-1)
    count = np.zeros(len(keys), dtype=np.int64)
    np.add.at(count, edge, prof.call_count)
    cost = np.zeros((len(keys), prof.call_cost.shape[1]), dtype=np.int64)
    np.add.at(cost, edge, prof.call_cost)
    lines = prof.lines
    if lines is not None:
        lines = dataclasses.replace(
            lines,
            function=new[lines.function],
            edge=np.append(edge, -1)[lines.edge],  # -1 (a self cost line) stays -1
        )
    return dataclasses.replace(
        prof,
        functions=list(unique),
        self_cost=self_cost,
        call_caller=keys // len(unique),
        call_callee=keys % len(unique),
        call_count=count,
        call_cost=cost,
        lines=lines,
    )
