"""Running `perf stat`: where perf is, its version and environment, and the arguments
icount runs it with for a whole command and for a server counted in windows (both
recorded in the fingerprint).

Shared by the perf backend (`perf.py`) and its servers (`perf_server.py`), which must
not import each other.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from pathlib import Path

from icount import procs
from icount.backends.perf_parser import EVENT, SEP

INSTALL_HINT = "apt-get install linux-perf"
INTERVAL_MS = 100


def perf_path() -> str | None:
    return procs.which("perf")


@functools.cache
def perf_version() -> str:
    out = procs.capture([procs.require("perf", INSTALL_HINT), "--version"]) or ""
    match = re.search(r"perf version (\S+)", out)
    return f"perf {match.group(1)}" if match else "perf (unknown version)"


def perf_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(base if base is not None else os.environ)
    env["LC_NUMERIC"] = "C"
    env["LC_ALL"] = "C"
    return env


def stat_args(out_file: Path, event: str = EVENT, inherit: bool = True) -> list[str]:
    # perf stat counts every child the command forks (inherited counters) unless told not to
    return [
        "stat",
        "-x",
        SEP,
        "--no-big-num",
        *([] if inherit else ["--no-inherit"]),
        "-e",
        event,
        "-o",
        str(out_file),
    ]


def perf_args(
    out_event: str, ctl: Path, ack: Path, inherit: bool = True, enabled: bool = False
) -> list[str]:
    """perf stat's arguments for a server. Counters are inherited by every child the
    server forks (perf's default, kept unless `inherit` is off): the enable/disable
    commands apply to the children's counters too, and each interval's count sums them."""
    return [
        "stat",
        "-x",
        SEP,
        "--no-big-num",
        *([] if inherit else ["--no-inherit"]),
        "-I",
        str(INTERVAL_MS),
        # -1: counters start disabled, switched on for windows; 0: counting from exec
        "-D",
        "0" if enabled else "-1",
        "--control",
        f"fifo:{ctl},{ack}",
        "-e",
        out_event,
    ]
