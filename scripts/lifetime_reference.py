#!/usr/bin/env python3
"""A per-request reference for a bundled target, independent of icount's windows.

    python3 scripts/lifetime_reference.py node-http --path json --warmup 10000 \\
        --n1 1000 --n2 21000

For each path, two lifetimes of the target's server under plain callgrind
(`valgrind --tool=callgrind --trace-children=yes`, instrumented from exec to exit,
no vgdb, no dumps), pinned to one CPU as icount pins a server (sched_setaffinity,
ASLR off with setarch -R where it is installed). Each life is driven by this script's
own minimal keep-alive client on one connection (pinned to another CPU): W + N1
requests in the first life, W + N2 in the second, then SIGTERM; every process's
profile is summed (the `summary:`/`totals:` line of each file). Start-up, readiness
and warm-up are the same in both lives and cancel, so (Ir2 - Ir1) / (N2 - N1) is the
whole count per request (mutator, collector, compiler, clock-driven work alike) at
W + N1 .. W + N2 requests. Compare it with `icount serve TARGET --runs 3`'s total
(mutator + runtime work) taken at the same warm-up and arrival: `--arrival idle` here
for icount's default, none (the closed loop) for a cell measured with `--arrival closed`.
Slow: Express under callgrind runs ~10 minutes per 100,000 requests on a 2-core VM.

With --split, each life's profiles are also split as icount's callgrind backend splits
a window's (backends/callgrind_reader.py's `read_self_costs`, every process summed), and the
difference prints per request as whole, mutator, collector, compiler and scheduler.
Go's scheduler waiting for the next request is in a whole lifetime but in neither
icount's mutator nor its total (it moves with the client's timing and the load), so the
figure to compare with icount's total is whole - scheduler = mutator + collector +
compiler; icount's mutator compares with the mutator, and its scheduler with the
scheduler only as far as the two clients' timings agree.

With --arrival idle each request, the warm-up's included, is sent only when every
thread of every server process waits in the kernel, as icount serve sends its counted
ones by default. Compare a cell with a reference taken under its own arrival: a JIT's
state follows it (V8 drops the optimized code of a request's closures at a major
collection that finds no request in flight, and compiles it again after each one:
docs/measuring.md, item 9).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from icount import procs
from icount.backends.callgrind_reader import read_self_costs
from icount.serve import adapter as adapters
from icount.threads_idle import Watch, wait_idle

READY_TIMEOUT_S = 300.0
IDLE_TIMEOUT_S = 120.0  # --arrival idle: a server never idle this long is refused
STOP_GRACE_S = 600.0  # valgrind writes its profile on SIGTERM; a big one takes a while
_TOTAL = re.compile(rb"^(?:summary|totals):\s+(\d+)", re.MULTILINE)


@dataclass(frozen=True)
class Split:
    """Instructions of one life, every process summed, as icount's backend splits a
    window: the whole count and the runtime's work counted apart from the mutator."""

    whole: int
    collector: int = 0
    compiler: int = 0
    scheduler: int = 0
    runtime: str | None = None  # the runtime found ("+"-joined when processes differ)

    @property
    def mutator(self) -> int:
        return self.whole - self.collector - self.compiler - self.scheduler


def split_files(files: Sequence[Path], collectors: Sequence[str] = ()) -> Split:
    """The split of profile files summed, each read by `read_self_costs` as the
    callgrind backend reads a window's file (`collectors`: its --collector patterns).
    One file is parsed at a time and dropped before the next."""
    whole = collector = compiler = scheduler = 0
    found: set[str] = set()
    for f in files:
        ir, _, work = read_self_costs(f, collectors)
        whole += ir
        if work.runtime is not None:
            found.add(work.runtime)
            collector += work.collector
            compiler += work.compiler
            scheduler += work.scheduler
    return Split(whole, collector, compiler, scheduler, "+".join(sorted(found)) or None)


