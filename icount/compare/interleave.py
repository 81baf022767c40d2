"""`--interleave`: measure base and new commands alternately, A B A B ...

On a noisy backend (perf on a shared machine) slow drifts in the machine's state
hit both sides of a pair alike, so the ratio new/base of each pair carries less
noise than two separate batches would; the median of the ratios is what is gated
on (see model.compare_pairs). Each run is a fresh process measured exactly as
`icount run` measures one (measure_command.measure_once).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from icount.compare.model import Pair, Verdict, pair_from_runs
from icount.measure_command import CommandSpec, RunOptions, measure_once
from icount.progress import Progress


@dataclass(frozen=True)
class Interleaved:
    pairs: tuple[Pair, ...]
    # (invalid in base/new, "base run 2: exited with status 1"); None when every run counted
    failed: tuple[Verdict, str] | None


def run_pairs(
    base: CommandSpec,
    new: CommandSpec,
    opts: RunOptions,
    pairs: int,
    artifacts: Path,
    progress: Progress | None = None,
) -> Interleaved:
    """Run `pairs` pairs, base first in each. Stops at the first failed run: the
    comparison is invalid then, and further runs would only cost time."""
    done: list[Pair] = []
    for i in range(1, pairs + 1):
        if progress:
            progress(f"pair {i}/{pairs}: base", 2 * (i - 1), 2 * pairs)
        b = measure_once(base, opts, artifacts / f"pair-{i:03d}-base")
        if not b.valid:
            done.append(Pair(None, None))
            why = f"base run {i}: {b.reason}"
            return Interleaved(tuple(done), (Verdict.INVALID_IN_BASE, why))
        if progress:
            progress(f"pair {i}/{pairs}: new", 2 * i - 1, 2 * pairs)
        n = measure_once(new, opts, artifacts / f"pair-{i:03d}-new")
        done.append(pair_from_runs(b, n))
        if not n.valid:
            why = f"new run {i}: {n.reason}"
            return Interleaved(tuple(done), (Verdict.INVALID_IN_NEW, why))
    if progress:
        progress("done", 2 * pairs, 2 * pairs)
    return Interleaved(tuple(done), None)
