"""What a serve cell holds beside its runs: the params it was measured with, what the
table shows beside its counts (the target's sizes and build, read once for the session;
why its windows differ; its notes), and, with --memory, its native runs' peaks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from copy import deepcopy
from typing import Any

from icount import cpus as cpus_mod
from icount.results.details import ServeParams, request_params
from icount.serve import native, spread
from icount.serve.cell_runs import CellRuns, Reporter
from icount.serve.cell_windows import Gathered
from icount.serve.plan import cell_params
from icount.spread_note import NOTES


def params(cell: CellRuns, got: Gathered) -> ServeParams:
    """The cell's params: its options, and the request and connection its runs used."""
    out = cell_params(cell.path, cell.opts)
    out.update(request_params(got.request))  # type: ignore[typeddict-item]
    if got.connection is not None:  # absent: keep-alive, as in files from before it was recorded
        out["connection"] = got.connection
    return out


def extra(
    beside: Mapping[str, Any], got: Gathered, max_spread: float, collectors: Sequence[str]
) -> dict[str, Any]:
    """What the table shows beside the counts: `beside` (the target's, serve/targets.py
    shown_beside), why the windows differ where they differ enough to ask, and the
    notes of the runs and of the names in their windows."""
    out = deepcopy(dict(beside))  # `beside` is the target's, shared by all its cells
    explained = spread.explain(got.windows, max_spread)
    if explained is not None:
        out["spread_explained"] = explained
    notes = [*got.notes, *spread.naming_notes(got.windows, collectors)]
    if notes:
        out[NOTES] = notes
    return out


def memory_peaks(cell: CellRuns, got: Gathered, report: Reporter) -> dict[str, Any] | None:
    """--memory: the peaks of native runs after the counted ones, on the cell's load
    CPUs (the cell's extra holds them under memory.KEY); None where there are none to
    take (serve/native.py cell_peaks)."""

    def note(text: str) -> None:
        report.note(f"{cell.key} memory", None, text)

    with cpus_mod.pinned_self(cell.opts.cpus.load):
        peaks = native.cell_peaks(
            cell.target, cell.path, cell.opts, got.runs, cell.artifacts / "runs", note
        )
    return peaks
