#!/usr/bin/env python3
"""Speed of icount's callgrind parser against callgrind_annotate on the same files.

    python3 scripts/bench_callgrind_parse.py [--rounds 5] [FILE ...]
    python3 scripts/bench_callgrind_parse.py --record cc1plus --keep DIR
    python3 scripts/bench_callgrind_parse.py --record cc1plus-small --keep DIR

Without files it records profiles first, into DIR with --keep (else a temporary
folder): `--record numpy` (the default, ~10 s each under valgrind) runs
`python3 -c "import numpy"` under callgrind, with and without --dump-instr=yes;
`--record cc1plus` (the hard cases: about 35 CPU minutes, 90 on a busy 2-core VM)
compiles a C++ file using most of the standard library (fixtures/callgrind/src/
bench-stdlib.cpp) with `g++ -std=c++17 -O2 -g -c` under
`valgrind --tool=callgrind --trace-children=yes`, once with --cache-sim=yes
--branch-sim=yes (13 events) and once with --dump-instr=yes, and keeps the profiles
of cc1plus (the largest file of each run). `--record cc1plus-small` (2 minutes on an
idle 2-core VM, 7 at load 9) makes the 13-event profile only, of cc1plus compiling a
12-line file that uses std::map, std::string and std::ostringstream (SMALL_CPP below):
a 7 MB profile of about 11,600 functions, for a quick check of the 13-event case.

Each round runs `callgrind_annotate FILE` (output discarded) and then
`icount.callgrind.parser.parse_file(FILE)` in this process (the first round's parse
is the process's first: its fresh memory costs page faults the later ones reuse). It
prints the median and minimum wall time of each and the ratios annotate / icount of the
medians, of the minima and the median of each round's ratio (the two of a round share
the load of the moment), and the same for CPU time (user + system), which a busy machine
disturbs less. Then it checks that both read the same totals, part by part:
callgrind_annotate shows one part's `summary:` (the last one of a combined file), so
each part is written to a file of its own, annotated, and compared with that part's
summary: as the parser read it; and the parser's sums of cost lines must equal every
part's `totals:` line.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from icount.callgrind.model import Profile
from icount.callgrind.parser import parse_file

# Most of the C++ standard library in one file (see its first lines).
CPP_SOURCE = Path(__file__).resolve().parents[1] / "fixtures/callgrind/src/bench-stdlib.cpp"
SMALL_CPP = """#include <map>
#include <string>
#include <vector>
#include <algorithm>
#include <sstream>
std::string f(const std::vector<int>& v) {
  std::map<int, std::string> m;
  for (int x : v) m[x] = std::to_string(x);
  std::ostringstream os;
  for (auto& [k, s] : m) os << k << s;
  return os.str();
}
"""
CACHE_SIM = ["--cache-sim=yes", "--branch-sim=yes"]  # 13 events


def callgrind(out: str, extra: list[str], argv: list[str]) -> None:
    subprocess.run(
        ["valgrind", "--tool=callgrind", "-q", f"--callgrind-out-file={out}", *extra, *argv],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def record_numpy(out_dir: Path) -> list[Path]:
    # sys.executable may be a shim script (pyenv); profile the real interpreter.
    exe = str(Path(sys.executable).resolve())
    files = []
    for name, extra in (("numpy.callgrind", []), ("numpy-instr.callgrind", ["--dump-instr=yes"])):
        print(f"recording {name} (valgrind, about 10 s)...", flush=True)
        callgrind(str(out_dir / name), extra, [exe, "-c", "import numpy"])
        files.append(out_dir / name)
    return files


def record_cc1plus(out_dir: Path, small: bool = False) -> list[Path]:
    if small:
        source = out_dir / "bench-small.cpp"
        source.write_text(SMALL_CPP)
        variants = [("cc1plus-small-cache", CACHE_SIM)]
    else:
        source = CPP_SOURCE
        variants = [("cc1plus-cache", CACHE_SIM), ("cc1plus-instr", ["--dump-instr=yes"])]
    files = []
    for name, extra in variants:
        took = "2 to 8 min" if small else "10 to 60 min"
        print(f"recording {name} (valgrind on g++, {took})...", flush=True)
        pattern = out_dir / f"{name}.%p.out"
        argv = ["g++", "-std=c++17", "-O2", "-g", "-c", str(source), "-o", os.devnull]
        callgrind(str(pattern), ["--trace-children=yes", *extra], argv)
        runs = sorted(out_dir.glob(f"{name}.*.out"), key=lambda p: p.stat().st_size)
        kept = out_dir / f"{name}.callgrind"  # the largest: cc1plus itself
        runs[-1].rename(kept)
        for other in runs[:-1]:
            other.unlink()
        files.append(kept)
    return files


def run_annotate(path: Path) -> tuple[float, float, list[int]]:
    """Wall and CPU seconds of callgrind_annotate, and its PROGRAM TOTALS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        ["callgrind_annotate", str(path)], capture_output=True, text=True, check=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    line = next(x for x in done.stdout.splitlines() if x.endswith("PROGRAM TOTALS"))
    cells = re.findall(r"[\d,]+(?= \()|(?<!\S)\.(?!\S)", line.removesuffix("PROGRAM TOTALS"))
    return wall, cpu, [0 if c == "." else int(c.replace(",", "")) for c in cells]


