"""Progress for long measurements: a rich bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import typer

from icount.progress import Progress as Callback


@contextmanager
def progress(quiet: bool) -> Iterator[Callback]:
    """Yields a callback (text, done, total). On a TTY a rich bar with ETA goes to stderr."""
    if quiet:
        yield lambda text, done, total: None
        return
    if not sys.stderr.isatty():
        yield PlainLines()
        return

    from icount.cli.progress_bar import Bar

    bar = Bar()
    with bar.bar:
        yield bar


class PlainLines:
    """Progress as lines on stderr (`plain_line`), timed on `clock`; a measuring code
    that estimates its time left by what its work costs tells it (progress.Paced)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._start = clock()
        self._left: float | None = None

    def time_left(self, seconds: float | None) -> None:
        self._left = seconds

    def __call__(self, text: str, done: int, total: int) -> None:
        if text != "done":
            elapsed = self._clock() - self._start
            typer.echo(plain_line(text, done, total, elapsed, self._left), err=True)


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def plain_line(text: str, done: int, total: int, elapsed: float, left: float | None = None) -> str:
    """One progress line for a log (no TTY, so no bar): the work done of the whole, and
    once some is done, the session's time so far and what is left: `left`, the measuring
    code's estimate by what its work costs, where it gives one; else the pace of the
    units done so far (a rough guide where units differ in cost)."""
    if not total:
        return f"icount: {text}"
    line = f"icount: [{done}/{total}] {text}"
    if 0 < done < total:
        left = elapsed / done * (total - done) if left is None else left
        line += f" [session {_minutes(elapsed)} in, ~{_minutes(left)} left]"
    return line
