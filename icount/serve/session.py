"""All the cells of one `icount serve`: build targets, measure every path, save as we go.

The results file is written (atomically) after every cell, so an interrupted session
loses at most the cell in progress; `--resume FILE` starts from that file's cells
and measures only the missing ones, refusing when the file was measured in another
environment or with other parameters.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icount import environment
from icount.errors import RunFailedError, UsageError
from icount.results import UNIT_PER_REQUEST, Cell, Results, Run
from icount.serve.method import (
    MethodOptions,
    Target,
    WindowChoice,
    cell_params,
    comparable_params,
    measure_run,
    request_identity,
)

Progress = Callable[[str, int, int], None]


@dataclass
class SessionState:
    """What the session learnt on the way, for the provenance."""

    window: WindowChoice = field(default_factory=WindowChoice)
    built: dict[str, str] = field(default_factory=dict)  # adapter -> "built" or why not
    resumed: list[str] = field(default_factory=list)
    # Client throughput varies from run to run: it is provenance, not a result.
    client_rps: dict[str, list[list[float]]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "client_rps_per_run_and_rep": dict(sorted(self.client_rps.items())),
            "callgrind_window": {"method": self.window.method, "why": self.window.why},
            "builds": dict(sorted(self.built.items())),
            "resumed_cells": sorted(self.resumed),
        }


def check_resume(
    previous: Results, fingerprint: Mapping[str, Any], planned: Mapping[tuple[str, str, str], Any]
) -> None:
    """Refuse to continue a file whose cells are not comparable with this session's."""
    foreign = sorted(c.key_text for c in previous.cells if c.unit != UNIT_PER_REQUEST)
    if foreign:
        raise UsageError(
            f"the file to resume holds cells that are not from icount serve ({', '.join(foreign)})",
            hint="start a new results file with -o",
        )
    diff = environment.fingerprint_differences(previous.fingerprint, fingerprint, same_method=True)
    if diff:
        raise UsageError(
            f"the file to resume was measured in another environment (differs in "
            f"{', '.join(diff)})",
            hint="start a new results file with -o",
        )
    for cell in previous.cells:
        want = planned.get(cell.key)
        if want is not None and comparable_params(cell.params) != comparable_params(want):
            raise UsageError(
                f"{cell.key_text} in the file to resume was measured with other parameters "
                f"({_param_diff(cell.params, want)})",
                hint="use the same options, or start a new results file with -o",
            )


def _param_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    a, b = comparable_params(old), comparable_params(new)
    return ", ".join(f"{k} {a[k]!r} there, {b[k]!r} now" for k in a if a[k] != b[k])


def _build(targets: Sequence[Target], state: SessionState, progress: Progress) -> None:
    from icount.serve.adapter import build_adapter

    for t in targets:
        if not t.adapter.build:
            state.built[t.adapter.name] = "nothing to build"
            continue
        progress(f"building {t.adapter.name}", 0, 0)
        try:
            build_adapter(t.adapter, t.build_dir)
            state.built[t.adapter.name] = "built"
        except RunFailedError as e:
            state.built[t.adapter.name] = f"build failed: {e}"


def _eta(durations: Sequence[float], left: int) -> str:
    if not durations:
        return ""  # nothing measured yet to estimate from
    secs = sum(durations) / len(durations) * left
    return f"cell eta {secs:.0f} s" if secs < 120 else f"cell eta {secs / 60:.1f} min"


def _note(progress: Progress, head: str, eta: str, done: int, total: int, text: str) -> None:
    progress(f"{head}: {text} ({eta})" if eta else f"{head}: {text}", done, total)


def run_session(
    targets: Sequence[Target],
    options: Callable[[Target], MethodOptions],
    artifacts: Path,
    start: Results,
    progress: Progress,
    on_cell: Callable[[Results], None],
    state: SessionState,
    extra: Callable[[Target], Mapping[str, Any]] = lambda t: {},
) -> Results:
    """Measure every (target, path) cell missing from `start`; returns all cells."""
    done_keys = {c.key for c in start.cells}
    todo = [
        (t, p)
        for t in targets
        for p in t.adapter.paths
        if (t.adapter.name, p.name, options(t).backend) not in done_keys
    ]
    state.resumed = [c.key_text for c in start.cells]
    _build(sorted({t.adapter.name: t for t, _ in todo}.values(), key=lambda t: t.adapter.name),
           state, progress)  # fmt: skip
    results = start
    total = sum(options(t).runs for t, _ in todo)
    finished = 0
    per_target: dict[str, list[float]] = {}
    for t, p in todo:
        opts = options(t)
        # no square brackets: the progress bar reads its text as rich markup
        key = f"{t.adapter.name}/{p.name}/{opts.backend}"
        runs: list[Run] = []
        built = state.built.get(t.adapter.name, "")
        invalid_reason = built if built.startswith("build failed") else None
        history = per_target.setdefault(t.adapter.name, [])
        for i in range(opts.runs if invalid_reason is None else 0):
            t0 = time.monotonic()
            left = opts.runs - i

            head = f"{key} run {i + 1}/{opts.runs}"
            eta = _eta(history, left)
            note = functools.partial(_note, progress, head, eta, finished, total)
            safe = environment.safe_name
            run_dir = artifacts / "runs" / safe(t.adapter.name) / safe(p.name) / f"run-{i + 1}"
            value, reason, detail = measure_run(t, p, opts, run_dir, state.window, note)
            rps = [rep.pop("client_rps") for rep in detail.get("reps", []) if "client_rps" in rep]
            state.client_rps.setdefault(key, []).append(rps)
            history.append(time.monotonic() - t0)
            runs.append(Run(value, reason is None, reason, detail))
            finished += 1
            if reason is not None:
                break
        finished += opts.runs - len(runs) if invalid_reason is None else opts.runs
        request = next((r.detail["request"] for r in runs if "request" in r.detail), None)
        params = cell_params(p, opts)
        params.update(request or request_identity(None))
        cell = Cell(
            name=t.adapter.name,
            path=p.name,
            backend=opts.backend,
            unit=UNIT_PER_REQUEST,
            runs=tuple(runs),
            params=params,
            runs_wanted=opts.runs,
            max_spread=opts.max_spread,
            extra=dict(extra(t)),
            invalid_reason=invalid_reason,
        )
        results = results.with_cell(cell)
        on_cell(results)
    progress("done", total, total)
    return results
