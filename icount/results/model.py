"""Runs, cells and results: every raw sample, the statistics derived from them, validity.

A cell is one thing measured (a command, or a server's path) under one backend, in
`runs_wanted` fresh processes. Its statistics are derived from its valid runs, never
stored apart from them: a results file whose stored statistics disagree with its runs
is refused on loading.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from icount.results.cell_profile import CellProfile
from icount.results.details import Detail, ServeDetail, arrival_of, detail_to_json
from icount.results.runtime import RuntimeFigures
from icount.results.runtime import figures as runtime_figures
from icount.results.runtime import to_json as runtime_json
from icount.results.shard import ShardRecord
from icount.stats import Summary, spread_reason, summarize

UNIT_INSTRUCTIONS = "instructions"
UNIT_PER_REQUEST = "instructions/request"


@dataclass(frozen=True)
class Run:
    """One fresh process. `value` is None when the run produced no figure."""

    value: float | None
    valid: bool
    reason: str | None = None
    detail: Detail = None

    def to_json(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "valid": self.valid,
            "reason": self.reason,
            "detail": detail_to_json(self.detail),
        }


@dataclass(frozen=True)
class Cell:
    """One measured cell. Its statistics are derived from the runs once, on first use
    (a frozen dataclass keeps them valid)."""

    name: str
    path: str
    backend: str
    unit: str
    runs: tuple[Run, ...]
    params: Mapping[str, Any]
    runs_wanted: int
    max_spread: float
    extra: Mapping[str, Any] = field(default_factory=dict)
    setup_error: str | None = None  # why the cell failed before any run (a failed build)
    # Where the cell stands in what the user asked for (the order commands and targets
    # were given): tables list rows in this order, ties by name.
    order: int = 0
    # where its instructions go, by function (results/cell_profile.py), where measured
    profile: CellProfile | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.name, self.path, self.backend)

    @property
    def key_text(self) -> str:
        return "/".join(p for p in self.key if p)

    @functools.cached_property
    def values(self) -> list[float]:
        return [r.value for r in self.runs if r.valid and r.value is not None]

    @functools.cached_property
    def summary(self) -> Summary | None:
        vals = self.values
        return summarize(vals) if vals else None

    @functools.cached_property
    def reason(self) -> str | None:
        """Why the cell is invalid, or None if it is valid."""
        if self.setup_error:
            return self.setup_error
        bad = [r for r in self.runs if not r.valid]
        if bad:
            first = bad[0].reason or "run failed"
            more = f" (and {len(bad) - 1} more failed runs)" if len(bad) > 1 else ""
            return f"run {self.runs.index(bad[0]) + 1} of {self.runs_wanted}: {first}{more}"
        if len(self.runs) < self.runs_wanted:
            return f"only {len(self.runs)} of {self.runs_wanted} runs completed"
        summary = self.summary
        if summary is None:
            return "no run produced a value"
        return spread_reason(summary, self.max_spread)

    @functools.cached_property
    def valid(self) -> bool:
        return self.reason is None

    @functools.cached_property
    def runtime(self) -> RuntimeFigures | None:
        """A collected runtime's mutator, own work and total (results/runtime.py); None
        for every other cell."""
        details = [r.detail for r in self.runs if r.valid and isinstance(r.detail, ServeDetail)]
        median = self.summary.median if self.summary else None
        idle = arrival_of(self.params) == "idle"
        return runtime_figures(details, median, self.valid, self.max_spread, idle)

    def to_json(self) -> dict[str, Any]:
        s = self.summary
        return {
            "name": self.name,
            "path": self.path,
            "backend": self.backend,
            "unit": self.unit,
            "params": dict(self.params),
            "runs_wanted": self.runs_wanted,
            "max_spread": self.max_spread,
            "runs": [r.to_json() for r in self.runs],
            "median": s.median if s else None,
            "min": s.min if s else None,
            "max": s.max if s else None,
            # None where no spread can be taken (runs differ around a median of 0)
            "spread": s.spread if s and math.isfinite(s.spread) else None,
            "valid": self.valid,
            "reason": self.reason,
            "setup_error": self.setup_error,
            "order": self.order,
            "extra": dict(self.extra),
        } | ({} if self.runtime is None else {"runtime_work": runtime_json(self.runtime)}) | (
            {} if self.profile is None else {"profile": self.profile.to_json()}
        )  # fmt: skip


def sort_key(cell: Cell) -> tuple[int, str, str, str]:
    """Cells in the order they were asked for, then by key: the order of every file."""
    return (cell.order, *cell.key)


@dataclass(frozen=True)
class Results:
    fingerprint: Mapping[str, Any]
    cells: tuple[Cell, ...]
    # Set in the file of one shard of a session (--shard I/N); None for a whole session,
    # which is also what merging all the shards of one gives back.
    shard: ShardRecord | None = None

    def sorted(self) -> Results:
        return Results(self.fingerprint, tuple(sorted(self.cells, key=sort_key)), self.shard)

    def with_cell(self, cell: Cell) -> Results:
        """A copy with `cell` added or replacing the cell of the same key."""
        kept = tuple(c for c in self.cells if c.key != cell.key)
        return Results(self.fingerprint, (*kept, cell), self.shard)