def per_request(first: Split, second: Split, requests: int) -> dict[str, float]:
    """(second - first) / requests for each figure, and the total icount's compares
    with: whole less the scheduler (icount counts that in neither mutator nor total)."""
    if requests <= 0:
        raise ValueError(f"the lives must differ by 1 request or more, not {requests}")

    def per(attr: str) -> float:
        return float(getattr(second, attr) - getattr(first, attr)) / requests

    out = {k: per(k) for k in ("whole", "mutator", "collector", "compiler", "scheduler")}
    out["total"] = out["whole"] - out["scheduler"]
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Client:
    """One keep-alive connection: GET, read the head and Content-Length bytes of body."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def get(self, target: str) -> tuple[int, bytes]:
        self.sock.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        while b"\r\n\r\n" not in self.buf:
            self._read()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
            if name.strip().lower() == b"transfer-encoding":
                raise SystemExit(f"{target}: chunked answers are not read by this client")
        while len(self.buf) < length:
            self._read()
        body, self.buf = self.buf[:length], self.buf[length:]
        return status, body

    def _read(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise SystemExit("the server closed the connection")
        self.buf += data

    def close(self) -> None:
        self.sock.close()


def wait_ready(port: int, target: str, server: procs.Child) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited before answering (status {server.poll()})")
        try:
            c = Client(port)
        except OSError:
            time.sleep(0.2)  # a script waiting on a server under valgrind, not a test
            continue
        try:
            status, _ = c.get(target)
        finally:
            c.close()
        if status == 200:
            return
        raise SystemExit(f"{target}: status {status} while waiting for the server")
    raise SystemExit(f"no answer within {READY_TIMEOUT_S:.0f} s")


def send(client: Client, path: str, requests: int, pause_s: float = 0.0,
         idle: Callable[[], str | None] | None = None) -> None:  # fmt: skip
    """`requests` GETs of `path`, each after the client's pause (`pause_s`) and, with
    `idle`, once it says the server is idle (None; else why it never was: refused)."""
    for _ in range(requests):
        if pause_s:
            time.sleep(pause_s)  # the client's timing, on purpose (--pause-ms)
        if idle is not None and (why := idle()) is not None:
            raise SystemExit(f"{path}: {why}")
        status, _ = client.get(path)
        if status != 200:
            raise SystemExit(f"{path}: status {status}")


@dataclass(frozen=True)
class Life:
    ir: int  # every process's instructions summed
    files: int  # profile files
    seconds: float  # from the server's start to its profiles read
    split: Split | None  # with --split
    read_s: float = 0.0  # of `seconds`, reading the profiles


def life(
    target: adapters.Adapter,
    path: str,
    requests: int,
    build: Path,
    cpus: tuple[int, int],
    split: bool = False,
    keep: Path | None = None,
    pause_s: float = 0.0,
    idle: bool = False,
) -> Life:
    """One life that serves `requests` requests of `path` after readiness. `split`:
    its profiles split as icount's backend splits a window; `keep`: a folder the
    profiles are copied to; `pause_s`: the client's pause before each request; `idle`:
    each request sent only when every thread of the server waits in the kernel, as
    icount's default arrival sends a counted one (serve/arrival.py)."""
    valgrind = procs.require("valgrind", "install valgrind (scripts/setup.sh)")
    setarch = procs.which("setarch")
    with tempfile.TemporaryDirectory(prefix="lifetime-") as tmp:
        out = Path(tmp)
        port = free_port()
        argv = adapters.expand(target.start, port=port, build_dir=build, adapter=target)
        env = {**os.environ, **adapters.expand_env(target, port=port, build_dir=build)}
        cmd = [
            *([setarch, "-R"] if setarch else []),
            valgrind,
            "--tool=callgrind",
            "--trace-children=yes",
            f"--callgrind-out-file={out}/callgrind.out.%p",
            f"--log-file={out}/valgrind.log.%p",
            *argv,
        ]
        cwd = adapters.working_dir(target, build) or out
        started = time.monotonic()
        with procs.all_reaped():
            server = procs.spawn(cmd, env=env, cwd=cwd, cpus=[cpus[0]])
            try:
                wait_ready(port, target.ready_target, server)
                c = Client(port)
                watch = Watch(server.pid) if idle else None
                paced = (lambda: wait_idle(watch, IDLE_TIMEOUT_S)) if watch else None
                send(c, path, requests, pause_s, paced)
                c.close()
            finally:
                server.stop(grace_s=STOP_GRACE_S)
        files = sorted(out.glob("callgrind.out.*"))
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            for f in files:
                shutil.copy2(f, keep / f.name)
        read_started = time.monotonic()
        total = 0
        for f in files:
            found = _TOTAL.findall(f.read_bytes())
            if not found:
                raise SystemExit(f"{f.name}: no summary or totals line (was it cut short?)")
            total += int(found[-1])
        parts = split_files(files) if split else None
        if parts is not None and parts.whole != total:
            # callgrind's summary line against icount's parse: never seen to differ, and
            # the life is minutes of work, so said rather than refused
            print(f"note: the profiles' summary lines hold {total} Ir, icount's parse "
                  f"{parts.whole}", file=sys.stderr)  # fmt: skip
        now = time.monotonic()
        return Life(total, len(files), now - started, parts, now - read_started)


def _split_line(s: Split) -> str:
    return (f"mutator {s.mutator}, collector {s.collector}, compiler {s.compiler}, "
            f"scheduler {s.scheduler} (runtime {s.runtime or 'none found'})")  # fmt: skip


