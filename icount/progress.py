"""The one shape of progress reports core code sends while it measures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

# (what is running now, units of work done, units in all; 0 in all: not counted yet)
Progress = Callable[[str, int, int], None]


@runtime_checkable
class Paced(Protocol):
    """A progress that shows the time left as the measuring code estimates it from what
    its work costs (icount/eta.py), where the units done would count a run of a big
    cell like one of a small one."""

    def __call__(self, text: str, done: int, total: int) -> None: ...

    def time_left(self, seconds: float | None) -> None:
        """The seconds left from now; None: nothing measured yet to estimate from."""


def tell_time_left(progress: Progress, seconds: float | None) -> None:
    """Gives a progress that shows it the time left; any other has no use for it."""
    if isinstance(progress, Paced):
        progress.time_left(seconds)
