#!/usr/bin/env python3
"""icount serve's wall time: the warm-up method against the old one, and the overhead.

Default (`--against old`): for each bundled target that can run here (or the ones
named), `icount serve TARGET --runs 3` under callgrind twice, alternately first: as
it runs now (instrumentation off until the first window) and with
`--warmup-instrumented` (the method before: instrumented from exec, through start-up
and warm-up). Both measure the same cells with the same warm-up counts; the script
prints each target's wall times, every cell's count both ways, and the ratio of the
totals. Goal: <= 0.5x.

`--against bare`: icount on one c-epoll cell against a bare script doing the same
valgrind windows with nothing around it: per run, start c-epoll under
`setarch -R valgrind --tool=callgrind` pinned to CPU 0, poll until it answers,
`vgdb status`, one verification request, one keep-alive connection, 100 warm-up
requests, then 3 windows (vgdb dump, 1000 requests, vgdb dump, read the `totals:`
line), SIGTERM. Timed as whole processes, alternately; ratio of medians. Goal: <= 1.15x.

Usage: python3 scripts/bench_serve.py [TARGET ...] [--rounds 1] [--keep DIR]
       python3 scripts/bench_serve.py --against bare [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

BARE = r"""
import os, re, signal, socket, subprocess, sys, time
from pathlib import Path
binary, work = sys.argv[1], Path(sys.argv[2])
RUNS, REPS, WARMUP, REQUESTS = 3, 3, 100, 1000
REQ = b"GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
BODY = b"Hello, World!"
os.sched_setaffinity(0, {1})

def get(sock):
    sock.sendall(REQ)
    data = b""
    while not data.endswith(BODY):
        chunk = sock.recv(65536)
        if not chunk:
            raise SystemExit("connection closed")
        data += chunk

