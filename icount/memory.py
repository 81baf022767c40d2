"""Peak memory beside instructions (`--memory`): the most resident memory a program held.

Valgrind inflates memory (its own heap, shadow state, translated code), so the peak is
taken from native runs, never instrumented ones: for a command, wait4's rusage
(`ru_maxrss`, read by GNU time: what `/usr/bin/time -v` prints as "Maximum resident
set size"), of the command or the largest child it waited for; for a server, each
process's high-water mark (`VmHWM` in /proc/PID/status) summed over the server's
processes, after the same warm-up and requests as the counted runs. Several runs give
a median and a spread like any figure. A cell keeps the runs' peaks in `extra.memory`;
the statistics are derived from them when shown, never stored apart.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from icount import environment, numfmt, procs
from icount.stats import Summary, summarize

if TYPE_CHECKING:
    from icount.results import Cell

KEY = "memory"  # cell.extra[KEY]: {"peak_rss_bytes": [one per run], "reason"?: why fewer}
TITLE = "peak RSS"
CSV_COLUMN = "peak_rss_bytes"
TIME_REMEDY = "install GNU time (apt-get install time; scripts/setup.sh does)"


def command_peaks(
    argv: Sequence[str],
    env: Mapping[str, str],
    runs: int,
    allowed_exits: frozenset[int],
    timeout: float | None,
    run_dir: Path,
) -> dict[str, Any]:
    """`runs` native runs of a command in icount's cleared environment, each in a fresh
    work dir; a run that fails or times out ends them, with the reason.

    Each runs under GNU time, which forks it and reads wait4's rusage. Not forked from
    icount itself: Linux carries the high-water mark of the memory a process had before
    exec into its ru_maxrss, so a child of icount's ~50 MB Python read as ~52 MB
    whatever it allocated (measured: a program of 2 MB)."""
    gnu_time = procs.require("time", TIME_REMEDY)
    peaks: list[int] = []
    run_dir.mkdir(parents=True, exist_ok=True)
    report = run_dir / "maxrss"
    for _ in range(runs):
        workdir = environment.make_workdir()
        try:
            program = environment.fixed_program(argv, workdir)  # as the counted runs ran
            done = procs.run(
                [gnu_time, "-q", "-f", "%M", "-o", str(report), "--", *program],
                env=environment.clean_env(workdir, env),
                cwd=workdir,
                timeout=timeout,
                stdout=run_dir / "stdout",
                stderr=run_dir / "stderr",
            )
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        if done.timed_out:
            why = f"a native run timed out after {timeout:g} s"
            return {"peak_rss_bytes": peaks, "reason": why}
        if done.returncode not in allowed_exits:
            why = procs.exit_reason(done.returncode, run_dir / "stderr")
            return {"peak_rss_bytes": peaks, "reason": f"a native run failed: {why}"}
        kib = report.read_text(errors="replace").strip().splitlines()
        if not kib or not kib[-1].isdigit():
            return {"peak_rss_bytes": peaks, "reason": "GNU time reported no maximum RSS"}
        peaks.append(int(kib[-1]) * 1024)
    return {"peak_rss_bytes": peaks}


def status_hwm(pid: int) -> int | None:
    """A live process's high-water mark of resident memory (VmHWM), in bytes."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            fields = line.split()
            if len(fields) >= 2 and fields[1].isdigit():
                return int(fields[1]) * 1024  # kB
    return None


def server_peak(pids: Iterable[int]) -> int | None:
    """The sum of the high-water marks of a server's live processes, or None when none
    could be read."""
    marks = [m for m in (status_hwm(p) for p in sorted(set(pids))) if m is not None]
    return sum(marks) if marks else None


def summary(cell: Cell) -> Summary | None:
    """The cell's peaks summarised; None when it has none, or a native run failed."""
    doc = cell.extra.get(KEY)
    if not isinstance(doc, Mapping) or doc.get("reason"):
        return None
    peaks = doc.get("peak_rss_bytes") or []
    return summarize([float(p) for p in peaks]) if peaks else None


def text(cell: Cell) -> str:
    """'65.08 MiB' or '65.08 MiB (64.9 MiB-65.1 MiB)' for the table; '-' with a reason."""
    doc = cell.extra.get(KEY)
    if not isinstance(doc, Mapping):
        return ""
    s = summary(cell)
    if s is None:
        return "-"
    median = numfmt.human_bytes(round(s.median))
    if s.min == s.max:
        return median
    lo, hi = numfmt.human_bytes(round(s.min)), numfmt.human_bytes(round(s.max))
    return f"{median} ({lo}-{hi})"


def has_memory(cells: Iterable[Cell]) -> bool:
    return any(KEY in c.extra for c in cells)


def notes(cells: Iterable[Cell]) -> list[str]:
    """Why a cell has no peak, and what the column is."""
    out = [
        f"{c.key_text}: no peak RSS: {c.extra[KEY]['reason']}"
        for c in cells
        if isinstance(c.extra.get(KEY), Mapping) and c.extra[KEY].get("reason")
    ]
    return [*out, f"{TITLE}: median (min-max) of native runs, never under valgrind"]


def csv_value(cell: Cell) -> str:
    s = summary(cell)
    return numfmt.plain(s.median) if s is not None else ""
