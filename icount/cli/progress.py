"""Progress for long measurements: a rich bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
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
        start = time.monotonic()

        def plain(text: str, done: int, total: int) -> None:
            if text != "done":
                typer.echo(plain_line(text, done, total, time.monotonic() - start), err=True)

        yield plain
        return

    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task("starting", total=None)

    def fancy(text: str, done: int, total: int) -> None:
        bar.update(task, description=text, completed=done, total=total)

    with bar:
        yield fancy


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def plain_line(text: str, done: int, total: int, elapsed: float) -> str:
    """One progress line for a log (no TTY, so no bar): the work done of the whole, and
    once some is done, the session's time so far and what is left at that pace (a rough
    guide: cells differ in cost, and the units are runs)."""
    if not total:
        return f"icount: {text}"
    line = f"icount: [{done}/{total}] {text}"
    if 0 < done < total:
        left = elapsed / done * (total - done)
        line += f" [session {_minutes(elapsed)} in, ~{_minutes(left)} left]"
    return line