def vgdb(pid, *cmd):
    subprocess.run(["vgdb", f"--pid={pid}", "--max-invoke-ms=10", *cmd], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

values = []
for run in range(RUNS):
    d = work / f"run-{run}"
    d.mkdir()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        ["setarch", "-R", "valgrind", "--tool=callgrind", f"--callgrind-out-file={d}/cg.out",
         f"--log-file={d}/vg.log", binary, "--port", str(port)],
        preexec_fn=lambda: os.sched_setaffinity(0, {0}), start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port)) as s:
                get(s)
            break
        except OSError:
            time.sleep(0.1)
    vgdb(server.pid, "status")
    with socket.create_connection(("127.0.0.1", port)) as s:
        get(s)
    conn = socket.create_connection(("127.0.0.1", port))
    for _ in range(WARMUP):
        get(conn)
    reps = []
    for rep in range(REPS):
        vgdb(server.pid, "dump")
        for _ in range(REQUESTS):
            get(conn)
        vgdb(server.pid, "dump")
        newest = max(d.glob("cg.out.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
        total = int(re.search(rb"^totals: (\d+)", newest.read_bytes(), re.M).group(1))
        reps.append(total / REQUESTS)
    conn.close()
    os.killpg(server.pid, signal.SIGTERM)
    server.wait()
    values.append(sorted(reps)[1])
print(sorted(values)[1])
"""


def build_c_epoll(work: Path) -> Path:
    exe = work / "c-epoll"
    subprocess.run(
        ["gcc", "-O2", "-o", str(exe), str(REPO / "adapters" / "c-epoll" / "server.c")],
        check=True,
    )
    return exe


INVALID_CELLS = 5  # icount's exit code when it measured but some cell is not valid


def timed(argv: list[str], cwd: Path, *, ok: tuple[int, ...] = (0,)) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode not in ok:
        sys.exit(f"failed ({done.returncode}): {' '.join(argv)}\n{done.stderr[-2000:]}")
    return wall, done.stdout


def against_bare(rounds: int) -> None:
    if len(os.sched_getaffinity(0)) < 2:
        sys.exit("needs 2 CPUs (server on CPU 0, client on CPU 1)")
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        work = Path(tmp)
        exe = build_c_epoll(work)
        icount_argv = [
            sys.executable, "-m", "icount", "serve", "--cmd", f"{exe} --port {{port}}",
            "--name", "c-epoll", "--path", "plaintext=/plaintext", "--expect-body",
            "Hello, World!", "--backend", "callgrind", "--runs", "3", "--reps", "3",
            "--server-cpus", "0", "--load-cpus", "1", "--format", "csv", "-q",
        ]  # fmt: skip
        bare_times: list[float] = []
        icount_times: list[float] = []
        for i in range(rounds):
            bare_dir = work / f"bare-{i}"
            bare_dir.mkdir()
            wall, out = timed([sys.executable, "-c", BARE, str(exe), str(bare_dir)], work)
            bare_times.append(wall)
            bare_value = out.strip()
            out_file = work / f"icount-{i}.json"
            wall, out = timed([*icount_argv, "-o", str(out_file)], work)
            icount_times.append(wall)
            icount_value = out.splitlines()[1].split(",")[4]
            print(
                f"round {i + 1}: bare {bare_times[-1]:.2f} s ({bare_value} instr/request), "
                f"icount {icount_times[-1]:.2f} s ({icount_value} instr/request)"
            )
        bare = statistics.median(bare_times)
        mine = statistics.median(icount_times)
        print(f"median wall: bare script {bare:.2f} s, icount serve {mine:.2f} s")
        print(f"ratio icount / bare: {mine / bare:.3f}x (goal <= 1.15x)")


def cells(results_file: Path) -> dict[str, str]:
    """Each cell's count as the table shows it (median, or '-' and why)."""
    sys.path.insert(0, str(REPO))
    from icount import results

    out = {}
    for c in results.load(results_file).cells:
        s = c.summary
        shown = f"{s.median:,.3f}" if c.valid and s is not None else f"- ({c.reason})"
        out[f"{c.name}/{c.path}"] = shown
    return out


def bundled_targets() -> list[str]:
    """The bundled targets `icount serve` would measure here, by name."""
    sys.path.insert(0, str(REPO))
    from icount.serve import adapter

    names = []
    for p in adapter.bundled_adapter_paths():
        a = adapter.load_adapter(p)
        if adapter.unavailable_reason(a) is None:
            names.append(a.name)
        else:
            print(f"skipped {a.name}: {adapter.unavailable_reason(a)}")
    return names


def against_old(targets: list[str], rounds: int, keep: Path | None) -> None:
    targets = targets or bundled_targets()
    times: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        work = Path(tmp)
        if keep is not None:  # the results files stay there, to be read with icount table
            keep.mkdir(parents=True, exist_ok=True)
            work = keep.resolve()
        for t in targets:
            times[t] = {"new": [], "old": []}
            for i in range(rounds):
                order = ["new", "old"] if i % 2 == 0 else ["old", "new"]
                counts = {}
                for method in order:
                    out = work / f"{t}-{method}-{i}.json"
                    argv = [sys.executable, "-m", "icount", "serve", t, "--runs", "3",
                            "--backend", "callgrind", "-q", "--format", "csv",
                            "-o", str(out)]  # fmt: skip
                    if keep is not None:
                        argv.append("--force")  # --keep into a folder of an earlier run
                    if method == "old":
                        argv.append("--warmup-instrumented")
                    wall, _ = timed(argv, work, ok=(0, INVALID_CELLS))
                    times[t][method].append(wall)
                    counts[method] = cells(out)
                    print(f"{t} round {i + 1} {method}: {wall:7.1f} s", flush=True)
                for key in sorted(counts["new"]):
                    print(f"    {key:28} new {counts['new'][key]:>12}   "
                          f"old {counts['old'].get(key, '?'):>12}")  # fmt: skip
    print()
    print(f"{'target':16} {'new s':>9} {'old s':>9} {'new/old':>8}")
    total_new = total_old = 0.0
    for t in targets:
        new, old = statistics.median(times[t]["new"]), statistics.median(times[t]["old"])
        total_new, total_old = total_new + new, total_old + old
        print(f"{t:16} {new:9.1f} {old:9.1f} {new / old:8.3f}")
    print(f"{'all':16} {total_new:9.1f} {total_old:9.1f} {total_new / total_old:8.3f}"
          "   (goal <= 0.5)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", help="bundled names [every one available]")
    parser.add_argument("--against", choices=("old", "bare"), default="old")
    parser.add_argument("--rounds", type=int, default=None, help="alternating rounds [1; bare 3]")
    parser.add_argument("--keep", type=Path, help="keep the results files in this folder")
    args = parser.parse_args()
    if args.against == "bare":
        against_bare(args.rounds or 3)
    else:
        against_old(args.targets, args.rounds or 1, args.keep)


if __name__ == "__main__":
    main()
