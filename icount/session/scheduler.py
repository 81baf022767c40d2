"""One session of cells, for `icount run` and `icount serve` alike.

A command hands over its plan (every cell, in order, with what it needs to measure
it) and a function that measures one cell; the scheduler picks the cells this process
measures (its shard's, --shard, not already in the file being resumed), runs them
--jobs at a time (icount/jobs.py) and saves the results file, atomically, with its
provenance, after every cell: an interrupted session loses at most the cells in
progress, and `--resume` continues from what was saved.

Each cell runs in a working directory named after the cell, never after the job slot
that happens to run it: Python hashes that name (HOME, sys.path), so a name that
depended on the slot made --jobs 2 count differently from --jobs 1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from icount import environment, jobs, results
from icount.progress import Progress
from icount.results import Cell, Results

T = TypeVar("T")
CellKey = tuple[str, str, str]  # name, path, backend


@dataclass(frozen=True)
class Planned(Generic[T]):
    """A cell of the plan: its key, its place in the whole plan, the runs it takes
    (for the progress) and what the command measures it from."""

    key: CellKey
    order: int
    runs: int
    item: T


# measures one cell: (the planned cell, its job, the session's tally of runs)
MeasureCell = Callable[[Planned[T], jobs.Job, jobs.Tally], Cell]


@dataclass
class Saver:
    """Writes the results file and its provenance (what the session learnt so far)."""

    out: Path
    recorder: environment.ProvenanceRecorder
    provenance: Callable[[], Mapping[str, Any]]

    def __call__(self, res: Results) -> None:
        results.save(self.out, res, self.recorder.finish(self.provenance()), overwrite=True)


def todo(planned: Sequence[Planned[T]], start: Results) -> list[Planned[T]]:
    """The cells this process measures: its shard's (all without one), less those the
    file being resumed holds already."""
    done = {c.key for c in start.cells}
    mine = None if start.shard is None else {e.key for e in start.shard.assigned()}
    return [p for p in planned if p.key not in done and (mine is None or p.key in mine)]


def work_dir_key(key: CellKey) -> str:
    """What a cell's working directory is named after: the cell, not its backend
    (both backends of one cell then run in the same directory)."""
    name, path, _ = key
    return f"{name}\0{path}"


def measure_cells(
    cells: Sequence[Planned[T]],
    start: Results,
    measure: MeasureCell[T],
    save: Callable[[Results], None],
    *,
    jobs_at_once: int = 1,
    progress: Progress | None = None,
) -> Results:
    """Measure `cells` (see `todo`), `jobs_at_once` at a time, into `start`'s cells;
    saves after each cell and once at the end (an empty shard still leaves its file,
    for the merge to count). Returns every cell."""
    counter = jobs.Tally(sum(p.runs for p in cells))
    res = start

    def work(p: Planned[T], job: jobs.Job) -> Cell:
        with environment.work_dirs_named(work_dir_key(p.key)):
            return measure(p, job, counter)

    def done(p: Planned[T], cell: Cell) -> None:
        nonlocal res
        res = res.with_cell(cell)
        save(res)

    jobs.run_jobs(cells, max(jobs_at_once, 1), work, done)
    if progress:
        progress("done", counter.total, counter.total)
    save(res)
    return res
