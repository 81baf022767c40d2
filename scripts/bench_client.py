#!/usr/bin/env python3
"""Throughput of icount's built-in load client against h2load (and ab -k), natively.

    python3 scripts/bench_client.py [--requests 200000] [--concurrency 64] [--rounds 3]

Builds the bundled c-epoll server, pins it to the first allowed CPU and every client to
another one, then alternates rounds of: the built-in client (connections opened before
the timed run, as in `icount serve`), h2load --h1 and ab -k, each sending the same
number of requests. Prints the median req/s of each and the ratio built-in / h2load
measured in this same run; the issue's goal is >= 0.5 (icount.serve.loadgen keeps the
figure in BUILTIN_VS_H2LOAD to choose the default load generator under perf).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from icount import procs
from icount.serve import adapter as adapters
from icount.serve.http_client import KeepAliveClient, fetch
from icount.serve.loadgen import make_load_generator


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    cpus = sorted(os.sched_getaffinity(0))
    server_cpus, load_cpus = ([cpus[0]], cpus[1:]) if len(cpus) > 1 else (cpus, cpus)
    target = adapters.load_adapter(adapters.adapters_dir() / "c-epoll" / "adapter.toml")
    path = target.paths[0]
    kinds = [k for k in ("h2load", "ab") if procs.which(k)]
    rates: dict[str, list[float]] = {"builtin": [], **{k: [] for k in kinds}}

    with tempfile.TemporaryDirectory() as tmp, procs.all_reaped():
        build = Path(tmp)
        adapters.build_adapter(target, build)
        port = free_port()
        argv = adapters.expand(target.start, port=port, build_dir=build, adapter=target)
        server = procs.spawn(argv, cpus=server_cpus)
        ok = procs.wait_until(lambda: _answers(port, path), timeout=10)
        if not ok:
            print("c-epoll did not start", file=sys.stderr)
            return 1
        os.sched_setaffinity(0, load_cpus)
        for _ in range(args.rounds):
            with KeepAliveClient("127.0.0.1", port, path, args.concurrency, 10.0) as client:
                client.run(args.requests // 10)  # warm-up, as icount serve does
                result = client.run(args.requests)
            assert result.ok, result.first_error
            rates["builtin"].append(result.rps)
            for kind in kinds:
                tool = make_load_generator(
                    kind, "127.0.0.1", port, path, args.concurrency, 10.0, load_cpus
                )
                t0 = time.perf_counter()
                res = tool.run(args.requests)
                wall = time.perf_counter() - t0
                assert res.ok, res.first_error
                # req/s over the tool's whole process lifetime (as icount would see it)
                rates[kind].append(res.requested / wall)
        server.stop()

    print(f"c-epoll, c={args.concurrency}, {args.requests} requests, {args.rounds} rounds, "
          f"server on CPU {server_cpus}, clients on CPUs {load_cpus}")  # fmt: skip
    med = {k: statistics.median(v) for k, v in rates.items()}
    for kind, values in rates.items():
        shown = ", ".join(f"{v:,.0f}" for v in values)
        print(f"  {kind:8s} median {med[kind]:>9,.0f} req/s  ({shown})")
    if "h2load" in med:
        print(f"built-in / h2load = {med['builtin'] / med['h2load']:.2f} (goal >= 0.5)")
    else:
        print("h2load is not installed: no ratio (apt-get install nghttp2-client)")
    return 0


def _answers(port: int, path: adapters.PathSpec) -> bool:
    try:
        fetch("127.0.0.1", port, path, 1.0)
    except OSError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
