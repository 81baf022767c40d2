"""Per-cell limits: a default relative threshold, glob overrides and an absolute floor.

`--threshold 1%` sets the default; `--threshold 'GLOB=2%'` overrides it for cells
whose label ("NAME/PATH", or "NAME" for cells without a path) matches GLOB. Overrides
are tried in command-line order and the first match wins, so put the specific
globs before the general ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from icount.errors import UsageError

DEFAULT_THRESHOLD = 0.01
# Below this many instructions (in the cell's unit) a difference is never a verdict.
# Whole-process counts under callgrind repeat exactly, and per-request counts from
# the window methods were measured to within 0.3 instructions per request, so 10
# sits far above measurement error while it only matters for cells under ~1000
# instructions, where 1% would be a handful of instructions.
DEFAULT_MIN_DELTA = 10.0


@dataclass(frozen=True)
class Override:
    glob: str
    threshold: float


@dataclass(frozen=True)
class Thresholds:
    default: float = DEFAULT_THRESHOLD
    overrides: tuple[Override, ...] = ()
    min_delta: float = DEFAULT_MIN_DELTA

    def for_label(self, label: str) -> tuple[float, str]:
        """(threshold, the rule that chose it: its glob, or "default")."""
        for o in self.overrides:
            if fnmatchcase(label, o.glob):
                return o.threshold, o.glob
        return self.default, "default"


def parse_thresholds(items: Sequence[str], min_delta: float) -> Thresholds:
    """['1%', 'nginx/*=2%'] -> Thresholds; at most one plain value (the default)."""
    from icount.numfmt import parse_percent

    default: float | None = None
    overrides: list[Override] = []
    for item in items:
        glob, sep, value = item.rpartition("=")
        if sep:
            if not glob:
                raise UsageError(f"--threshold {item!r} has an empty glob", hint="use GLOB=PCT")
            overrides.append(Override(glob, parse_percent(value, f"--threshold {glob}=")))
        elif default is not None:
            raise UsageError(
                "--threshold without a glob given twice", hint="give one default and GLOB=PCT"
            )
        else:
            default = parse_percent(item, "--threshold")
    if not math.isfinite(min_delta) or min_delta < 0:
        raise UsageError(f"--min-delta must be 0 or more and finite, got {min_delta:g}")
    return Thresholds(
        DEFAULT_THRESHOLD if default is None else default, tuple(overrides), min_delta
    )