def run_parser(path: Path) -> tuple[float, float, Profile]:
    start, cpu_start = time.perf_counter(), time.process_time()
    prof = parse_file(path)
    return time.perf_counter() - start, time.process_time() - cpu_start, prof


def split_parts(path: Path, out_dir: Path) -> list[Path]:
    """One file per part of a combined file: the header before the first `part:`
    line, then that part's lines (callgrind defines compressed names again in every
    part, so each stands alone)."""
    lines = path.read_bytes().splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith(b"part:")]
    if len(starts) < 2:
        return [path]
    head = [x for x in lines[: starts[0]] if not x.startswith((b"summary:", b"totals:"))]
    files = []
    for k, (a, b) in enumerate(zip(starts, [*starts[1:], len(lines)], strict=True)):
        part = out_dir / f"{path.name}.part{k + 1}"
        part.write_bytes(b"".join(head + lines[a:b]))
        files.append(part)
    return files


def same_totals(path: Path, prof: Profile, first_totals: list[int]) -> bool:
    """Whether callgrind_annotate reads every part as the parser does."""
    if not all(p.declared for p in prof.parts):
        return False
    with tempfile.TemporaryDirectory(prefix="icount-bench-parts-") as tmp:
        files = split_parts(path, Path(tmp))
        if len(files) != len(prof.parts):
            print(f"  {len(files)} part: headers but {len(prof.parts)} parts read")
            return False
        ok = True
        for k, (part_file, part) in enumerate(zip(files, prof.parts, strict=True)):
            ann = first_totals if part_file == path else run_annotate(part_file)[2]
            mine = part.summary or part.totals
            if [mine[e] for e in prof.events] != ann:
                print(f"  part {k + 1}: callgrind_annotate {ann}, icount {mine}")
                ok = False
        if len(files) > 1:
            print(f"  {len(files)} parts, each annotated on its own: {'equal' if ok else 'NOT'}")
        return ok


def bench(path: Path, rounds: int) -> bool:
    ann_wall, ann_cpu, own_wall, own_cpu = [], [], [], []
    ann_totals: list[int] = []
    prof = None
    for _ in range(rounds):
        wall, cpu, ann_totals = run_annotate(path)
        ann_wall.append(wall)
        ann_cpu.append(cpu)
        wall, cpu, prof = run_parser(path)
        own_wall.append(wall)
        own_cpu.append(cpu)
    assert prof is not None
    with open(path, "rb") as f:
        n_lines = sum(1 for _ in f)
    print(
        f"{path.name}: {path.stat().st_size / 1e6:.1f} MB, {n_lines} lines, "
        f"{len(prof.events)} events, {len(prof.parts)} part(s), {len(prof.functions)} functions, "
        f"{len(prof.call_count)} call edges"
    )
    med = statistics.median
    for what, ann, own in (("wall", ann_wall, own_wall), ("CPU", ann_cpu, own_cpu)):
        # the two of one round ran next to each other, under the same load
        per_round = med(a / o for a, o in zip(ann, own, strict=True))
        print(
            f"  {what:4s}  callgrind_annotate median {med(ann):7.3f} s  min {min(ann):7.3f} s;"
            f"  icount median {med(own):6.3f} s  min {min(own):6.3f} s;"
            f"  ratio {med(ann) / med(own):5.1f}x (medians), {min(ann) / min(own):5.1f}x (minima),"
            f" {per_round:5.1f}x (median of the rounds' ratios)"
        )
    same = same_totals(path, prof, ann_totals)
    print(f"  totals equal to callgrind_annotate's, part by part: {'yes' if same else 'NO'}")
    return same


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--record", choices=("numpy", "cc1plus", "cc1plus-small"), default="numpy")
    ap.add_argument("--keep", type=Path, help="folder to record the profiles into and keep")
    args = ap.parse_args()
    for tool in ("valgrind", "callgrind_annotate"):
        if shutil.which(tool) is None:
            print(f"{tool} is not installed (apt-get install valgrind)", file=sys.stderr)
            return 4
    with tempfile.TemporaryDirectory(prefix="icount-bench-") as tmp:
        files = args.files
        if not files:
            out = args.keep or Path(tmp)
            out.mkdir(parents=True, exist_ok=True)
            if args.record == "numpy":
                files = record_numpy(out)
            else:
                files = record_cc1plus(out, small=args.record == "cc1plus-small")
        ok = [bench(f, args.rounds) for f in files]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
