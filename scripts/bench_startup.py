#!/usr/bin/env python3
"""Benchmark: CLI start-up. `icount --help` against `python3 -c "import typer, rich"`,
interleaved in the same run, as a ratio of median wall times (goal <= 1.2).

    python3 scripts/bench_startup.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def wall(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    ours = [sys.executable, "-m", "icount", "--help"]
    ref = [sys.executable, "-c", "import typer, rich"]
    wall(ours), wall(ref)  # warm the page cache
    a: list[float] = []
    b: list[float] = []
    for _ in range(args.rounds):  # interleaved, so drift hits both alike
        a.append(wall(ours))
        b.append(wall(ref))
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"icount --help            median {ma * 1000:7.1f} ms over {args.rounds} runs")
    print(f"import typer, rich       median {mb * 1000:7.1f} ms over {args.rounds} runs")
    print(f"ratio                    {ma / mb:.2f}x (goal <= 1.20x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
