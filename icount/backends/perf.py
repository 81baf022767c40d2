"""`perf stat -e instructions:u`: running it, probing it, and parsing its output.

icount asks perf for CSV (`-x` with a separator that cannot occur in values: commas
are not quoted by perf) with LC_NUMERIC=C. A count that
is `<not supported>`, `<not counted>` or multiplexed (running < 100% of the time)
never passes as a number: it becomes a PerfCount with `problem` set.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from icount import environment, procs
from icount.backends import Counted
from icount.errors import ParseError

SEP = ";"
EVENT = "instructions:u"
INSTALL_HINT = "apt-get install linux-perf"


@dataclass(frozen=True)
class PerfCount:
    event: str
    value: float | None  # None when not counted (instructions are whole numbers)
    running_pct: float | None
    problem: str | None  # None only for a clean, complete count

    @property
    def ok(self) -> bool:
        return self.problem is None and self.value is not None


def _check(event: str, raw: str, pct: float | None) -> PerfCount:
    raw = raw.strip()
    if raw.startswith("<"):
        what = raw.strip("<>")
        return PerfCount(event, None, pct, f"{event} {what} (perf printed {raw})")
    if not re.fullmatch(r"\d+(\.\d+)?", raw):
        raise ValueError(f"counter value {raw!r} is not a number")
    value = float(raw)
    if pct is not None and pct < 100.0:
        return PerfCount(
            event, value, pct, f"{event} was multiplexed (counted {pct:g}% of the time); not exact"
        )
    return PerfCount(event, value, pct, None)


def parse_csv(text: str, source: str, sep: str = SEP) -> list[PerfCount]:
    """Parse `perf stat -x SEP` output (with or without `-o FILE`'s header lines)."""
    counts: list[PerfCount] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(sep)
        if len(fields) < 5:
            raise ParseError(
                f"line {lineno}: expected at least 5 {sep!r}-separated fields, got {len(fields)}",
                source=source,
            )
        value, _unit, event, _runtime, pct_text = fields[:5]
        try:
            pct = float(pct_text) if pct_text.strip() else None
            counts.append(_check(event, value, pct))
        except ValueError as e:
            raise ParseError(f"line {lineno}: {e}", source=source) from None
    if not counts:
        raise ParseError("no counter lines in perf stat output", source=source)
    return counts


def find_event(counts: Sequence[PerfCount], event: str = EVENT) -> PerfCount:
    for c in counts:
        if c.event == event:
            return c
    return PerfCount(event, None, None, f"{event} missing from perf output")


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


def stat_args(out_file: Path) -> list[str]:
    return ["stat", "-x", SEP, "--no-big-num", "-e", EVENT, "-o", str(out_file)]


@dataclass(frozen=True)
class Probe:
    usable: bool
    why: str


def paranoid_level() -> int | None:
    try:
        return int(Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip())
    except (OSError, ValueError):
        return None


@functools.cache
def probe() -> Probe:
    """Can `perf stat -e instructions:u` count here? Answers with the reason."""
    perf = perf_path()
    if perf is None:
        return Probe(False, f"perf is not installed ({INSTALL_HINT})")
    done = procs.run(
        [perf, "stat", "-x", SEP, "-e", EVENT, "--", "true"], env=perf_env(), timeout=30
    )
    text = done.stderr.decode("utf-8", "replace")
    paranoid = paranoid_level()
    try:
        count = find_event(parse_csv(text, "perf probe"))
    except ParseError:
        first = text.strip().splitlines()[:1]
        detail = first[0] if first else f"exit {done.returncode}"
        if paranoid is not None and paranoid > 2 and os.geteuid() != 0:
            detail += f"; kernel.perf_event_paranoid={paranoid} forbids it for non-root users"
        return Probe(False, f"perf stat failed: {detail}")
    if count.value is None:
        if count.problem and "not supported" in count.problem:
            return Probe(
                False,
                f"{EVENT} is <not supported>: the CPU's PMU is not exposed "
                "to this machine (common on VMs)",
            )
        return Probe(False, count.problem or f"{EVENT} not counted")
    if count.problem:
        return Probe(False, count.problem)
    return Probe(True, f"probe counted {count.value:.0f} instructions:u for `true`")


def count_command(
    argv: Sequence[str],
    run_dir: Path,
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout: float | None,
) -> Counted:
    """Run `argv` once under `perf stat -e instructions:u` (children included)."""
    perf = procs.require("perf", INSTALL_HINT)
    run_dir.mkdir(parents=True, exist_ok=True)
    prefix, _ = environment.aslr_wrapper()
    out_file = run_dir / "perf-stat.txt"
    # perf's own environment gets LC_NUMERIC=C; the measured command inherits it.
    done = procs.run(
        [*prefix, perf, *stat_args(out_file), "--", *argv],
        env=perf_env(env),
        cwd=cwd,
        timeout=timeout,
        stdout=run_dir / "stdout",
        stderr=run_dir / "stderr",
    )
    if done.timed_out:
        return Counted(None, done.returncode, True, f"timed out after {timeout:g} s")
    try:
        count = find_event(parse_csv(out_file.read_text(errors="replace"), str(out_file)))
    except (OSError, ParseError) as e:
        return Counted(None, done.returncode, False, f"no perf stat output: {e}")
    value = int(count.value) if count.ok and count.value is not None else None
    return Counted(value, done.returncode, False, count.problem)
