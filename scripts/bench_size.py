#!/usr/bin/env python3
"""Benchmark `icount size --by symbols` against `nm -S --size-sort` on the same file.

Usage: python3 scripts/bench_size.py [--file LIB] [--reps N]

Without --file it picks the largest ELF shared library it finds under the usual library
folders (and ~/.rustup, where a 200 MB libLLVM with a .symtab often lives). When the file
has no .symtab both tools read .dynsym (`nm -D`), as icount does. Each tool runs --reps
times, interleaved; the medians of wall time and the peak resident memory of each child
are printed with their ratio. The last lines split icount's run: its own work (load +
symbols view + table) timed inside one process after the modules it needs are imported,
those imports, and whether the CLI run imported pydantic (typer 0.2x converts option
values through pydantic; ~0.1 s when it does).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEARCH = ["/usr/lib", "/usr/local/lib", "/lib", "/opt", str(Path.home() / ".rustup")]


def largest_shared_library() -> Path:
    best: tuple[int, str] = (0, "")
    for top in SEARCH:
        for folder, _, files in os.walk(top):
            for name in files:
                if ".so" not in name:
                    continue
                path = os.path.join(folder, name)
                try:
                    if os.path.islink(path) or not os.path.isfile(path):
                        continue
                    size = os.path.getsize(path)
                    if size > best[0]:
                        with open(path, "rb") as f:
                            if f.read(4) == b"\x7fELF":
                                best = (size, path)
                except OSError:
                    continue
    if not best[1]:
        sys.exit("no ELF shared library found; pass --file")
    return Path(best[1])


def has_symtab(path: Path) -> bool:
    out = subprocess.run(["readelf", "-S", "-W", str(path)], capture_output=True, text=True).stdout
    return " .symtab " in out


def timed(argv: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one child, output discarded."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        sys.exit(f"{argv[0]} failed ({proc.returncode}): {err.strip()}")
    return wall, int(usage.ru_maxrss)


CORE = """
import os, sys, time
os.environ["OPENBLAS_NUM_THREADS"] = "1"  # as `icount size` imports numpy
t = time.perf_counter()
import numpy, rich.console, rich.table
from icount.size import load, render, views, elf, symbols, demangle
imports = time.perf_counter() - t
t = time.perf_counter()
images = load(sys.argv[1])
b = views.by_symbols(images[0], 30)
text = render.text([render.table([b], "symbols", 30)], "table", 120)
print(f"{imports:.4f} {time.perf_counter() - t:.4f}")
"""

# The CLI run once more, saying which of the slow optional imports it made.
IMPORTED = """
import runpy, sys
sys.argv = ["icount", "size", "--by", "symbols", sys.argv[1]]
try:
    runpy.run_module("icount", run_name="__main__")
finally:
    slow = ("pydantic", "elftools.elf.elffile")
    print(" ".join(m for m in slow if m in sys.modules) or "none", file=sys.stderr)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    path = args.file or largest_shared_library()
    nm = shutil.which("nm")
    if nm is None:
        sys.exit("nm (binutils) is not installed")
    dynamic = not has_symtab(path)
    nm_argv = [nm, "-S", "--size-sort", *(["-D"] if dynamic else []), str(path)]
    ic_argv = [sys.executable, "-m", "icount", "size", "--by", "symbols", str(path)]

    # one untimed run each so that both read the file from the page cache
    timed(nm_argv)
    timed(ic_argv)
    nm_runs, ic_runs, core_runs = [], [], []
    for _ in range(args.reps):
        nm_runs.append(timed(nm_argv))
        ic_runs.append(timed(ic_argv))
        out = subprocess.run(
            [sys.executable, "-c", CORE, str(path)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        ).stdout.split()
        core_runs.append((float(out[0]), float(out[1])))

    nm_wall = statistics.median(w for w, _ in nm_runs)
    ic_wall = statistics.median(w for w, _ in ic_runs)
    nm_rss = max(m for _, m in nm_runs)
    ic_rss = max(m for _, m in ic_runs)
    core = statistics.median(c for _, c in core_runs)
    imports = statistics.median(i for i, _ in core_runs)
    size_mb = path.stat().st_size / 1e6
    table = ".dynsym (no .symtab)" if dynamic else ".symtab"
    print(f"file: {path} ({size_mb:.1f} MB, {table}), {args.reps} runs each, medians")
    nm_name = "nm -S --size-sort" + (" -D" if dynamic else "")
    print(f"{nm_name}: {nm_wall:.3f} s, peak {nm_rss / 1024:.0f} MiB")
    print(f"icount size --by symbols: {ic_wall:.3f} s, peak {ic_rss / 1024:.0f} MiB")
    print(f"ratio icount/nm: wall {ic_wall / nm_wall:.2f}x, peak memory {ic_rss / nm_rss:.2f}x")
    print(
        f"icount core work (load + view + table, in-process): {core:.3f} s = "
        f"{core / nm_wall:.2f}x nm; imports of numpy, rich and icount.size {imports:.3f} s"
    )
    slow = subprocess.run(
        [sys.executable, "-c", IMPORTED, str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        check=True,
    ).stderr.split("\n")[-2]
    print(f"optional imports the CLI run made (pydantic, pyelftools' ELFFile): {slow}")


if __name__ == "__main__":
    main()