def one_path(
    target: adapters.Adapter,
    name: str,
    request: str,
    args: argparse.Namespace,
    warmup: int,
    build: Path,
    cpus: tuple[int, int],
) -> None:
    """The lives of one path, each printed as it ends, then their difference."""
    cell = f"{target.name}/{name}"
    lives: dict[int, Life] = {}
    for n, extra in ((1, args.n1), (2, args.n2)):
        if args.life not in (None, n):
            continue
        keep = args.keep_profiles / f"{target.name}-{name}-life{n}" if args.keep_profiles else None
        pause = args.pause_ms / 1000
        idle = args.arrival == "idle"
        one = life(target, request, warmup + extra, build, cpus, args.split, keep, pause, idle)
        lives[n] = one
        print(f"{cell}: life {n}: {warmup}+{extra} requests, {one.ir} Ir in {one.files} "
              f"profile(s), {one.seconds:.0f} s", flush=True)  # fmt: skip
        if one.split is not None:
            print(f"{cell}: life {n}: {_split_line(one.split)}; profiles read in "
                  f"{one.read_s:.1f} s", flush=True)  # fmt: skip
    if len(lives) < 2:
        return
    requests = args.n2 - args.n1
    per = (lives[2].ir - lives[1].ir) / requests
    print(f"{cell}: (Ir2 - Ir1) / (N2 - N1) = {per:.1f} per request (W {warmup}, "
          f"N1 {args.n1}, N2 {args.n2})", flush=True)  # fmt: skip
    s1, s2 = lives[1].split, lives[2].split
    if s1 is not None and s2 is not None:
        f = per_request(s1, s2, requests)
        print(f"{cell}: per request: whole {f['whole']:.1f}, mutator {f['mutator']:.1f}, "
              f"collector {f['collector']:.1f}, compiler {f['compiler']:.1f}, scheduler "
              f"{f['scheduler']:.1f}; total comparable to icount's (whole - scheduler) "
              f"{f['total']:.1f}", flush=True)  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("target", help="a bundled target's name or an adapter.toml")
    ap.add_argument("--path", action="append", help="path names (repeatable) [all]")
    ap.add_argument("--warmup", type=int, default=None, help="W [the adapter's warmup_hint]")
    ap.add_argument("--n1", type=int, default=1000, help="requests after W in life 1")
    ap.add_argument("--n2", type=int, default=21000, help="requests after W in life 2")
    ap.add_argument(
        "--life",
        type=int,
        choices=(1, 2),
        help="only this life (to run the two "
        "at once, one per CPU; subtract their printed counts) [both]",
    )
    ap.add_argument(
        "--split",
        action="store_true",
        help="also split each life as icount's backend splits a window (mutator, "
        "collector, compiler, scheduler) and print the difference per request",
    )
    ap.add_argument(
        "--keep-profiles", type=Path, metavar="DIR", help="copy each life's profiles to DIR"
    )
    ap.add_argument(
        "--pause-ms",
        type=float,
        default=0.0,
        help="the client sleeps this long before each request, so that the server waits "
        "for every one (Go's scheduler then counts more; whole - scheduler should not "
        "move) [0]",
    )
    ap.add_argument(
        "--arrival",
        choices=("closed", "idle"),
        default="closed",
        help="idle: each request, warm-up included, is sent only when every thread of "
        "every server process waits in the kernel, as icount serve's default sends its "
        "counted ones (a V8 server's JIT state follows the arrival: compare like with "
        "like) [closed]",
    )
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--client-cpu", type=int, default=1)
    args = ap.parse_args()
    # checked before anything is built or run: (Ir2 - Ir1) / (N2 - N1) needs N2 > N1, and
    # a bad pair used to end in a ZeroDivisionError after both lives had been spent
    if args.n1 < 0 or args.n2 <= args.n1:
        ap.error(f"--n2 must be more than --n1 (0 or more), got --n1 {args.n1} --n2 {args.n2}")
    if not args.pause_ms >= 0:  # NaN too: it would fail in the client, lives already spent
        ap.error(f"--pause-ms must be 0 or more, got {args.pause_ms:g}")
    if args.n2 - args.n1 < 20000:
        print("note: the issue asks for N2 - N1 >= 20,000", file=sys.stderr)
    toml = Path(args.target)
    if not toml.is_file():
        toml = adapters.adapters_dir() / args.target / "adapter.toml"
    target = adapters.load_adapter(toml)
    warmup = args.warmup if args.warmup is not None else max(target.warmup_hint or 0, 100)
    paths = [p for p in target.paths if not args.path or p.name in args.path]
    cpus = (args.server_cpu, args.client_cpu)
    os.sched_setaffinity(0, {args.client_cpu})  # the client, apart from the server
    build = Path(tempfile.mkdtemp(prefix="lifetime-build-"))
    try:
        adapters.build_adapter(target, build)
        for p in paths:
            one_path(target, p.name, p.request_target, args, warmup, build, cpus)
    finally:
        shutil.rmtree(build, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
