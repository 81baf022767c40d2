"""The perf backend: `perf stat -e instructions:u` on commands and servers.

Whole commands run under `perf stat` (inherited children are counted: perf's
default); servers run under `perf stat` with a control fifo that switches counting
on and off around each window (`perf_server.py`). Hardware counters are
`<not supported>` on most VMs: `probe()` says whether this machine counts, and why.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from icount import environment, procs
from icount.backends.perf_parser import EVENT, SEP, find_event, parse_csv
from icount.backends.perf_stat import (
    INSTALL_HINT,
    perf_args,
    perf_env,
    perf_path,
    perf_version,
    stat_args,
)
from icount.backends.protocol import (
    INSTRUCTION_FLOOR,
    ArgvKind,
    Check,
    Counted,
    Probe,
    ProcessMode,
    Registration,
    ServeDefaults,
    Server,
    left_running,
)
from icount.errors import ParseError

NAME = "perf"
SERVE_DEFAULTS = ServeDefaults(
    warmup=1000,
    requests=40000,
    client_timeout_s=10.0,
    window="fifo",  # as results files name it (results.details.WINDOW_FIFO)
    window_why="counters enabled and disabled on perf stat's control fifo",
)


def paranoid_level() -> int | None:
    try:
        return int(Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip())
    except (OSError, ValueError):
        return None


@functools.cache
def counter_probe() -> Probe:
    """Can `perf stat -e instructions:u` count here? Answers with perf's reason."""
    perf = perf_path()
    if perf is None:
        return Probe(False, f"perf is not installed ({INSTALL_HINT})")
    done = procs.run(
        [perf, "stat", "-x", SEP, "-e", EVENT, "--", "true"], env=perf_env(), timeout=30
    )
    text = done.stderr.decode("utf-8", "replace")
    paranoid = paranoid_level()
    try:
        count = find_event(parse_csv(text, "perf probe"))
    except ParseError:
        first = text.strip().splitlines()[:1]
        detail = first[0] if first else f"exit {done.returncode}"
        if paranoid is not None and paranoid > 2 and os.geteuid() != 0:
            detail += f"; kernel.perf_event_paranoid={paranoid} forbids it for non-root users"
        return Probe(False, f"perf stat failed: {detail}")
    if count.value is None:
        if count.problem and "not supported" in count.problem:
            return Probe(
                False,
                f"{EVENT} is <not supported>: the CPU's PMU is not exposed "
                "to this machine (common on VMs)",
            )
        return Probe(False, count.problem or f"{EVENT} not counted")
    if count.problem:
        return Probe(False, count.problem)
    return Probe(True, f"probe counted {count.value:.0f} instructions:u for `true`")


def probe() -> Probe:
    """The backend's answer: usable, or why not and what to use instead."""
    raw = counter_probe()
    if raw.usable:
        return Probe(True, f"perf stat counts instructions:u here ({raw.why})")
    return Probe(
        False, f"perf cannot count instructions:u here ({raw.why})", hint="use --backend callgrind"
    )


@dataclass(frozen=True)
class PerfOptions:
    """The settings the perf backend takes (`Registration.options`)."""

    processes: ProcessMode = "all"  # "root": perf stat --no-inherit
    event: str = EVENT  # the event to count (tests use software events where no PMU counts)

    @property
    def inherit(self) -> bool:
        """Children are counted too (perf's default)."""
        return self.processes != "root"


def checks() -> list[Check]:
    """What perf needs here: a perf that counts instructions:u, and the kernel's leave."""
    counted = counter_probe()
    version = perf_version() if perf_path() else "not installed"
    paranoid = paranoid_level()
    root = os.geteuid() == 0
    user = "root" if root else f"uid {os.geteuid()}"
    return [
        Check("perf stat instructions:u", counted.usable, f"{version}: {counted.why}"),
        Check(
            "perf_event_paranoid",
            paranoid is not None and (paranoid <= 2 or root),
            f"{paranoid} (running as {user})" if paranoid is not None else "unreadable",
        ),
    ]


class PerfBackend:
    """Counts commands and servers (`protocol.Backend`) with its settings."""

    name = NAME
    serve_defaults = SERVE_DEFAULTS
    instrumented = False  # counted natively: a loaded machine moves its counts

    def __init__(self, options: PerfOptions | None = None) -> None:
        self.options = options or PerfOptions()
        self.event = self.options.event
        self.inherit = self.options.inherit
        # only instruction events have a floor; software events (task-clock) do not
        floor = self.event.startswith("instructions")
        self.instruction_floor = INSTRUCTION_FLOOR if floor else None

    def version(self) -> str:
        return perf_version()

    def fingerprint_argv(self, kind: ArgvKind) -> list[str]:
        if kind == "command":
            return ["perf", *stat_args(Path("<out>/perf-stat.txt"), self.event, self.inherit)]
        ctl, ack = Path("<run>/ctl"), Path("<run>/ack")
        return ["perf", *perf_args(self.event, ctl, ack, self.inherit)]

    def cell_params(self) -> dict[str, object]:
        processes = "all" if self.inherit else "root"
        return {"thread": None, "processes": processes, "perf_event": self.event}

    def count_command(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        timeout: float | None,
    ) -> Counted:
        """Run `argv` once under `perf stat` (children included)."""
        perf = procs.require("perf", INSTALL_HINT)
        run_dir.mkdir(parents=True, exist_ok=True)
        prefix, _ = environment.aslr_wrapper()
        out_file = run_dir / "perf-stat.txt"
        out_file.unlink(missing_ok=True)  # an earlier run's counts are never read as this one's
        # perf's own environment gets LC_NUMERIC=C; the measured command inherits it.
        done = procs.run(
            [*prefix, perf, *stat_args(out_file, self.event, self.inherit), "--", *argv],
            env=perf_env(env),
            cwd=cwd,
            timeout=timeout,
            stdout=run_dir / "stdout",
            stderr=run_dir / "stderr",
        )
        if done.timed_out:
            return Counted(None, done.returncode, True, f"timed out after {timeout:g} s")
        if done.leftovers:
            return Counted(None, done.returncode, False, left_running(done.leftovers))
        try:
            text = out_file.read_text(errors="replace")
            count = find_event(parse_csv(text, str(out_file)), self.event)
        except (OSError, ParseError) as e:
            return Counted(None, done.returncode, False, f"no perf stat output: {e}")
        value = int(count.value) if count.ok and count.value is not None else None
        return Counted(value, done.returncode, False, count.problem)

    def server_problem(self, argv: Sequence[str]) -> str | None:
        return None  # perf follows exec, so a launcher script is counted too

    def start_server(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        cpus: Sequence[int],
        whole_life: bool = False,
    ) -> Server:
        from icount.backends.perf_server import PerfServer

        return PerfServer(
            argv,
            run_dir,
            env=env,
            cwd=cwd,
            cpus=cpus,
            event=self.event,
            inherit=self.inherit,
            enabled=whole_life,
        )


BACKEND = Registration(PerfOptions, PerfBackend, probe, checks)
