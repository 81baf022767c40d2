"""A collected runtime's results for the compare and report tests: one real file and
cells derived from it.

runtime/node-json.json was measured (icount serve on node-http's /json only, --runs 2
--reps 3, callgrind; 2026-12-02 on the shared 2-core VM, loaded): mutator 51.33k per
request, V8's collector 4.313k ±109.4 (95%, 6 windows), total 55.64k, valid. The
derived cells change the reps' own figures (the collector's work inside each window, the
runs' mutator) so that the edge cases each rule is for are met; every other field is
the measured one.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from pathlib import Path

from icount import results
from icount.results import Cell, Results, Run
from icount.results.details import ServeDetail

NODE = Path(__file__).parent / "runtime" / "node-json.json"


def node() -> Results:
    return results.load(NODE)


def node_cell() -> Cell:
    return node().cells[0]


def derived(
    cell: Cell,
    collector: float = 1.0,
    mutator: float = 1.0,
    windows: Sequence[float] | None = None,
    name: str | None = None,
    compiler: float = 0.0,
) -> Cell:
    """`cell` with every window's collector work times `collector` (or, with `windows`,
    each run's windows' collector work times these factors in turn), `compiler`
    instructions of compiling added to each window, and every run's mutator times
    `mutator`; the windows' instructions move by the same work."""
    runs = []
    for run in cell.runs:
        d = run.detail
        assert isinstance(d, ServeDetail)
        reps = []
        for k, rep in enumerate(d.reps):
            gc = rep.collector or 0.0
            factor = windows[k % len(windows)] if windows is not None else collector
            mut = rep.instructions - rep.runtime_work
            new_gc = gc * factor
            jit = (rep.compiler or 0.0) + compiler
            count = mut * mutator + new_gc + jit
            reps.append(
                dataclasses.replace(rep, collector=new_gc, compiler=jit, instructions=count)
            )
        value = None if run.value is None else run.value * mutator
        runs.append(Run(value, run.valid, run.reason, dataclasses.replace(d, reps=tuple(reps))))
    return dataclasses.replace(cell, runs=tuple(runs), name=name or cell.name)


def without_runtime(cell: Cell) -> Cell:
    """`cell` as icount measured it before the runtime's work was counted apart: no
    runtime, no collector in its reps, and each run's figure the median of its windows'
    whole counts per request (the runtime's work in it)."""
    runs = []
    for run in cell.runs:
        d = run.detail
        assert isinstance(d, ServeDetail)
        reps = tuple(
            dataclasses.replace(r, collector=None, compiler=None, runtime_calls=None)
            for r in d.reps
        )
        whole = statistics.median(r.per_request for r in reps)
        old = dataclasses.replace(d, reps=reps, runtime=None)
        runs.append(dataclasses.replace(run, value=whole, detail=old))
    return dataclasses.replace(cell, runs=tuple(runs))


def of(cells: Sequence[Cell]) -> Results:
    return Results(
        node().fingerprint, tuple(dataclasses.replace(c, order=i) for i, c in enumerate(cells))
    )
