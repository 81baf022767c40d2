"""Counting backends: callgrind (exact, slow, everywhere) and perf stat (fast, needs a PMU).

`choose()` resolves `--backend auto|callgrind|perf` to one backend and says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from icount.errors import ToolMissingError, UsageError

BACKENDS = ("auto", "callgrind", "perf")


@dataclass(frozen=True)
class Counted:
    """What one run of a command under a backend counted."""

    instructions: int | None  # None when nothing could be read
    returncode: int
    timed_out: bool
    problem: str | None  # why `instructions` is None
    detail: Mapping[str, Any] = field(default_factory=dict)  # backend facts for the run


@dataclass(frozen=True)
class Choice:
    backend: str  # "callgrind" or "perf"
    why: str


def choose(requested: str) -> Choice:
    from icount.backends import callgrind, perf

    if requested not in BACKENDS:
        raise UsageError(f"unknown backend {requested!r}", hint="use --backend auto|callgrind|perf")
    if requested == "callgrind":
        callgrind.require_valgrind()
        return Choice("callgrind", "asked for with --backend callgrind")
    probe = perf.probe()
    if requested == "perf":
        if not probe.usable:
            raise ToolMissingError(
                f"perf cannot count instructions:u here: {probe.why}",
                hint="use --backend callgrind",
            )
        return Choice("perf", "asked for with --backend perf")
    if probe.usable:
        return Choice("perf", f"perf stat counts instructions:u here ({probe.why})")
    if not callgrind.valgrind_path():
        raise ToolMissingError(
            f"no backend: valgrind is not installed and perf cannot count ({probe.why})",
            hint="run scripts/setup.sh or apt-get install valgrind",
        )
    return Choice("callgrind", f"perf cannot count instructions:u here ({probe.why})")
