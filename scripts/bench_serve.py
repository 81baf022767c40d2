#!/usr/bin/env python3
"""icount serve's wall time: the warm-up method against the old one or an earlier revision's
code, and the overhead.

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

`--against rev [--rev REV]`: the code of this checkout against git revision REV
(default `c8f9c8d^`, the code before collected runtimes were counted apart: issue 19),
each side with its own adapters/ (its own warm-up hints) and its own builds. REV is
checked out with `git worktree add --detach` into a temporary folder, removed at the end
(also on Ctrl-C or an error) and pruned. Each side runs as `python3 -m icount serve
[TARGET] --runs 3 -o FILE` with PYTHONPATH set to its tree (checked first: the `icount`
that imports must be that tree's, not the shared editable install) and ICOUNT_ADAPTERS
unset; exactly the README's quick start, plus the results file. With targets named (or
none: every bundled target this checkout can run), one session per target and side;
`--quickstart`: one session per side with no target named, as the README runs it, each
side choosing its own targets. The sides alternate which goes first from round to round
and from target to target (`--rounds N`).
Per target, the seconds come from the session's progress lines on stderr, stamped as
they arrive (a line's time until the next line goes to the target it names; the builds
are a target's too). Each side's results file is read with this checkout's loader: an
old file that does not load is reported as such. Printed: per session its exit code
and wall time, every cell's value and validity both ways, and per target the wall
times (medians over the rounds) and new/old.

Usage: python3 scripts/bench_serve.py [TARGET ...] [--rounds 1] [--keep DIR]
       python3 scripts/bench_serve.py --against bare [--rounds 3]
       python3 scripts/bench_serve.py --against rev [--rev REV] [TARGET ... | --quickstart]
                                      [--rounds 1] [--keep DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icount.results import Cell

REPO = Path(__file__).resolve().parents[1]
# an interrupted icount stopping its servers: a JIT server under valgrind writes its
# profile on SIGTERM, which can take minutes
STOP_GRACE_S = 600.0

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


DEFAULT_REV = "c8f9c8d^"  # issue 19: the code before collected runtimes were counted apart
STARTUP = "(start-up)"  # the time before a session's first line that names a target
PROGRESS = re.compile(
    r"^icount: (?:\[\d+/\d+\] )?(?:building (?P<built>\S+)$|(?P<cell>[^\s/]+)/[^\s/]+/[^\s/]+ )"
)
SIDES = ("new", "old")


def target_of(line: str) -> str | None:
    """The target a progress line of `icount serve` names (a cell's key or a build)."""
    m = PROGRESS.match(line)
    if m is None:
        return None
    return m.group("built") or m.group("cell")


def split_by_target(lines: list[tuple[float, str]], end: float) -> dict[str, float]:
    """Seconds per target from stamped stderr lines (seconds since the start): each line's
    time until the next one (the last one's until `end`) goes to the target it names, or
    to the one named last where it names none; before any, to STARTUP."""
    out: dict[str, float] = {}
    current, since = STARTUP, 0.0
    for stamp, line in lines:
        named = target_of(line)
        if named is not None and named != current:
            out[current] = out.get(current, 0.0) + stamp - since
            current, since = named, stamp
    out[current] = out.get(current, 0.0) + end - since
    return {t: s for t, s in out.items() if t != STARTUP or s > 0.0}


@dataclass
class Session:
    """One `icount serve` process of one side."""

    side: str
    round: int
    unit: str  # the target it was given, or "quickstart"
    exit_code: int
    wall: float
    per_target: dict[str, float]
    cells: dict[str, str] | str  # key -> shown value, or why the results did not load


def cell_text(cell: Cell) -> str:
    """A cell's value and validity as this checkout reads it (the total beside a collected
    runtime's mutator)."""
    s = cell.summary
    shown = f"{s.median:,.3f}" if s is not None else "-"
    shown += " valid" if cell.valid else f" INVALID ({cell.reason})"
    f = cell.runtime
    if f is not None and f.total is not None:
        shown += f"; total {f.total:,.3f}" + ("" if f.total_valid else f" INVALID ({f.reason})")
    return shown


def read_cells(results_file: Path) -> dict[str, str] | str:
    """Every cell of a results file, read with this checkout's loader; the error as text
    where it does not load (an old file must load: that it does not is a finding)."""
    if not results_file.exists():
        return "no results file written"
    sys.path.insert(0, str(REPO))
    from icount import results

    try:
        loaded = results.load(results_file)
    except Exception as e:  # any failure to read is what the report shows
        return f"does not load with this checkout: {type(e).__name__}: {e}"
    return {c.key_text: cell_text(c) for c in loaded.cells}


def side_env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ICOUNT_ADAPTERS"}
    env["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, [env.get("PYTHONPATH")])])
    return env


def check_imports_from(tree: Path, cwd: Path) -> Path:
    """Where `icount` imports from with the side's environment; exits unless it is `tree`
    (an editable install's finder could answer before PYTHONPATH)."""
    done = subprocess.run(
        [sys.executable, "-c", "import icount; print(icount.__file__)"],
        cwd=cwd, env=side_env(tree), capture_output=True, text=True, check=False,
    )  # fmt: skip
    found = Path(done.stdout.strip()).resolve()
    if done.returncode != 0 or not found.is_relative_to(tree.resolve()):
        sys.exit(f"icount imports from {found}, not from {tree}: {done.stderr[-1000:]}")
    return found


def git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


@contextlib.contextmanager
def worktree(commit: str, where: Path) -> Iterator[Path]:
    """`commit` checked out (detached) at `where`, removed and pruned afterwards, also when
    the body fails or is interrupted."""
    git("worktree", "add", "--detach", "--quiet", str(where), commit)
    try:
        yield where
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)],
                       capture_output=True, check=False)  # fmt: skip
        subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], check=False)


