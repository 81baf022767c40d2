#!/usr/bin/env python3
"""Benchmark `icount size --by symbols` against `nm -S --size-sort` on the same files.

Usage: python3 scripts/bench_size.py [--file LIB ...] [--reps N]

Without --file it measures Debian's stripped libLLVM-15 (`.dynsym` only: both tools read
that, `nm -D`) when it is installed, and the largest ELF shared library with a `.symtab`
it finds under the usual library folders and ~/.rustup (rustup's libLLVM). Each tool runs
--reps times, interleaved, with `python3 -c "import typer, numpy"` (what `icount size
--by symbols` cannot do without) as a third child: the floor, and `python3 -c "import
numpy"` as a fourth. Medians of wall time and the peak resident memory of each child are
printed with their ratios. The last lines split icount's run: its own work (load +
symbols view + table: the command run a second time in one process, every module it
needs imported by the first), those imports, and whether the CLI run imported pydantic
(typer 0.2x converts option values through pydantic; ~0.1 s when it does). Children
run with Python's bytecode cache on (PYTHONDONTWRITEBYTECODE removed), as an installed
icount has it.
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
DEBIAN_LLVM15 = Path("/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1")  # apt: libllvm15


def largest_shared_library() -> Path | None:
    """The largest ELF shared library with a .symtab under SEARCH."""
    found: list[tuple[int, str]] = []
    for top in SEARCH:
        for folder, _, files in os.walk(top):
            for name in files:
                if ".so" not in name:
                    continue
                path = os.path.join(folder, name)
                try:
                    if os.path.islink(path) or not os.path.isfile(path):
                        continue
                    with open(path, "rb") as f:
                        if f.read(4) == b"\x7fELF":
                            found.append((os.path.getsize(path), path))
                except OSError:
                    continue
    for _, path in sorted(found, reverse=True):
        if has_symtab(Path(path)):
            return Path(path)
    return None


def env() -> dict[str, str]:
    out = dict(os.environ)
    out.pop("PYTHONDONTWRITEBYTECODE", None)
    out["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), out.get("PYTHONPATH")]))
    return out


def has_symtab(path: Path) -> bool:
    out = subprocess.run(["readelf", "-S", "-W", str(path)], capture_output=True, text=True).stdout
    return " .symtab " in out


def timed(argv: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one child, output discarded."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=env()
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        sys.exit(f"{argv[0]} failed ({proc.returncode}): {err.strip()}")
    return wall, int(usage.ru_maxrss)


CORE = """
import contextlib, io, os, sys, time
os.environ["OPENBLAS_NUM_THREADS"] = "1"  # as `icount size` imports numpy
t = time.perf_counter()
import numpy
from icount.cli import app
argv = ["size", "--by", "symbols", sys.argv[1]]
with contextlib.redirect_stdout(io.StringIO()):
    app(argv, standalone_mode=False)  # imports what the command imports, lazily
    first = time.perf_counter() - t
    t = time.perf_counter()
    app(argv, standalone_mode=False)  # the same run again: its own work alone
    work = time.perf_counter() - t
print(f"{first - work:.4f} {work:.4f}")
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


def bench(path: Path, reps: int) -> None:
    nm = shutil.which("nm")
    if nm is None:
        sys.exit("nm (binutils) is not installed")
    dynamic = not has_symtab(path)
    nm_argv = [nm, "-S", "--size-sort", *(["-D"] if dynamic else []), str(path)]
    ic_argv = [sys.executable, "-m", "icount", "size", "--by", "symbols", str(path)]
    floor_argv = [sys.executable, "-c", "import typer, numpy"]
    numpy_argv = [sys.executable, "-c", "import numpy"]

    # one untimed run each: the file in the page cache, the bytecode caches written
    for argv in (nm_argv, ic_argv, floor_argv, numpy_argv):
        timed(argv)
    nm_runs, ic_runs, floor_runs, numpy_runs, core_runs = [], [], [], [], []
    for _ in range(reps):
        nm_runs.append(timed(nm_argv))
        ic_runs.append(timed(ic_argv))
        floor_runs.append(timed(floor_argv))
        numpy_runs.append(timed(numpy_argv))
        out = subprocess.run(
            [sys.executable, "-c", CORE, str(path)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env(),
            check=True,
        ).stdout.split()
        core_runs.append((float(out[0]), float(out[1])))

    nm_wall = statistics.median(w for w, _ in nm_runs)
    ic_wall = statistics.median(w for w, _ in ic_runs)
    floor_wall = statistics.median(w for w, _ in floor_runs)
    numpy_wall = statistics.median(w for w, _ in numpy_runs)
    nm_rss = max(m for _, m in nm_runs)
    ic_rss = max(m for _, m in ic_runs)
    core = statistics.median(c for _, c in core_runs)
    imports = statistics.median(i for i, _ in core_runs)
    size_mb = path.stat().st_size / 1e6
    table = ".dynsym (no .symtab)" if dynamic else ".symtab"
    print(f"file: {path} ({size_mb:.1f} MB, {table}), {reps} runs each, medians")
    nm_name = "nm -S --size-sort" + (" -D" if dynamic else "")
    print(f"  {nm_name}: {nm_wall:.3f} s, peak {nm_rss / 1024:.0f} MiB")
    print(f"  icount size --by symbols: {ic_wall:.3f} s, peak {ic_rss / 1024:.0f} MiB")
    print(f"  ratio icount/nm: wall {ic_wall / nm_wall:.2f}x, peak memory {ic_rss / nm_rss:.2f}x")
    print(
        f"  floor: python3 -c 'import typer, numpy' {floor_wall:.3f} s = "
        f"{floor_wall / nm_wall:.2f}x nm; python3 -c 'import numpy' {numpy_wall:.3f} s = "
        f"{numpy_wall / nm_wall:.2f}x nm"
    )
    print(
        f"  icount's own work (a second run of the command in one process): {core:.3f} s = "
        f"{core / nm_wall:.2f}x nm; the imports of the first run (numpy, icount's CLI and "
        f"size modules) {imports:.3f} s"
    )
    slow = subprocess.run(
        [sys.executable, "-c", IMPORTED, str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env(),
        check=True,
    ).stderr.split("\n")[-2]
    print(f"  optional imports the CLI run made (pydantic, pyelftools' ELFFile): {slow}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, action="append")
    ap.add_argument("--reps", type=int, default=9)
    args = ap.parse_args()
    paths = args.file or [
        p
        for p in (DEBIAN_LLVM15 if DEBIAN_LLVM15.exists() else None, largest_shared_library())
        if p
    ]
    if not paths:
        sys.exit("no ELF shared library found; pass --file")
    for path in paths:
        bench(path, args.reps)


if __name__ == "__main__":
    main()
