"""`icount interleave`: two builds measured alternately, A B A B, gated on their pairs
(`icount compare --interleave` is routed here: route_compare)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from icount.cli import comparing
from icount.cli.measure_options import (
    MEASURE_OPTIONS,
    explicit_options,
    measure_flag,
    measure_option,
    serve_request,
)
from icount.cli.options import BACKEND_HELP
from icount.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from icount.compare.model import Comparison
    from icount.compare.thresholds import Thresholds
    from icount.serve.plan import ServeRequest

HELP = """Measure two builds alternately, A B A B, and fail on regressions (exit 3).

\b
Examples:
  icount interleave --base-cmd './fib-old 30' --new-cmd './fib 30' --pairs 5
  icount interleave --base-cmd './fib-old 30' --new-cmd './fib 30' \\
      --control-cmd './fib-same 30' --pairs 6     # a third, unchanged build in each round
  icount interleave --base-target main/adapters/c-epoll \\
      --new-target pr/adapters/c-epoll --path json --pairs 3 --arrival closed

\b
--base-cmd and --new-cmd run alternately (base, new, base, new ...) for
--pairs pairs, each run a fresh process measured as `icount run` measures
one; the verdict gates on the median of the per-pair ratios new/base, and
the change counts only when every pair's ratio lies on the same side of 1
(and beyond --threshold and --min-delta, as in `icount compare`).
`icount compare --interleave ...` runs this command.

\b
--base-target and --new-target (adapter files or folders, as `icount
serve` takes them) do the same for two server builds: a fresh server each
run, measured as a serve cell's run is, every path a cell (--path NAME:
only that one), with serve's options that decide how a run is measured
(--requests, --reps, --warmup, --concurrency, --load, --arrival, ...,
below; as `icount serve` takes them). Both builds are measured with the
same --arrival (idle with the built-in client, else closed). Each
run's figure is judged, a collected runtime's mutator: no windows are added
for its total. -o FILE writes FILE's provenance beside it, which records
what every arm was measured with. Each build runs from one fixed path
(WORKDIR/bin/NAME), so only the code differs.

\b
--control-cmd / --control-target adds a third, unchanged build to every
round, the order rotated round by round (a place in the round that always
ran first or last would lean every pair alike): its drift (max - min over
median, and first -> last) is reported, and a change within it is not
claimable (unchanged; it does not gate).

\b
Formats: as `icount compare` (table, md, json, csv, benchmark-json, bmf,
junit, svg); with $GITHUB_STEP_SUMMARY set, the md is appended to that file.

