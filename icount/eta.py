"""The time a session has left, by what its work costs rather than by how many runs.

A cell's runs are not alike across cells: a run of 10,000 requests to a Python server
under callgrind takes a hundred times one of 1,000 to a C server. Each cell's work is
given in units of what a run costs (for `icount serve`, the requests a run sends); its
rate (seconds a unit) is measured from its own runs as they end. A cell none of whose
runs has ended yet takes the rate of the cells like it measured so far, the likest
first (the same target's other paths, then any cell of its kind); one like none takes
the mean time of the runs so far, as a count of runs would. What a cell does beside
its runs (--memory's native runs) is in its rate once the cell has ended.

A cell's own time left (`cell_left`) is told only from its own runs or those of its
likest group: a rate borrowed from other targets (a C server's for a Python one) can be
off many times over, so only the session's time left (`left`) takes it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Work:
    """One cell's work: its runs, the units of cost each takes, and the groups of cells
    whose rate it takes before any run of its own has ended, the likest first (the
    first is its own kind: a figure from further ones is the session's only)."""

    runs: int
    units: float
    likes: tuple[str, ...] = ()


@dataclass
class _Cell:
    work: Work
    begun: int = 0  # runs begun, the running one included
    seconds: float = 0.0  # of its ended runs that measure a rate
    units: float = 0.0  # the same runs' units
    running_since: float | None = None
    finished: bool = False
    started: float | None = None  # when the cell began, where told (Pace.start)
    ran: float = 0.0  # seconds of all its runs, failed ones too
    beside: float = 0.0  # seconds beside its runs, counted in `seconds`


class Pace:
    """Time left of a session's cells (`Work` by key), timed on `clock`. Safe to call
    from the threads of cells measured at once (--jobs), whose time is shared: the
    session's time left is the cells' divided by `jobs`, never less than its longest
    cell's (a cell's runs are one after the other)."""

    def __init__(
        self,
        work: Mapping[str, Work],
        jobs: int = 1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cells = {key: _Cell(w) for key, w in work.items()}
        self._jobs = max(jobs, 1)
        self._clock = clock
        self._lock = threading.Lock()
        self._run_seconds: list[float] = []  # every run that measures a rate

    def start(self, key: str) -> None:
        """The cell begins: what it does besides its runs, until `finish`, is added to
        what its runs cost."""
        with self._lock:
            self._cells[key].started = self._clock()

    def begin(self, key: str) -> None:
        """A run of the cell begins."""
        with self._lock:
            cell = self._cells[key]
            cell.begun += 1
            cell.running_since = self._clock()

    def end(self, key: str, measured: bool = True) -> None:
        """The cell's run ended; `measured`: its time says what a run costs (not a run
        that failed at once: its cell ends with it)."""
        with self._lock:
            cell = self._cells[key]
            if cell.running_since is None:
                return
            took = self._clock() - cell.running_since
            cell.running_since = None
            cell.ran += took
            if measured:
                cell.seconds += took
                cell.units += cell.work.units
                self._run_seconds.append(took)

    def finish(self, key: str) -> None:
        """The cell has no run left (all done, or one failed and ended it, or none can
        start); told again when it ends. Begun by `start`, its time beside its runs
        counts in its rate, and so in that of the cells like it."""
        with self._lock:
            cell = self._cells[key]
            if cell.started is not None and cell.units:
                beside = max(self._clock() - cell.started - cell.ran, 0.0)
                cell.seconds += beside - cell.beside  # told again: what it did since
                cell.beside = beside
            cell.finished = True
            cell.running_since = None

    def cell_left(self, key: str) -> float | None:
        """Seconds until the cell's last run ends, by its own runs or its likest group's:
        None before one of those has ended."""
        with self._lock:
            return self._left(self._cells[key], self._clock(), borrow=False)

    def left(self) -> float | None:
        """Seconds until the session's last cell ends: None before anything was measured."""
        with self._lock:
            now = self._clock()
            lefts = [self._left(c, now) for c in self._cells.values()]
        known = [v for v in lefts if v is not None]
        if len(known) < len(lefts):
            return None
        return max(sum(known) / self._jobs, max(known, default=0.0))

    def _left(self, cell: _Cell, now: float, borrow: bool = True) -> float | None:
        if cell.finished:
            return 0.0
        run = self._run_cost(cell, borrow)
        if run is None:
            return None
        waiting = max(cell.work.runs - cell.begun, 0) * run
        if cell.running_since is None:
            return waiting
        return waiting + max(run - (now - cell.running_since), 0.0)

    def _run_cost(self, cell: _Cell, borrow: bool = True) -> float | None:
        """Seconds one run of the cell takes: its own rate, else its likest group's,
        then (`borrow`) a further group's, else the mean run so far; None before any of
        those ended."""
        if cell.units:
            return cell.seconds / cell.units * cell.work.units
        for group in cell.work.likes[: None if borrow else 1]:
            alike = [c for c in self._cells.values() if group in c.work.likes and c.units]
            if alike:
                rate = sum(c.seconds for c in alike) / sum(c.units for c in alike)
                return rate * cell.work.units
        if not borrow or not self._run_seconds:
            return None
        return sum(self._run_seconds) / len(self._run_seconds)
