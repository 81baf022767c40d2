"""The runs of one serve cell, one after the other, each on a fresh server, with their
progress: the run loop of a cell, before anything is made of what the runs measured
(serve/cell_windows.py) or added to it (serve/cell_extras.py).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from icount import cpus as cpus_mod
from icount import environment, eta, jobs
from icount.progress import Progress, tell_time_left
from icount.results.details import ServeDetail
from icount.serve.adapter import PathSpec
from icount.serve.cell_options import CellOptions
from icount.serve.runs import RunOutcome, WindowMethod, measure_cold_start, measure_run
from icount.serve.server import Target


@dataclass
class Learnt:
    """What the runs of a session learn on the way, shared by its cells (by the threads
    of cells measured at once): how windows are taken, decided by the first run that
    gets so far, and the client's throughput of every run (provenance, not a result)."""

    window: WindowMethod | None = None
    client_rps: dict[str, list[list[float]]] = field(default_factory=dict)


@dataclass(frozen=True)
class CellRuns:
    """One cell to run: its target, its path and how every run is measured."""

    target: Target
    path: PathSpec
    opts: CellOptions
    artifacts: Path  # the session's artifacts folder: each run's files under runs/

    @property
    def key(self) -> str:
        # no square brackets: the progress bar reads its text as rich markup
        return f"{self.target.adapter.name}/{self.path.name}/{self.opts.backend.name}"

    @property
    def work(self) -> eta.Work:
        """What its runs cost, for the time left: the requests each sends (a fixed
        warm-up's and every rep's), alike the same target's other paths first; a cold
        start, one request after a server's start, is alike only other cold starts."""
        kind = "cold-start" if self.path.cold_start else "requests"
        opts = self.opts
        cost = 1 if self.path.cold_start else (opts.warmup.count or 0) + opts.reps * opts.requests
        return eta.Work(opts.runs, float(cost), (f"{self.target.adapter.name}\0{kind}", kind))

    def run_dir(self, i: int) -> Path:
        safe = environment.safe_name
        name, path = safe(self.target.adapter.name), safe(self.path.name)
        return self.artifacts / "runs" / name / path / f"run-{i + 1}"


@dataclass(frozen=True)
class Reporter:
    """Where a cell's runs report: the session's progress and the runs it counts, its
    time left, and the job that stops the cell when the session stops."""

    progress: Progress
    counter: jobs.Tally
    pace: eta.Pace
    job: jobs.Job

    def note(self, head: str, key: str | None, text: str) -> None:
        """One progress line of the cell (`key`: with its time left, where known)."""
        self.job.check()  # a cell still running when the session stops ends here
        left = None if key is None else self.pace.cell_left(key)
        tell_time_left(self.progress, self.pace.left())
        said = f"{head}: {text}" if left is None else f"{head}: {text} ({_eta_text(left)})"
        self.progress(said, self.counter.done, self.counter.total)


def _eta_text(seconds: float) -> str:
    return f"cell eta {seconds:.0f} s" if seconds < 120 else f"cell eta {seconds / 60:.1f} min"


def run_cell(cell: CellRuns, learnt: Learnt, report: Reporter) -> list[RunOutcome]:
    """Every run of the cell on its load CPUs, until one fails (its reason is the cell's):
    their outcomes, in order. The session's tally counts every run the cell was to take."""
    key, runs, pace = cell.key, cell.opts.runs, report.pace
    target, path, opts = cell.target, cell.path, cell.opts
    outcomes: list[RunOutcome] = []
    with cpus_mod.pinned_self(cell.opts.cpus.load):
        for i in range(runs):
            report.job.check()
            pace.begin(key)
            noted = functools.partial(report.note, f"{key} run {i + 1}/{runs}", key)
            if path.cold_start:
                outcome = measure_cold_start(target, path, opts, cell.run_dir(i), noted)
            else:
                earlier = [o.detail for o in outcomes
                           if o.reason is None and isinstance(o.detail, ServeDetail)]  # fmt: skip
                run_dir = cell.run_dir(i)
                outcome = measure_run(target, path, opts, run_dir, learnt.window, noted, earlier, i)
            if learnt.window is None:
                learnt.window = outcome.window
            learnt.client_rps.setdefault(key, []).append(list(outcome.client_rps))
            pace.end(key, measured=outcome.reason is None)
            outcomes.append(outcome)
            report.counter.add(1)
            if outcome.reason is not None:
                break
    no_more_runs(cell, report, len(outcomes))
    return outcomes


def no_more_runs(cell: CellRuns, report: Reporter, taken: int = 0) -> None:
    """The cell takes no more runs than `taken` (none: its target cannot start): the
    tally counts the rest as done, and its time left is none."""
    report.pace.finish(cell.key)
    report.counter.add(cell.opts.runs - taken)