\b
Exit codes:
  0  no regression
  2  usage
  3  a cell regressed
  4  a tool or command cannot be launched
  5  a run failed (the control's too), or no path of the base matches one
     of the new (--allow-no-match lets that pass)
"""

# `icount compare`'s options for results files, refused by an interleave saying why
_FILES_ONLY = {
    "--history": "--history and --confirm compare results files, not an interleave's runs",
    "--ledger": "--ledger records a comparison of results files, not an interleave",
    "--note": "--note and --rejected describe a --ledger entry, which records a comparison "
    "of results files, not an interleave",
    "--cmd": "--cmd and --file name the commands compare --confirm reruns; an interleave "
    "takes --base-cmd and --new-cmd",
    "--size-gate": "--size-gate names rows of `icount size -o` files; an interleave holds none",
}
_FILES_ONLY |= {"--confirm": _FILES_ONLY["--history"], "--rejected": _FILES_ONLY["--note"],
                "--file": _FILES_ONLY["--cmd"]}  # fmt: skip

# ctx.meta's key: this invocation was `icount compare --interleave ...`
_ROUTED = "icount.compare_interleave"
# compare's flag that means nothing to an interleave, which measures both builds itself
_IGNORED = "--allow-build-change"


def route_compare(ctx: Any, args: list[str]) -> list[str]:
    """`icount compare --interleave ARGS` as `icount interleave ARGS`: the same run,
    output and exit code (scripts and CI call it so)."""
    ctx.meta[_ROUTED] = True
    rest = [a for a in args if a not in ("--interleave", _IGNORED)]
    if not rest:  # not interleave's whole help: the line compare --interleave gave
        raise UsageError(f"{_who(ctx)} needs --base-cmd 'CMD' and --new-cmd 'CMD'")
    return ["interleave", *rest]


def _who(ctx: Any) -> str:
    """The interleave as the user asked for it, for messages naming it."""
    return "--interleave" if ctx.meta.get(_ROUTED) else "icount interleave"


def _refusal(ctx: Any, flag: str, args: list[str], own: set[str]) -> str | None:
    command = "compare" if ctx.meta.get(_ROUTED) else "icount interleave"
    return comparing.refused(flag, command) or _FILES_ONLY.get(flag)


def register(app: typer.Typer) -> None:
    app.command(
        "interleave",
        help=HELP,
        no_args_is_help=True,
        cls=comparing.refusing(_refusal),
        # arguments are not taken: refused in one line naming what compares files
        context_settings={"allow_extra_args": True},
    )(interleave_command)


def interleave_command(
    ctx: typer.Context,
    base_cmd: str = typer.Option(None, "--base-cmd", help="The base command."),
    new_cmd: str = typer.Option(None, "--new-cmd", help="The new command."),
    control_cmd: str = typer.Option(
        None, "--control-cmd", help="An unchanged build of the command, run every round."
    ),
    base_target: str = typer.Option(None, "--base-target", help="The base server's adapter."),
    new_target: str = typer.Option(None, "--new-target", help="The new server's adapter."),
    control_target: str = typer.Option(
        None, "--control-target", help="An unchanged server, run every round."
    ),
    path: list[str] = typer.Option(
        [], "--path", help="With --base-target: only this path (repeatable) [every path]."
    ),
    pairs: int = typer.Option(5, "--pairs", min=1, max=1000, help="Rounds of base and new."),
    name: str = typer.Option(
        None,
        "--name",
        help="The cell's name [command; with targets: the new one's name].",
        show_default=False,
    ),
    backend: str = typer.Option("auto", "--backend", help=BACKEND_HELP),
    timeout: float = typer.Option(
        None, "--timeout", min=0.001, help="With --base-cmd: seconds per run."
    ),
    requests: int = measure_option("requests"),
    reps: int = measure_option("reps"),
    warmup: str = measure_option("warmup"),
    idle_seconds: float = measure_option("idle_seconds"),
    concurrency: int = measure_option("concurrency"),
    server_cpus: str = measure_option("server_cpus"),
    load_cpus: str = measure_option("load_cpus"),
    load: str = measure_option("load"),
    arrival: str = measure_option("arrival"),
    connection: str = measure_option("connection"),
    max_spread: str = measure_option("max_spread"),
    max_load: float = measure_option("max_load"),
    thread: int = measure_option("thread"),
    processes: str = measure_option("processes"),
    warmup_instrumented: bool = measure_option("warmup_instrumented"),
    collector: list[str] = measure_option("collector"),
    # compare's: routed (compare --interleave), said to gate no row; else refused
    size_gate: list[str] = typer.Option([], "--size-gate", hidden=True),
    threshold: list[str] = comparing.threshold_option(),
    min_delta: float | None = comparing.min_delta_option(),
    fail_on_invalid: bool = typer.Option(
        False, "--fail-on-invalid", help="A failed run fails it (it always does)."
    ),
    allow_no_match: bool = comparing.allow_no_match_option(),
    force: bool = typer.Option(False, "--force", help="Let -o replace a results file."),
    fmt: str = comparing.format_option(),
    sort: str = comparing.sort_option(),
    output: Path = comparing.output_option(),
    width: int | None = comparing.width_option(),
    quiet: bool = comparing.quiet_option(),
) -> None:
    from icount import export
    from icount.cli.options import argv_tail, check_sort, table_width
    from icount.export import Kind

    routed = bool(ctx.meta.get(_ROUTED))
    if size_gate and not routed:
        raise UsageError(_FILES_ONLY["--size-gate"])
    if ctx.args:
        if routed:
            raise UsageError("--interleave measures commands; it takes no results files")
        raise UsageError(
            "icount interleave measures builds; it takes no results files",
            hint="icount compare BASE NEW compares results files",
        )
    export.check(fmt, Kind.COMPARISON)
    check_sort(sort)
    columns = table_width(width)
    if output is not None:
        comparing.check_output(output, [], force)
    limits = comparing.limits(threshold, min_delta)
    arms = {"--base-cmd": base_cmd, "--new-cmd": new_cmd, "--control-cmd": control_cmd,
            "--base-target": base_target, "--new-target": new_target,
            "--control-target": control_target}  # fmt: skip
    given_options = explicit_options(ctx)
    provenance: dict[str, Any] | None = None  # an interleave of servers: how it measured
    targets = [k for k, v in arms.items() if v and k.endswith("-target")]
    if targets:
        _no_flags(targets[0], {**arms, "--timeout": timeout}, "-cmd", "--timeout")
        spec = (base_target, new_target, control_target)
        # serve's measuring options, read by name and typed as serve types them; those
        # an interleave does not take keep serve's defaults
        request = serve_request(
            reps=reps, warmup=warmup, requests=requests, concurrency=concurrency,
            server_cpus=server_cpus, load_cpus=load_cpus, load=load, arrival=arrival,
            connection=connection, max_spread=max_spread, max_load=max_load, thread=thread,
            processes=processes, warmup_instrumented=warmup_instrumented,
            idle_seconds=idle_seconds, collector=collector, backend=backend,
        )  # fmt: skip
        argv = ["icount", "compare" if routed else "interleave", *argv_tail()]
        comparison, provenance = _servers(spec, tuple(path), request, pairs, name, limits,
                                          argv, quiet, _who(ctx))  # fmt: skip
    else:
        # the flags given that only an interleave of servers takes
        serving = {"--path": bool(path)} | {
            measure_flag(m): m in given_options for m in MEASURE_OPTIONS
        }
        _no_flags("--base-cmd", serving, "--")
        comparison = _commands(base_cmd, new_cmd, control_cmd, pairs, name or "command",
                               backend, timeout, limits, quiet, _who(ctx))  # fmt: skip
    if size_gate:
        from icount.compare import size_gate as gate

        for line in gate.select(comparison, size_gate).said:  # that it gates no row
            typer.echo(f"icount: {line}", err=True)
    comparison, gated = comparing.show(comparison, comparison, limits, fmt, sort, columns,
                                       output, quiet)  # fmt: skip
    if provenance is not None and output is not None:
        _write_provenance(output, provenance)
    comparing.gate(gated, fail_on_invalid, allow_no_match, interleave=True)


def _write_provenance(output: Path, provenance: dict[str, Any]) -> None:
    """OUTPUT.provenance.json beside -o's file, as a results file has its own: what the
    interleave measured with (serve's options as serve records them, the CPUs, each
    arm's target and cell options)."""
    from icount.jsonout import dumps
    from icount.results import provenance_path, write_atomic

    write_atomic(provenance_path(output), dumps(provenance), overwrite=True)


def _no_flags(arm: str, given: Mapping[str, object], *kinds: str) -> None:
    """Refuse the flags (those starting or ending with one of `kinds`) that do not go
    with the interleave `arm` starts."""
    for flag, value in given.items():
        if value and any(flag.endswith(k) or flag.startswith(k) for k in kinds):
            raise UsageError(f"{flag} does not go with {arm}")


def _check_control_pairs(control: str | None, pairs: int, flag: str) -> None:
    if control is not None and pairs < 2:
        raise UsageError(f"{flag} needs --pairs 2 or more: its drift is read between rounds")


def _commands(
    base_cmd: str | None,
    new_cmd: str | None,
    control_cmd: str | None,
    pairs: int,
    name: str,
    backend: str,
    timeout: float | None,
    limits: Thresholds,
    quiet: bool,
    who: str,
) -> Comparison:
    from icount.cli.progress import progress
    from icount.interleave import commands

    if not base_cmd or not new_cmd:
        raise UsageError(f"{who} needs --base-cmd 'CMD' and --new-cmd 'CMD'")
    _check_control_pairs(control_cmd, pairs, "--control-cmd")
    lines = {"base": ("--base-cmd", base_cmd), "new": ("--new-cmd", new_cmd)}
    if control_cmd is not None:
        lines["control"] = ("--control-cmd", control_cmd)
    arms = commands.prepare(lines, name, backend, timeout, Path.cwd())
    if not quiet:
        typer.echo(f"icount: backend {arms.backend}: {arms.backend_why}", err=True)
    with progress(quiet) as cb:
        return commands.measure(arms, pairs, limits, cb)


def _servers(
    given: tuple[str | None, str | None, str | None],
    paths: tuple[str, ...],
    request: ServeRequest,
    pairs: int,
    name: str | None,
    limits: Thresholds,
    argv: list[str],
    quiet: bool,
    who: str,
) -> tuple[Comparison, dict[str, Any]]:
    """The comparison, and its provenance: the machine's state over the measurement and
    what it measured with."""
    from icount.cli.progress import progress
    from icount.interleave import servers
    from icount.interleave.turns import BASE, CONTROL, NEW

    base, new, control = given
    if not base or not new:
        raise UsageError(f"{who} needs --base-target ADAPTER and --new-target ADAPTER")
    _check_control_pairs(control, pairs, "--control-target")
    targets = {BASE: base, NEW: new, **({CONTROL: control} if control else {})}
    with servers.prepared(request, targets, paths) as arms:
        if not quiet:
            for line in arms.plan.notes():
                typer.echo(f"icount: {line}", err=True)
        with progress(quiet) as cb:
            return servers.compare(arms, pairs, name, limits, argv, cb)
