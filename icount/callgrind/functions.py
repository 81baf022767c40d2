"""A parsed profile's functions as a cell keeps them (results/cell_profile.py): self and
inclusive `Ir` and calls by name, and the calls into the allocator.

An allocation is a call into one of the allocator's entry points from code that is not
the allocator: C++'s `operator new` calls `malloc`, Rust's `__rust_alloc` calls
`__rdl_alloc` then `malloc`, CPython's `PyObject_Malloc` calls `_PyObject_Malloc`; each
of those is one allocation the program asked for, not two or three.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

import numpy as np

from icount.callgrind.model import Function, Profile
from icount.names import ADDRESS
from icount.startup import BELOW_MAIN, PROGRAM_ENTRY
from icount.window_profile import PROFILE_TOP, FunctionCost, WindowProfile

# Entry points that hand out memory, by the name callgrind shows (the parameter list of
# a demangled C++ name left out), and those that take it back.
ALLOCATING = frozenset({
    # C (glibc's own names for the same code too)
    "malloc", "calloc", "realloc", "reallocarray", "memalign", "aligned_alloc",
    "posix_memalign", "valloc", "pvalloc", "__libc_malloc", "__libc_calloc",
    "__libc_realloc", "__libc_memalign", "__malloc", "__calloc", "__realloc",
    # jemalloc, mimalloc, tcmalloc
    "je_malloc", "je_calloc", "je_realloc", "mi_malloc", "mi_calloc", "mi_realloc",
    "tc_malloc", "tc_calloc", "tc_realloc", "tc_new", "tc_newarray",
    # C++
    "operator new", "operator new[]",
    # Rust
    "__rust_alloc", "__rust_alloc_zeroed", "__rust_realloc", "__rdl_alloc",
    "__rdl_alloc_zeroed", "__rdl_realloc", "__rg_alloc", "__rg_alloc_zeroed", "__rg_realloc",
    # Go
    "runtime.mallocgc",
    # CPython's object and memory allocators
    "PyObject_Malloc", "PyObject_Calloc", "PyObject_Realloc", "_PyObject_Malloc",
    "_PyObject_Calloc", "_PyObject_Realloc", "PyMem_Malloc", "PyMem_Calloc", "PyMem_Realloc",
    "PyMem_RawMalloc", "PyMem_RawCalloc", "PyMem_RawRealloc", "_PyMem_RawMalloc",
    "_PyMem_RawCalloc", "_PyMem_RawRealloc", "pymalloc_alloc",
})  # fmt: skip
FREEING = frozenset({
    "free", "cfree", "__libc_free", "__free", "je_free", "mi_free", "tc_free", "tc_delete",
    "tc_deletearray", "operator delete", "operator delete[]", "__rust_dealloc", "__rdl_dealloc",
    "__rg_dealloc", "PyObject_Free", "_PyObject_Free", "PyMem_Free", "PyMem_RawFree",
    "_PyMem_RawFree", "pymalloc_free",
})  # fmt: skip


# Valgrind names each function below main `(below main)`: the program's `_start`, glibc's
# `__libc_start_main` and (from 2.34) `__libc_start_call_main` alike. Pooled by name, the
# chain _start -> __libc_start_main -> __libc_start_call_main -> main is a cycle counted
# twice over; callgrind keeps them apart by file and object, and so are they named here.
_BELOW_MAIN_FILES = (("libc-start.c", "__libc_start_main"),
                     ("libc_start_call_main.h", "__libc_start_call_main"))  # fmt: skip
# The dynamic loader's entry point has no symbol (Debian's ld.so keeps only .dynsym):
# callgrind names it by address, but it is where the process starts.
_LOADER = re.compile(r"ld-linux[^/]*\.so[^/]*|ld\.so[^/]*|ld-musl[^/]*\.so[^/]*|ld64\.so[^/]*")


def _start_up_names(prof: Profile, ir: int) -> list[str]:
    """Each function's name, the start-up code's told apart (above): of several
    `(below main)`, the one that calls `main` keeps the name, the others are named from
    their file (`_start` where it says nothing); a symbol-less function of the loader
    that no call enters is the program's entry. In a stripped program (no `main`), the
    symbol-less code the entry calls in another object is its `_start`, and the costliest
    that a `(below main)` calls in another object its `main`: pooled with the rest of
    the code without a symbol, they would make the start-up code a cycle again."""
    names = [f.name for f in prof.functions]
    funcs = prof.functions
    called = np.zeros(len(names), dtype=bool)
    called[prof.call_callee] = True
    caller, callee = prof.call_caller.tolist(), prof.call_callee.tolist()
    below = [i for i, n in enumerate(names) if n == BELOW_MAIN]
    if len({(funcs[i].file, funcs[i].object) for i in below}) > 1:
        calls_main = {a for a, b in zip(caller, callee, strict=True) if names[b] == "main"}
        for i in below:
            if i not in calls_main:
                names[i] = _below_main_name(funcs[i])
    for i, f in enumerate(funcs):
        if (
            not called[i]
            and ADDRESS.fullmatch(f.name)
            and _LOADER.fullmatch(PurePosixPath(f.object).name)
        ):
            names[i] = PROGRAM_ENTRY
    if "main" in names:
        return names
    cost = prof.call_cost[:, ir].tolist()
    main: dict[int, tuple[float, int]] = {}  # (below main) -> its costliest such callee
    for k, (a, b) in enumerate(zip(caller, callee, strict=True)):
        if not ADDRESS.fullmatch(names[b]) or funcs[a].object == funcs[b].object:
            continue
        if names[a] == PROGRAM_ENTRY:
            names[b] = "_start"
        elif names[a] == BELOW_MAIN and (cost[k], -b) > main.get(a, (-1.0, 0)):
            main[a] = (cost[k], -b)
    for _, b in main.values():
        names[-b] = "main"
    return names


def _below_main_name(f: Function) -> str:
    for file, name in _BELOW_MAIN_FILES:
        if f.file.endswith(file):
            return name
    return "_start"


def allocator_kind(name: str) -> int:
    """1 for an entry point that allocates, 2 for one that frees, 0 for any other."""
    base = name.split("(", 1)[0].strip()
    if "'" in base:  # a recursion level (callgrind's name'2): the same entry point
        base = base.split("'", 1)[0]
    base = base.split("@", 1)[0]  # a versioned symbol: malloc@@GLIBC_2.2.5
    if base in ALLOCATING:
        return 1
    if base in FREEING:
        return 2
    return 0


def window_profile(prof: Profile, top: int = PROFILE_TOP) -> WindowProfile:
    """The functions of one profile file (one process's window) by name."""
    ir = prof.event_index("Ir")
    own = prof.self_cost[:, ir].tolist()
    incl = prof.inclusive_cost()[:, ir].tolist()
    n = len(prof.functions)
    caller, callee, count = prof.call_caller, prof.call_callee, prof.call_count
    calls = np.bincount(callee, weights=count, minlength=n) if len(callee) else np.zeros(n)
    names = _start_up_names(prof, ir)
    costs: dict[str, FunctionCost] = {}
    for i, name in enumerate(names):
        c = FunctionCost(float(own[i]), float(incl[i]), int(calls[i]))
        if not (c.self_ir or c.inclusive or c.calls):
            continue
        had = costs.get(name)
        costs[name] = c if had is None else FunctionCost(
            had.self_ir + c.self_ir, had.inclusive + c.inclusive, had.calls + c.calls
        )  # fmt: skip
    edges: dict[tuple[str, str], float] = {}
    edge_cost = prof.call_cost[:, ir].tolist()
    for a, b, cost in zip(caller.tolist(), callee.tolist(), edge_cost, strict=True):
        if a != b and cost:
            key = (names[a], names[b])
            edges[key] = edges.get(key, 0.0) + float(cost)
    kind = np.array([allocator_kind(f.name) for f in prof.functions], dtype=np.int64)
    if not len(callee) or not kind.any():
        return WindowProfile(costs, 0, 0, top, edges)
    outside = kind[caller] == 0  # a call from the allocator to itself is not the program's
    into = kind[callee]
    allocs = int(count[outside & (into == 1)].sum())
    frees = int(count[outside & (into == 2)].sum())
    return WindowProfile(costs, allocs, frees, top, edges)
