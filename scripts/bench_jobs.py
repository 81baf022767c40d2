#!/usr/bin/env python3
"""Wall time of `icount serve --jobs 2` against `--jobs 1` on the same cells, here.

    python3 scripts/bench_jobs.py [--rounds 3] [--jobs 2] [TARGET ...]

Runs `icount serve TARGETS --backend callgrind --runs 1 --reps 3 --requests 1000
--warmup 100` (defaults: c-epoll and python-asyncio, 4 cells), alternately with
--jobs 1 and --jobs N, each as a whole process, and prints the median wall time of
each, the ratio jobs-N / jobs-1, the CPUs icount may use, the load average, and the
largest difference between the two runs' per-request figures (callgrind's counts do
not depend on load, so it should be 0 for servers without time-driven work).

On fewer than 2N CPUs the jobs share CPUs (each server has one to itself on 2 CPUs
with 2 jobs, its load generator beside the other job's server): the ratio then says
how much the sharing leaves of the ideal 1/N.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OPTIONS = ["--backend", "callgrind", "--runs", "1", "--reps", "3", "--requests", "1000",
           "--warmup", "100", "-q"]  # fmt: skip


def serve(targets: list[str], jobs: int, out: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "icount", "serve", *targets, *OPTIONS, "--jobs", str(jobs),
            "-o", str(out), "--force"]  # fmt: skip
    t0 = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    if done.returncode != 0:
        raise SystemExit(f"icount serve --jobs {jobs} failed ({done.returncode}): {done.stderr}")
    return wall


def medians(out: Path) -> dict[str, float]:
    doc = json.loads(out.read_text())
    return {f"{c['name']}/{c['path']}": c["median"] for c in doc["cells"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("targets", nargs="*", default=["c-epoll", "python-asyncio"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    walls: dict[int, list[float]] = {1: [], args.jobs: []}
    worst = 0.0
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as tmp:
        for r in range(args.rounds):
            got = {}
            for jobs in (1, args.jobs) if r % 2 == 0 else (args.jobs, 1):
                out = Path(tmp) / f"jobs-{jobs}.json"
                walls[jobs].append(serve(args.targets, jobs, out))
                got[jobs] = medians(out)
                print(f"round {r + 1}: --jobs {jobs}: {walls[jobs][-1]:.1f} s", flush=True)
            for key, one in got[1].items():
                worst = max(worst, abs(got[args.jobs][key] - one) / one)
    one, many = statistics.median(walls[1]), statistics.median(walls[args.jobs])
    pairs = [m / o for o, m in zip(walls[1], walls[args.jobs], strict=True)]
    print(f"cells: {', '.join(args.targets)} (every path), callgrind, {' '.join(OPTIONS[2:])}")
    print(f"CPUs allowed: {len(cpus)} ({','.join(map(str, cpus))}); load1 before "
          f"{load_before:.2f}, after {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"--jobs 1: median {one:.1f} s; --jobs {args.jobs}: median {many:.1f} s; "
          f"ratio {many / one:.2f} (ideal {1 / args.jobs:.2f}); per round "
          f"{', '.join(f'{r:.2f}' for r in pairs)}")  # fmt: skip
    print(f"largest difference between the per-request figures: {worst * 100:.4f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
