#!/usr/bin/env python3
"""Speed of icount's callgrind parser against callgrind_annotate on the same files.

    python3 scripts/bench_callgrind_parse.py [--rounds 3] [FILE ...]

Without files it records two large real profiles first (`python3 -c "import numpy"`
under callgrind, with and without --dump-instr=yes; ~10 s each under valgrind).
For each file it alternates rounds of `callgrind_annotate FILE` (output discarded)
and `icount.callgrind.parser.parse_file(FILE)` in this process, prints the median
and minimum wall time of each, the ratios annotate / icount (the issue's goal is
>= 10; on a busy machine the minima are the less disturbed figures), and
whether both read the same totals (callgrind_annotate's PROGRAM TOTALS against the
parser's summary:, and the parser's sum of cost lines against its totals: line).
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from icount.callgrind.parser import parse_file


def record(out_dir: Path) -> list[Path]:
    # sys.executable may be a shim script (pyenv); profile the real interpreter.
    exe = str(Path(sys.executable).resolve())
    files = []
    for name, extra in (("numpy.callgrind", []), ("numpy-instr.callgrind", ["--dump-instr=yes"])):
        out = out_dir / name
        print(f"recording {name} (valgrind, about 10 s)...", flush=True)
        subprocess.run(
            [
                *("valgrind", "--tool=callgrind", "-q", f"--callgrind-out-file={out}", *extra),
                *(exe, "-c", "import numpy"),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        files.append(out)
    return files


def annotate_totals(path: Path) -> tuple[float, list[int]]:
    start = time.perf_counter()
    done = subprocess.run(
        ["callgrind_annotate", str(path)], capture_output=True, text=True, check=True
    )
    elapsed = time.perf_counter() - start
    line = next(x for x in done.stdout.splitlines() if x.endswith("PROGRAM TOTALS"))
    cells = re.findall(r"[\d,]+(?= \()|(?<!\S)\.(?!\S)", line.removesuffix("PROGRAM TOTALS"))
    return elapsed, [0 if c == "." else int(c.replace(",", "")) for c in cells]


def bench(path: Path, rounds: int) -> bool:
    ann_times, own_times = [], []
    ann_totals: list[int] = []
    prof = None
    for _ in range(rounds):
        t, ann_totals = annotate_totals(path)
        ann_times.append(t)
        start = time.perf_counter()
        prof = parse_file(path)
        own_times.append(time.perf_counter() - start)
    assert prof is not None
    summary = [prof.summary[e] for e in prof.events] if prof.summary else None
    totals = [prof.totals[e] for e in prof.events]
    same = summary == ann_totals and all(p.declared for p in prof.parts)
    ann, own = statistics.median(ann_times), statistics.median(own_times)
    ann_min, own_min = min(ann_times), min(own_times)
    size = path.stat().st_size
    with open(path, "rb") as f:
        n_lines = sum(1 for _ in f)
    print(
        f"{path.name}: {size / 1e6:.1f} MB, {n_lines} lines, {len(prof.functions)} functions, "
        f"{len(prof.call_count)} call edges"
    )
    print(f"  callgrind_annotate  median {ann:7.3f} s  min {ann_min:7.3f} s   totals {ann_totals}")
    print(f"  icount parse_file   median {own:7.3f} s  min {own_min:7.3f} s   summary {summary}")
    print(f"  icount cost lines sum {totals}; totals equal: {'yes' if same else 'NO'}")
    print(f"  ratio annotate/icount: {ann / own:.1f}x (medians), {ann_min / own_min:.1f}x (minima)")
    return same


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    for tool in ("valgrind", "callgrind_annotate"):
        if shutil.which(tool) is None:
            print(f"{tool} is not installed (apt-get install valgrind)", file=sys.stderr)
            return 4
    with tempfile.TemporaryDirectory(prefix="icount-bench-") as tmp:
        files = args.files or record(Path(tmp))
        ok = [bench(f, args.rounds) for f in files]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
