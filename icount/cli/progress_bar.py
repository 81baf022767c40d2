"""The progress bar on a terminal: rich's, imported only where one is drawn."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text


class TimeLeftColumn(TimeRemainingColumn):
    """The time left the measuring code told (progress.Paced), counted down since on
    `clock`; rich's own from the units done where it told none."""

    def __init__(self, clock: Callable[[], float]) -> None:
        super().__init__()
        self._clock = clock

    def render(self, task: Task) -> Text:
        told = task.fields.get("left")
        if told is None or task.total is None:
            return super().render(task)
        seconds, at = told
        minutes, secs = divmod(int(max(seconds - (self._clock() - at), 0.0)), 60)
        hours, minutes = divmod(minutes, 60)
        return Text(f"{hours:d}:{minutes:02d}:{secs:02d}", style="progress.remaining")


class Bar:
    """A progress bar with the work done, the time so far and the time left, on stderr."""

    def __init__(self, console: Console | None = None, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeLeftColumn(clock),
            console=console or Console(stderr=True),
            transient=True,
            get_time=clock,
        )
        self.task: TaskID = self.bar.add_task("starting", total=None)
        self._left: tuple[float, float] | None = None

    def time_left(self, seconds: float | None) -> None:
        self._left = None if seconds is None else (seconds, self._clock())

    def __call__(self, text: str, done: int, total: int) -> None:
        self.bar.update(self.task, description=text, completed=done, total=total, left=self._left)
