"""Options and arguments shared by the commands that measure (`serve`, `run`, and
`interleave`, which measures its runs as they do): declared here, so that no command
imports another for them."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from icount.errors import UsageError
from icount.session import options as o

if TYPE_CHECKING:
    from icount.measure_command import CommandSpec
    from icount.serve.plan import ServeRequest
    from icount.serve.targets import CmdServer, PathChoice

# serve's options that decide how a run is measured, declared and parsed here only:
# `icount interleave --base-target` measures each run as a serve cell's and takes most
# of them too. param -> (default, flags, help, typer's other settings).
_MEASURE: dict[str, tuple[Any, tuple[str, ...], str, dict[str, Any]]] = {
    "reps": (o.REPS, ("--reps",), "Windows per server process.", {"min": 1, "max": 100}),
    "warmup": (None, ("--warmup",), "Requests before counting, or auto [callgrind 100, perf "
               "1000, or the adapter's warmup_hint when larger].", {}),
    "requests": (None, ("--requests",), "Requests per window [callgrind 1000, perf 40000].",
                 {"min": 1}),
    "concurrency": (o.CONCURRENCY, ("--concurrency", "-c"), "Keep-alive connections.",
                    {"min": 1, "max": 10000}),
    "server_cpus": (None, ("--server-cpus",), "CPUs for the server [half].", {}),
    "load_cpus": (None, ("--load-cpus",), "CPUs for the load [other half].", {}),
    "load": (None, ("--load",), "builtin, h2load, ab, wrk or oha [builtin].", {}),
    "arrival": (None, ("--arrival",), "idle: send each request when every thread of the "
                "server waits in the kernel; closed: as soon as the last answer is in "
                "[idle with the built-in client].", {}),
    "connection": ("auto", ("--connection",), "keep-alive, or close: each request on its "
                   "own connection, counted with it [auto: close where the server closes "
                   "after every answer].", {}),
    "max_spread": (o.MAX_SPREAD_TEXT, ("--max-spread",), "Spread limit for a valid cell.", {}),
    "max_load": (None, ("--max-load",), "Refuse to start above this load1.", {}),
    "thread": (None, ("--thread",), "callgrind: count only this valgrind thread of the "
               "started process.", {"min": 1}),
    "processes": ("all", ("--processes",), "all: every process of the server (forked "
                  "workers, exec'd children); root: only the started process.", {}),
    "warmup_instrumented": (False, ("--warmup-instrumented",), "callgrind: warm up with "
                            "instrumentation on (~5x slower; the counts are the same) "
                            "instead of off until the first window.", {}),
    "idle_seconds": (o.IDLE_SECONDS, ("--idle-seconds",), "An idle window after each run's "
                     "reps, for the rate of work driven by the clock [1; 0: none].", {}),
    "max_windows": (o.MAX_WINDOWS, ("--max-windows",), "A collected runtime: windows a run "
                    "takes at most, --reps included, adding them until its total's 95% "
                    f"interval fits --max-spread [{o.MAX_WINDOWS}; --reps: none added].", {}),
    "max_extra_seconds": (o.MAX_EXTRA_SECONDS, ("--max-extra-seconds",), "A collected "
                          "runtime: seconds a run spends at most on the windows it adds "
                          f"[{o.MAX_EXTRA_SECONDS:g}; 0: none].", {}),
    "collector": ([], ("--collector",), "callgrind: a collector entry point (a regular "
                  "expression over whole function names, counted inclusively) for a runtime "
                  "icount's table does not know; repeatable.", {"metavar": "PATTERN"}),
}  # fmt: skip
MEASURE_OPTIONS = tuple(_MEASURE)


def measure_option(param: str) -> Any:
    """The typer option of serve's measure option `param`, for each command taking it."""
    default, flags, text, extra = _MEASURE[param]
    return typer.Option(default, *flags, help=text, **extra)


def measure_flag(param: str) -> str:
    return _MEASURE[param][1][0]


