#!/usr/bin/env python3
"""icount's overhead on one c-epoll cell under callgrind, against a bare script.

The bare script does the same work with nothing around it: per run, start c-epoll
under `setarch -R valgrind --tool=callgrind` pinned to CPU 0, poll until it
answers, `vgdb status`, one verification request, one keep-alive connection,
100 warm-up requests, then 3 windows (vgdb dump, 1000 requests, vgdb dump, read the
`totals:` line), SIGTERM. icount runs `icount serve --cmd ... --runs 3 --reps 3`
for the same single cell. Both are timed as whole processes (interpreter start
included), alternately, and the ratio of medians is printed. Goal: <= 1.15x.

Usage: python3 scripts/bench_serve.py [--rounds 3]
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


def timed(argv: list[str], cwd: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(argv)}\n{done.stderr[-2000:]}")
    return wall, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds [3]")
    args = parser.parse_args()
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
        for i in range(args.rounds):
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


if __name__ == "__main__":
    main()