def run_stamped(
    argv: list[str], cwd: Path, env: dict[str, str], stdout: Path
) -> tuple[int, float, dict[str, float]]:
    """Runs `argv`: its exit code, wall time and seconds per target, from each stderr line
    stamped as it arrives (kept beside `stdout`, the stamps in front). On Ctrl-C (or
    SIGTERM, which main turns into one) icount gets SIGINT, to stop its servers as it
    does on a terminal, and is waited for (`_reap`)."""
    lines: list[tuple[float, str]] = []
    t0 = time.monotonic()
    with stdout.open("w") as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)  # fmt: skip
        try:
            assert proc.stderr is not None
            for line in proc.stderr:
                lines.append((time.monotonic() - t0, line.rstrip("\n")))
            code = proc.wait()
        except BaseException:
            proc.send_signal(signal.SIGINT)
            _reap(proc)
            raise
    wall = time.monotonic() - t0
    (stdout.with_suffix(".stderr")).write_text("".join(f"{s:8.1f} {x}\n" for s, x in lines))
    return code, wall, split_by_target(lines, wall)


def _reap(proc: subprocess.Popen[str]) -> None:
    """Waits for an interrupted icount to stop its servers; a further Ctrl-C during the
    wait is passed on and the wait goes on, and only after STOP_GRACE_S is the whole
    session group killed (icount's servers run in sessions of their own: said, since
    they may be left)."""
    deadline = time.monotonic() + STOP_GRACE_S
    while True:
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
            return
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            print(f"bench_serve: icount did not stop within {STOP_GRACE_S:g} s and was killed; "
                  "servers it started may be left", file=sys.stderr)  # fmt: skip
            return


def report_rev(sessions: list[Session], units: list[str], rounds: int) -> list[str]:
    """The report's lines: per session its exit code and wall time, every cell both ways,
    then per target (and whole session) the median wall times and new/old."""
    by = {(s.side, s.round, s.unit): s for s in sessions}
    out = []
    for r in range(rounds):
        for u in units:
            new, old = by.get(("new", r, u)), by.get(("old", r, u))
            out.append(f"round {r + 1} {u}: " + ", ".join(
                f"{s.side} exit {s.exit_code} in {s.wall:.1f} s" for s in (new, old) if s
            ))  # fmt: skip
            cells = {s.side: s.cells for s in (new, old) if s}
            for side, c in cells.items():
                if isinstance(c, str):
                    out.append(f"    {side}: {c}")
            keys = sorted({k for c in cells.values() if not isinstance(c, str) for k in c})
            for k in keys:
                shown = [c.get(k, "(no such cell)") if isinstance(c, dict) else "?"
                         for c in (cells.get("new", {}), cells.get("old", {}))]  # fmt: skip
                out.append(f"    {k}")
                out.append(f"        new {shown[0]}")
                out.append(f"        old {shown[1]}")
    summed: dict[tuple[str, int], dict[str, float]] = {}  # a side's round, over its sessions
    whole: dict[str, dict[str, list[float]]] = {u: {"new": [], "old": []} for u in units}
    for s in sessions:
        into = summed.setdefault((s.side, s.round), {})
        for t, secs in s.per_target.items():
            into[t] = into.get(t, 0.0) + secs
        whole[s.unit][s.side].append(s.wall)
    rows: dict[str, dict[str, list[float]]] = {}
    for (side, _), per in sorted(summed.items()):
        for t, secs in per.items():
            rows.setdefault(t, {"new": [], "old": []})[side].append(secs)
    median = "median of the rounds, " if rounds > 1 else ""
    out += ["", f"wall seconds ({median}per target from the progress lines on stderr):"]
    out.append(f"{'target':22} {'new s':>9} {'old s':>9} {'new/old':>8}")

    def row(name: str, times: dict[str, list[float]]) -> str:
        new, old = (statistics.median(times[x]) if times[x] else None for x in SIDES)
        ratio = f"{new / old:8.3f}" if new is not None and old else f"{'-':>8}"
        shown = [f"{x:9.1f}" if x is not None else f"{'-':>9}" for x in (new, old)]
        return f"{name:22} {shown[0]} {shown[1]} {ratio}"

    for t in sorted(rows, key=lambda t: (t != STARTUP, t)):
        out.append(row(t, rows[t]))
    out.append("whole sessions:")
    for u in units:
        out.append(row(u, whole[u]))
    if len(units) > 1:
        total = {x: [sum(statistics.median(whole[u][x]) for u in units if whole[u][x])]
                 for x in SIDES}  # fmt: skip
        out.append(row("all", total))
    return out


