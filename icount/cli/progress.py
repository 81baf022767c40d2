"""Progress for long measurements: a rich bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
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

        def plain(text: str, done: int, total: int) -> None:
            if text != "done":
                count = f"[{done}/{total}] " if total else ""
                typer.echo(f"icount: {count}{text}", err=True)

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