def serve_request(
    *,
    reps: int = o.REPS,
    warmup: str | None = None,
    requests: int | None = None,
    concurrency: int = o.CONCURRENCY,
    server_cpus: str | None = None,
    load_cpus: str | None = None,
    load: str | None = None,
    arrival: str | None = None,
    connection: str = "auto",
    max_spread: str = o.MAX_SPREAD_TEXT,
    max_load: float | None = None,
    thread: int | None = None,
    processes: str = "all",
    warmup_instrumented: bool = False,
    idle_seconds: float = o.IDLE_SECONDS,
    max_windows: int = o.MAX_WINDOWS,
    max_extra_seconds: float = o.MAX_EXTRA_SECONDS,
    collector: Sequence[str] = (),
    targets: tuple[str, ...] = (),
    cmd: CmdServer | None = None,
    runs: int = o.RUNS,
    backend: str = "auto",
    cold_start: bool = False,
    memory: bool = False,
    keep_profiles: bool = False,
    profile_top: int = o.PROFILE_TOP,
    only_paths: tuple[PathChoice, ...] = (),
) -> ServeRequest:
    """The ServeRequest of serve's measure options as typer parsed them (each of
    MEASURE_OPTIONS, by name; one not taken keeps serve's default), checked and typed
    here, once, with the request's other fields as the command typed them."""
    from icount import cpus as cpus_mod
    from icount.serve.plan import ServeRequest

    def cpus(text: str | None, param: str) -> tuple[int, ...] | None:
        return cpus_mod.parse_cpu_list(text, measure_flag(param)) if text else None

    return ServeRequest(
        server_cpus=cpus(server_cpus, "server_cpus"),
        load_cpus=cpus(load_cpus, "load_cpus"),
        reps=reps,
        requests=requests,
        warmup=None if warmup is None else o.Warmup.parse(warmup),
        concurrency=concurrency,
        load=load,
        arrival=o.Arrival.parse(arrival) if arrival else None,
        connection=o.parse_connection(connection or "auto"),
        max_spread=o.parse_spread(max_spread),
        max_load=max_load,
        thread=thread,
        processes=o.Processes.parse(processes),
        warmup_instrumented=warmup_instrumented,
        idle_seconds=o.check_idle_seconds(idle_seconds),
        max_windows=o.check_max_windows(max_windows),
        max_extra_seconds=o.check_max_extra_seconds(max_extra_seconds),
        collectors=tuple(collector),
        targets=targets,
        cmd=cmd,
        runs=runs,
        backend=backend,
        cold_start=cold_start,
        memory=memory,
        keep_profiles=keep_profiles,
        profile_top=profile_top,
        only_paths=only_paths,
    )


def explicit_options(ctx: typer.Context) -> frozenset[str]:
    """The options given on the command line (not left at their defaults)."""
    given = set()
    for option in ctx.params:
        source = ctx.get_parameter_source(option)
        if source is not None and source.name != "DEFAULT":
            given.add(option)
    return frozenset(given)


def collect_commands(
    command: list[str],
    name: str | None,
    cmds: list[str],
    file: Path | None,
    env: dict[str, str],
    *,
    resuming: bool,
) -> list[CommandSpec]:
    """The commands to measure, in the order given: each --cmd NAME=LINE, then --file's
    [[command]] tables, then the command after -- (named --name or by its program)."""
    from icount.measure_command import CommandSpec, load_commands_file

    specs: list[CommandSpec] = []
    for item in cmds:
        label, sep, line = item.partition("=")
        if not sep or not label or not line.strip():
            raise UsageError(f"--cmd takes NAME=COMMAND LINE, got {item!r}")
        try:
            argv = shlex.split(line)
        except ValueError as e:
            raise UsageError(f"--cmd {label}: {e}") from None
        specs.append(CommandSpec(label, tuple(argv), env))
    if file is not None:
        specs += load_commands_file(file, env)
    if command:
        specs.append(CommandSpec(name or Path(command[0]).name, tuple(command), env))
    elif name:
        raise UsageError("--name names the command after --, but there is none")
    if not specs and not resuming:  # resumed: resume_request refuses it, naming the file's
        raise UsageError(
            "nothing to run", hint="give a command after --, --cmd or --file; see icount run --help"
        )
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UsageError(f"command names must be unique: {', '.join(dupes)}", hint="use --name")
    return specs