def against_rev(
    targets: list[str], rev: str, quickstart: bool, rounds: int, keep: Path | None
) -> None:
    commit = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    print(f"old: {rev} = {git('log', '-1', '--format=%h (%cd)', '--date=iso', commit)}")
    print(
        f"new: this checkout ({REPO}), HEAD {git('rev-parse', '--short', 'HEAD')}"
        + (" with changes" if git("status", "--porcelain", "--untracked-files=no") else "")
    )
    units = ["quickstart"] if quickstart else (targets or bundled_targets())
    sessions: list[Session] = []
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        work = Path(tmp) / "results"
        if keep is not None:  # the results files stay there, to be read with icount table
            work = keep.resolve()
        work.mkdir(parents=True, exist_ok=True)
        with worktree(commit, Path(tmp) / "old-tree") as old_tree:
            trees = {"new": REPO, "old": old_tree}
            for side in SIDES:
                found = check_imports_from(trees[side], work).relative_to(trees[side].resolve())
                where = "this checkout" if side == "new" else "the worktree"
                print(f"{side}: icount imports from {where}/{found}")
            for n, u in enumerate(units):
                for r in range(rounds):
                    # alternate by target too: the first session of a round pays the cold
                    # caches (valgrind's, node's, npm's), which would lean one round alike
                    order = SIDES if (r + n) % 2 == 0 else SIDES[::-1]
                    for side in order:
                        out = work / f"{u}-{side}-{r + 1}.json"
                        named = [] if quickstart else [u]
                        argv = [sys.executable, "-m", "icount", "serve", *named,
                                "--runs", "3", "-o", str(out)]  # fmt: skip
                        if keep is not None:
                            argv.append("--force")  # --keep into a folder of an earlier run
                        env = side_env(trees[side])
                        code, wall, per = run_stamped(argv, work, env, out.with_suffix(".out"))
                        s = Session(side, r, u, code, wall, per, read_cells(out))
                        sessions.append(s)
                        print(f"{u} round {r + 1} {side}: exit {s.exit_code}, {s.wall:.1f} s",
                              file=sys.stderr, flush=True)  # fmt: skip
    print()
    print("\n".join(report_rev(sessions, units, rounds)))


def interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", help="bundled names [every one available]")
    parser.add_argument("--against", choices=("old", "bare", "rev"), default="old")
    parser.add_argument(
        "--rev", default=DEFAULT_REV, help=f"with rev: the old code [{DEFAULT_REV}]"
    )
    parser.add_argument(
        "--quickstart", action="store_true", help="with rev: `icount serve --runs 3`, no target"
    )
    parser.add_argument("--rounds", type=int, default=None, help="alternating rounds [1; bare 3]")
    parser.add_argument("--keep", type=Path, help="keep the results files in this folder")
    args = parser.parse_args()
    if args.against != "rev" and (args.quickstart or args.rev != DEFAULT_REV):
        parser.error("--rev and --quickstart go with --against rev")
    if args.quickstart and args.targets:
        parser.error("--quickstart names no target (the README's command)")
    if args.against == "bare":
        against_bare(args.rounds or 3)
    elif args.against == "rev":
        signal.signal(signal.SIGTERM, interrupted)  # the worktree is removed then too
        try:
            against_rev(args.targets, args.rev, args.quickstart, args.rounds or 1, args.keep)
        except KeyboardInterrupt:
            print("interrupted; the worktree is removed", file=sys.stderr)
            sys.exit(130)
    else:
        against_old(args.targets, args.rounds or 1, args.keep)


if __name__ == "__main__":
    main()
