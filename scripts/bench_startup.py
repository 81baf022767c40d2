#!/usr/bin/env python3
"""Benchmark: CLI start-up against `python3 -c "import typer, rich"`, interleaved in the
same run, as ratios of median wall times.

    python3 scripts/bench_startup.py [--rounds 21] [--small FILE]

Measured: `icount --help` (goal <= 1.2x) and `icount size FILE`, the sections of a small
file (goal <= 1.3x; FILE defaults to /usr/bin/true). Every child runs with Python's
bytecode cache on (PYTHONDONTWRITEBYTECODE removed from its environment) after one
untimed run that writes it: an installed package has its .pyc files, and compiling
icount's modules from source on every run would add ~25 ms that no user pays.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def env() -> dict[str, str]:
    out = dict(os.environ)
    out.pop("PYTHONDONTWRITEBYTECODE", None)
    out["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), out.get("PYTHONPATH")]))
    return out


def wall(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env()
    )
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--small", default="/usr/bin/true", help="the small file for icount size")
    args = ap.parse_args()
    py = sys.executable
    cases = {
        "import typer, rich": [py, "-c", "import typer, rich"],
        "icount --help": [py, "-m", "icount", "--help"],
        f"icount size {args.small}": [py, "-m", "icount", "size", args.small],
    }
    goals = {"icount --help": 1.2, f"icount size {args.small}": 1.3}
    for argv in cases.values():  # warm the page cache and write the bytecode caches
        wall(argv)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):  # interleaved, so drift hits every case alike
        for name, argv in cases.items():
            times[name].append(wall(argv))
    ref = statistics.median(times["import typer, rich"])
    for name, ts in times.items():
        med = statistics.median(ts)
        line = f"{name:<40} median {med * 1000:7.1f} ms over {args.rounds} runs"
        if name in goals:
            line += f"   {med / ref:.2f}x (goal <= {goals[name]:.2f}x)"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
