"""Option values as the measuring code takes them: parsed once (by the CLI, or from a
provenance file for --resume), typed, with their defaults written here only.

Each type reads its value from the text a user gives (`parse`) and to and from the
JSON a provenance file records (`to_json`, `from_json`: ValueError for a value that
is not one, which the caller turns into a one-line error naming the file).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from icount.errors import UsageError
from icount.numfmt import parse_percent
from icount.numparse import NumberError, parse_int
from icount.stats import DEFAULT_MAX_SPREAD

# every default a command offers is read from here; the profile's lives with the profile
from icount.window_profile import PROFILE_TOP as PROFILE_TOP

RUNS = 3  # fresh processes per cell
REPS = 3  # counted windows per server process
CONCURRENCY = 1
MAX_SPREAD = DEFAULT_MAX_SPREAD
READY_TIMEOUT_S = 60.0  # --cmd: the first answer of a server
IDLE_SECONDS = 1.0  # an idle window after each run's reps; 0: none
MAX_IDLE_SECONDS = 600.0
# A collected runtime's windows added to a run until its total's interval fits
# (serve/runs.py): at most this many windows a run, --reps included, and this many
# seconds a run spent on the added ones. A collector whose windows differ by 1.1% of the
# total (c-epoll's every-700th-request test) fits with 9 windows over 2 runs; Express's,
# 12% apart, would need ~440 a cell, beyond any cap worth waiting for (such a run adds
# none). 120 s a run bounds a 3-run cell's added time at 6 minutes.
MAX_WINDOWS = 20
MAX_WINDOWS_LIMIT = 1000  # --max-windows at most: a results file holds every window
MAX_EXTRA_SECONDS = 120.0
MAX_EXTRA_SECONDS_LIMIT = 24 * 3600.0


def percent_text(fraction: float) -> str:
    """0.01 -> '1%': a spread limit as --max-spread takes it."""
    return f"{fraction * 100:g}%"


MAX_SPREAD_TEXT = percent_text(MAX_SPREAD)


@dataclass(frozen=True)
class Warmup:
    """--warmup: a count of requests before counting, or auto (count is None: probe
    until the count settles, serve/warmup.py)."""

    count: int | None

    @property
    def auto(self) -> bool:
        return self.count is None

    @classmethod
    def parse(cls, text: str) -> Warmup:
        if text.strip() == "auto":
            return AUTO
        try:  # ASCII digits only: int() takes '1_0' and Unicode digits
            n = parse_int(text, "--warmup")
        except NumberError:
            raise UsageError(f"--warmup takes a request count or 'auto', got {text!r}") from None
        if n < 0:
            raise UsageError(f"--warmup must be >= 0, got {n}")
        return cls(n)

    def to_json(self) -> str:
        """'auto' or the count as text, as --warmup takes it (and as icount 0.1 wrote it)."""
        return "auto" if self.count is None else str(self.count)

    @classmethod
    def from_json(cls, value: Any) -> Warmup:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ValueError(value)
        try:
            return cls.parse(str(value))
        except UsageError:
            raise ValueError(value) from None

    def param(self) -> str | int:
        """What a cell's params record: 'auto' or the count."""
        return "auto" if self.count is None else self.count


AUTO = Warmup(None)


class Processes(enum.StrEnum):
    """--processes: which processes of a server are counted."""

    ALL = "all"  # every process: forked workers, exec'd children
    ROOT = "root"  # the started process only

    @classmethod
    def parse(cls, text: str) -> Processes:
        try:
            return cls(text)
        except ValueError:
            raise UsageError(f"--processes takes all or root, got {text!r}") from None


class Arrival(enum.StrEnum):
    """--arrival: when the built-in client sends a request (icount/serve/arrival.py)."""

    IDLE = "idle"  # when every thread of every process of the server waits in the kernel
    CLOSED = "closed"  # as soon as the answer to the last one is in

    @classmethod
    def parse(cls, text: str) -> Arrival:
        try:
            return cls(text)
        except ValueError:
            raise UsageError(f"--arrival takes idle or closed, got {text!r}") from None


# --connection: auto (keep-alive, or a connection per request where the server closes
# after every answer), keep-alive, close (a connection per request): serve/http_client.py
CONNECTIONS = ("auto", "keep-alive", "close")


def parse_connection(text: str) -> str:
    if text not in CONNECTIONS:
        raise UsageError(f"--connection takes {', '.join(CONNECTIONS)}, got {text!r}")
    return text


def connection_from_json(value: Any) -> str:
    text = str_from_json(value)
    if text not in CONNECTIONS:
        raise ValueError(f"not one of {', '.join(CONNECTIONS)}")
    return text


def parse_spread(text: str, flag: str = "--max-spread") -> float:
    """A spread limit, '1%' or '0.5' (percent) -> a fraction."""
    return parse_percent(text, flag)


def spread_from_json(value: Any) -> float:
    """A recorded spread limit: its text ('1%') or a fraction."""
    if isinstance(value, str):
        try:
            return parse_spread(value)
        except UsageError:
            raise ValueError(value) from None
    if isinstance(value, float | int) and not isinstance(value, bool) and 0 < value < 10:
        return float(value)
    raise ValueError(value)


def int_from_json(value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(value)
    return value


def float_from_json(value: Any, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        raise ValueError(value)
    return float(value)


def bool_from_json(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(value)
    return value


def str_from_json(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(value)
    return value


def check_idle_seconds(seconds: float) -> float:
    if not 0 <= seconds <= MAX_IDLE_SECONDS:
        raise UsageError(f"--idle-seconds takes 0 to {MAX_IDLE_SECONDS:g} seconds")
    return seconds


def check_max_windows(windows: int) -> int:
    """--max-windows: at most --reps adds none (the reps are always taken)."""
    if not 1 <= windows <= MAX_WINDOWS_LIMIT:
        raise UsageError(f"--max-windows takes 1 to {MAX_WINDOWS_LIMIT} windows, got {windows}")
    return windows


def check_max_extra_seconds(seconds: float) -> float:
    if not 0 <= seconds <= MAX_EXTRA_SECONDS_LIMIT:
        raise UsageError(
            f"--max-extra-seconds takes 0 to {MAX_EXTRA_SECONDS_LIMIT:g} seconds, got {seconds:g}"
        )
    return seconds
