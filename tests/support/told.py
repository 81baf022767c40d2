"""A progress that keeps every line with the time left it was told before it
(icount/progress.Paced), for the tests of the time left."""

from __future__ import annotations


class Told:
    def __init__(self) -> None:
        self.left: float | None = None
        self.lines: list[tuple[str, float | None]] = []

    def time_left(self, seconds: float | None) -> None:
        self.left = seconds

    def __call__(self, text: str, done: int, total: int) -> None:
        self.lines.append((text, self.left))
