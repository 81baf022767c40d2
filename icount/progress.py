"""The one shape of progress reports core code sends while it measures."""

from __future__ import annotations

from collections.abc import Callable

# (what is running now, units of work done, units in all; 0 in all: not counted yet)
Progress = Callable[[str, int, int], None]
