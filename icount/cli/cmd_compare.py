"""`icount compare`: the regression gate between two results files (or two commands)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from icount.cli.measure_options import (
    MEASURE_OPTIONS,
    explicit_options,
    measure_flag,
    measure_option,
)
from icount.cli.options import MIN_WIDTH, SORT_HELP, WIDTH_HELP, format_help
from icount.errors import UsageError
from icount.export import Kind
from icount.session import options as serve_options

if TYPE_CHECKING:
    from collections.abc import Sequence

    from icount.compare.model import Comparison, NoiseMap
    from icount.compare.thresholds import Thresholds
    from icount.measure_command import CommandSpec
    from icount.results import Results
    from icount.serve.plan import ServeRequest

HELP = """Compare two results files cell by cell and fail on regressions (exit 3).

\b
Examples:
  icount compare base.json new.json
  icount compare base.json new.json --threshold 1% --threshold 'nginx/*=2%' -f md
  icount compare base.json new.json -f benchmark-json -o bench.json
  icount compare base.json new.json -f svg -o change.svg
  icount compare base.json shards/ -f md   # NEW: the folder of a session's shard files
  icount compare --interleave --base-cmd './fib-old 30' --new-cmd './fib 30' --pairs 5
  icount compare --interleave --base-cmd './fib-old 30' --new-cmd './fib 30' \\
      --control-cmd './fib-same 30' --pairs 6     # a third, unchanged build in each round
  icount compare --interleave --base-target main/adapters/c-epoll \\
      --new-target pr/adapters/c-epoll --path json --pairs 3
  icount compare base.json new.json --history history/ --confirm 3 \\
      --cmd 'fib=./fib 30' -f junit -o junit.xml

\b
BASE and NEW are each a results file or a folder of them: the shard files of
one session (--shard I/N) merge as `icount table` merges them, refused unless
complete and of one plan.

\b
Cells are matched by (name, path, backend). Each gets a verdict: regressed,
improved, unchanged, invalid in base, invalid in new, missing in base or
missing in new. The change is relative to the base median. A change counts
only when it is above the cell's threshold, at least --min-delta instructions,
and outside the measured spread (every new run beyond every base run);
otherwise the cell is unchanged and a note says why.

\b
--threshold PCT sets the default (1%); --threshold 'GLOB=PCT' (repeatable)
sets it for cells whose "NAME/PATH" (just NAME for cells without a path)
matches GLOB; globs are tried in the order given, the first match wins.

\b
--history DIR (a folder of `icount history add`) sets each cell's threshold
from its own past: the larger of the given one and Q3 + 3 x IQR of the
cell's changes between consecutive commits (rustc-perf's fence, over the
last 100 commits measured in this environment, 5 at least). A cell whose
history repeats to the instruction is gated exactly: any change counts,
whatever the threshold and --min-delta. Every format says which applied.

\b
--confirm N measures each cell that regressed again, N fresh runs, and
judges it on that rerun: noise passes, a real regression still fails. It
runs only a command this invocation names (--cmd NAME=COMMAND or --file
COMMANDS.toml, as icount run takes them), never one read from a file, and
only where it is the command the new file measured the cell with; it says
which it runs. icount run cells only (serve cells are refused). The row
keeps both measurements.

\b
Results measured in environments that move counts differently (backend, tool
version, CPU vendor/model/flags, glibc, arch) are refused; --force compares
them anyway, and every output format says so.

\b
--interleave runs --base-cmd and --new-cmd alternately (base, new, base, new
...) for --pairs pairs and gates on the median of the per-pair ratios
new/base; the change counts only when every pair's ratio lies on the same side
of 1. --base-target and --new-target (adapter files or folders, as `icount
serve` takes them) do the same for two server builds: a fresh server each run,
measured as a serve cell's run is, every path a cell (--path NAME: only that
one), with serve's options that decide how a run is measured, as serve takes
them and lists them in `icount serve --help` (--requests, --reps, --warmup,
--concurrency, --load, --server-cpus, --load-cpus, --max-spread, --thread,
--processes, --collector, ...; each run's figure is judged, a collected
runtime's mutator: no windows are added for its total); -o FILE writes FILE's
provenance beside it, which records them. Each build runs from one fixed path
(WORKDIR/bin/NAME), so only the code differs. --control-cmd / --control-target
adds a third, unchanged build to every round, the order rotated round by round
(a place in the round that always ran first or last would lean every pair
alike): its drift (max - min over median, and first -> last) is reported, and
a change within it is not claimable (unchanged; it does not gate).

\b
Formats: table, md (verdict line first, the table in <details>), json,
csv, benchmark-json (github-action-benchmark customSmallerIsBetter, new
medians), bmf (Bencher Metric Format: median, min and max of new), junit
(JUnit XML, a testcase per cell, failed when regressed), svg (the change
of each cell as a chart). With
$GITHUB_STEP_SUMMARY set, the md is appended to that file.

\b
Every format gives the geometric mean of new/base over the cells valid on
both sides. --ledger FILE.md --note TEXT appends an entry for the change to
FILE.md: the date, the commits of both sides, the geometric mean and each
cell that moved (before -> after); --rejected marks a change not kept.

\b
Exit codes:
  0  no regression
  2  usage, or environments that move counts differently (see --force)
  3  a cell regressed
  4  a tool or command cannot be launched
  5  no cell of BASE matches one of NEW (a renamed benchmark: the names on
     each side are given; --allow-no-match lets it pass); with
     --fail-on-invalid, a cell is invalid or missing on either side; with
     --interleave, a run failed (the control's too)
  6  a results file is unreadable or not icount's
"""


def register(app: typer.Typer) -> None:
    app.command("compare", help=HELP, no_args_is_help=True)(compare_command)


_SERVE = "With --base-target: "
# serve's options that do not go with an interleave, refused saying why
_NOT_INTERLEAVED = {
    "jobs": "--jobs does not go with compare: an interleave's runs take turns, one at a time",
    "shard": "--shard does not go with compare: an interleave's rounds are one measurement "
    "(shard `icount serve` sessions and compare their files)",
    "resume": "--resume does not go with compare: an interleave's pairs are measured in one "
    "invocation, in one run order",
    "cold_start": "--cold-start does not go with compare --interleave: it runs each path's "
    "requests, not a server's start (compare two `icount serve --cold-start` files)",
    "memory": "--memory does not go with compare --interleave: peak memory comes from serve's "
    "native runs (compare two `icount serve --memory` files)",
    # an interleave judges each arm's run figure (the mutator); windows added for a
    # runtime's total would cost minutes a run and be judged by nothing
    "max_windows": "--max-windows does not go with compare --interleave: it judges each run's "
    "figure (a collected runtime's mutator) and adds no windows for the total (compare two "
    "`icount serve` files to judge totals)",
    "max_extra_seconds": "--max-extra-seconds does not go with compare --interleave: it adds "
    "no windows for a runtime's total (compare two `icount serve` files to judge totals)",
}


def compare_command(
    ctx: typer.Context,
    files: list[Path] = typer.Argument(
        None, help="BASE NEW: results files, or folders of shard files."
    ),
    threshold: list[str] = typer.Option(
        [], "--threshold", "-t", help="PCT (default 1%) or 'GLOB=PCT' (repeatable)."
    ),
    size_gate: list[str] = typer.Option(
        [],
        "--size-gate",
        help="Size files: rows that gate besides the total (which always gates), GLOB[,GLOB].",
    ),
    min_delta: float | None = typer.Option(
        None,
        "--min-delta",
        help="Smallest |delta| that can be a verdict, in the cell's unit [default: 10].",
        show_default=False,
    ),
    fail_on_invalid: bool = typer.Option(
        False, "--fail-on-invalid", help="Exit 5 when a cell is invalid or missing."
    ),
    allow_no_match: bool = typer.Option(
        False,
        "--allow-no-match",
        help="Pass when no cell of BASE matches one of NEW [exit 5: nothing compared].",
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Compare despite environment differences; let -o replace a results file.",
    ),
    fmt: str = typer.Option("table", "--format", "-f", help=format_help(Kind.COMPARISON)),
    sort: str = typer.Option("order", "--sort", help=SORT_HELP),
    output: Path = typer.Option(
        None, "--output", "-o", help="Write the --format output here; the table goes to stdout."
    ),
    width: int | None = typer.Option(
        None, "--width", min=MIN_WIDTH, help=WIDTH_HELP, show_default=False
    ),
    interleave: bool = typer.Option(False, "--interleave", help="Measure two commands A B A B."),
    base_cmd: str = typer.Option(None, "--base-cmd", help="With --interleave: the base command."),
    new_cmd: str = typer.Option(None, "--new-cmd", help="With --interleave: the new command."),
    pairs: int = typer.Option(5, "--pairs", min=1, max=1000, help="With --interleave: pairs."),
    name: str = typer.Option(
        None,
        "--name",
        help="With --interleave: the cell's name [command; with targets: the new one's name].",
        show_default=False,
    ),
    control_cmd: str = typer.Option(
        None, "--control-cmd", help="With --interleave: an unchanged build, run every round."
    ),
    base_target: str = typer.Option(
        None, "--base-target", help="With --interleave: the base server's adapter."
    ),
    new_target: str = typer.Option(
        None, "--new-target", help="With --interleave: the new server's adapter."
    ),
    control_target: str = typer.Option(
        None, "--control-target", help="With --interleave: an unchanged server, every round."
    ),
    path: list[str] = typer.Option(
        [], "--path", help="With --base-target: only this path (repeatable) [every path]."
    ),
    requests: int = measure_option("requests", _SERVE),
    reps: int = measure_option("reps", _SERVE),
    warmup: str = measure_option("warmup", _SERVE),
    idle_seconds: float = measure_option("idle_seconds", _SERVE),
    concurrency: int = measure_option("concurrency", _SERVE),
    server_cpus: str = measure_option("server_cpus", _SERVE),
    load_cpus: str = measure_option("load_cpus", _SERVE),
    load: str = measure_option("load", _SERVE),
    max_spread: str = measure_option("max_spread", _SERVE),
    max_load: float = measure_option("max_load", _SERVE),
    thread: int = measure_option("thread", _SERVE),
    processes: str = measure_option("processes", _SERVE),
    warmup_instrumented: bool = measure_option("warmup_instrumented", _SERVE),
    max_windows: int = typer.Option(serve_options.MAX_WINDOWS, "--max-windows", hidden=True),
    max_extra_seconds: float = typer.Option(
        serve_options.MAX_EXTRA_SECONDS, "--max-extra-seconds", hidden=True
    ),
    collector: list[str] = measure_option("collector", _SERVE),
    jobs: str = typer.Option(None, "--jobs", "-j", hidden=True),
    shard: str = typer.Option(None, "--shard", hidden=True),
    resume: str = typer.Option(None, "--resume", hidden=True),
    cold_start: bool = typer.Option(False, "--cold-start", hidden=True),
    memory: bool = typer.Option(False, "--memory", hidden=True),
    backend: str = typer.Option(
        "auto", "--backend", help="With --interleave: auto, callgrind, perf."
    ),
    timeout: float = typer.Option(
        None, "--timeout", min=0.001, help="With --interleave: seconds per run."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress output."),
    allow_build_change: bool = typer.Option(
        False,
        "--allow-build-change",
        help="Compare cells whose binaries were built in different modes (-O0 vs -O2, LTO).",
    ),
    history: Path = typer.Option(
        None, "--history", help="A history folder: thresholds from each cell's own noise."
    ),
    confirm: int = typer.Option(
        0,
        "--confirm",
        min=0,
        max=100,
        help="Rerun a regressed cell N times, judged on the rerun [default: no rerun].",
        show_default=False,
    ),
    cmd: list[str] = typer.Option(
        [], "--cmd", help="With --confirm: NAME=COMMAND LINE, what cell NAME reruns (repeatable)."
    ),
    commands_file: Path = typer.Option(
        None, "--file", help="With --confirm: a TOML file of [[command]] tables, as icount run's."
    ),
    ledger: Path = typer.Option(
        None, "--ledger", help="Append an entry for this change to FILE.md (needs --note)."
    ),
    note: str = typer.Option(None, "--note", help="With --ledger: what the change was."),
    rejected: bool = typer.Option(
        False, "--rejected", help="With --ledger: the change was not kept."
    ),
) -> None:
    from icount import export
    from icount.cli.options import check_sort, table_width
    from icount.compare import model
    from icount.compare.thresholds import DEFAULT_MIN_DELTA, parse_thresholds

    given_options = explicit_options(ctx)
    for option, why in _NOT_INTERLEAVED.items():
        if option in given_options:
            raise UsageError(why)
    export.check(fmt, Kind.COMPARISON)
    check_sort(sort)
    columns = table_width(width)
    if output is not None:
        _check_output(output, files or [], force)
    limits = parse_thresholds(threshold, DEFAULT_MIN_DELTA if min_delta is None else min_delta)
    _check_ledger(ledger, note, rejected, interleave)
    if ledger is not None:
        from icount.compare.ledger import check_path

        check_path(ledger, files or [], output)
    arms = {"--base-cmd": base_cmd, "--new-cmd": new_cmd, "--control-cmd": control_cmd,
            "--base-target": base_target, "--new-target": new_target,
            "--control-target": control_target}  # fmt: skip
    # the flags given that only an interleave of servers takes
    serving = {"--path": bool(path)} | {
        measure_flag(m): m in given_options for m in MEASURE_OPTIONS
    }
    provenance: dict[str, Any] | None = None  # an interleave of servers: how it measured
    if (cmd or commands_file is not None) and not confirm:
        raise UsageError("--cmd and --file name the commands --confirm reruns: give --confirm N")
    if interleave:
        if files:
            raise UsageError("--interleave measures commands; it takes no results files")
        if history is not None or confirm:
            raise UsageError("--history and --confirm compare results files, not --interleave")
        targets = {k: v for k, v in arms.items() if v and k.endswith("-target")}
        if targets:
            _no_flags(next(iter(targets)), {**arms, "--timeout": timeout}, "-cmd", "--timeout")
            spec = (base_target, new_target, control_target)
            request = _serve_request(ctx.params, backend)
            comparison, provenance = _interleaved_servers(spec, tuple(path), request, pairs,
                                                          name, limits, quiet)  # fmt: skip
        else:
            _no_flags("--base-cmd", serving, "--")
            comparison = _interleaved(base_cmd, new_cmd, control_cmd, pairs, name or "command",
                                      backend, timeout, limits, quiet)  # fmt: skip
    else:
        given = [k for k, v in {**arms, **serving}.items() if v]
        if given:
            flags = given[0] if len(given) == 1 else f"{', '.join(given[:-1])} and {given[-1]}"
            raise UsageError(f"{flags} need{'s' if len(given) == 1 else ''} --interleave")
        if not files or len(files) != 2:
            raise UsageError(
                "compare takes two results files (or folders of shard files): BASE NEW"
            )
        reruns = _confirm_commands(cmd, commands_file) if confirm else ()
        comparison = _from_files(
            files[0], files[1], limits, force, allow_build_change, history, confirm, quiet, reruns
        )

    from icount.compare import size_gate as gate

    comparison, gated, said = gate.select(comparison, size_gate)  # icount size -o files
    for line in said:
        typer.echo(f"icount: {line}", err=True)
    used = {r.rule for r in comparison.rows}
    for o in limits.overrides:
        if o.glob not in used:  # most often a typo in the glob
            typer.echo(
                f"icount: warning: --threshold '{o.glob}=...' set no cell's threshold "
                "(no match, or an earlier glob matched first)",
                err=True,
            )
    from icount.compare.render import in_order

    comparison, gated = in_order(comparison, sort), in_order(gated, sort)
    _emit(export.render_comparison(comparison, fmt, columns), output, quiet, comparison, columns)
    if provenance is not None and output is not None:
        _write_provenance(output, provenance)
    nothing = model.unmatched(gated, allowed=True)
    # a regression is worth its entry too; a comparison that compared nothing is not
    if ledger is not None and note is not None and (nothing is None or allow_no_match):
        _write_ledger(ledger, comparison, files, note, rejected)
    if nothing is not None and allow_no_match:
        typer.echo(f"icount: warning: {nothing}", err=True)
    # A failed measurement fails --interleave always, as it fails `icount run`.
    by = "--fail-on-invalid" if fail_on_invalid else "a failed run fails --interleave"
    failure: Exception | None = model.gate(gated, fail_on_invalid or interleave,
                                           allow_no_match, by)  # fmt: skip
    failure = failure or _control_failed(gated)
    if failure is not None:
        raise failure


def _write_provenance(output: Path, provenance: dict[str, Any]) -> None:
    """OUTPUT.provenance.json beside -o's file, as a results file has its own: what the
    interleave measured with (serve's options as serve records them, the CPUs, each
    arm's target and cell options)."""
    from icount.jsonout import dumps
    from icount.results import provenance_path, write_atomic

    write_atomic(provenance_path(output), dumps(provenance), overwrite=True)


def _no_flags(arm: str, given: dict[str, object], *kinds: str) -> None:
    """Refuse the flags (those starting or ending with one of `kinds`) that do not go
    with the interleave `arm` starts."""
    for flag, value in given.items():
        if value and any(flag.endswith(k) or flag.startswith(k) for k in kinds):
            raise UsageError(f"{flag} does not go with {arm}")


def _control_failed(comparison: Comparison) -> Exception | None:
    """A control arm that failed leaves nothing claimable: exit 5, as a failed run."""
    from icount.compare.model import GateFailed
    from icount.errors import ExitCode

    for r in comparison.rows:
        ctl = r.rounds.control if r.rounds is not None else None
        if ctl is not None and ctl.failed is not None:
            return GateFailed(f"{r.label}: {ctl.failed}", ExitCode.INVALID)
    return None


def _check_ledger(ledger: Path | None, note: str | None, rejected: bool, interleave: bool) -> None:
    if ledger is None:
        if note is not None or rejected:
            raise UsageError("--note and --rejected describe a --ledger entry: give --ledger FILE")
        return
    if interleave:
        raise UsageError("--ledger records a comparison of results files, not --interleave")
    if not note or not note.strip():
        raise UsageError("--ledger needs --note TEXT: what the change was")


def _write_ledger(
    path: Path, comparison: Comparison, files: list[Path], note: str, rejected: bool
) -> None:
    from icount.compare import ledger
    from icount.results.merge import input_files

    base, new = (ledger.side(str(f), [s for s, _ in input_files([f])]) for f in files)
    ledger.append(path, ledger.entry(comparison, base, new, note, rejected, ledger.today()))


def _check_output(output: Path, files: list[Path], force: bool) -> None:
    """Before anything is read or measured: -o names a file that can be written, and
    neither one of the inputs nor, unless --force, another results file."""
    from icount import results
    from icount.samefile import same_file

    if any(same_file(output, f) for f in files):
        raise UsageError(f"--output {output} is one of the files to compare")
    if any(f.is_dir() and output.resolve().parent == f.resolve() for f in files):
        raise UsageError(f"--output {output} is inside a folder of results to compare")
    results.check_writable(output)
    if not force and results.holds_measurements(output):
        raise UsageError(
            f"--output {output} is an icount results file; refusing to replace it",
            hint="choose another --output, or pass --force",
        )


def _from_files(
    base_path: Path,
    new_path: Path,
    limits: Thresholds,
    force: bool,
    allow_build_change: bool,
    history: Path | None = None,
    confirm: int = 0,
    quiet: bool = False,
    reruns: Sequence[CommandSpec] = (),
) -> Comparison:
    import dataclasses

    from icount import build_label, results
    from icount.compare import inlined, model, render
    from icount.environment import machine_warnings

    base = results.merge_inputs(results.load_inputs([base_path]))
    new = results.merge_inputs(results.load_inputs([new_path]))
    diffs = model.fingerprint_differences(base.fingerprint, new.fingerprint)
    if diffs and not force:
        raise UsageError(model.refusal(diffs, str(base_path), str(new_path)), hint="pass --force")
    for line in machine_warnings(base.fingerprint, new.fingerprint):
        typer.echo(f"icount: warning: {line}", err=True)
    builds = build_label.cell_changes(base.cells, new.cells)
    if builds and not allow_build_change:
        raise UsageError(build_label.refusal(builds), hint="pass --allow-build-change")
    noise = _history_noise(history, new) if history is not None else None
    comparison = model.compare(base, new, limits, diffs, noise[0] if noise else None)
    if noise is not None:
        comparison = dataclasses.replace(comparison, history=noise[1])
    if confirm:
        from icount.cli.progress import progress
        from icount.compare.confirm import confirm as rerun

        def announce(line: str) -> None:  # always: the one line that says what runs
            typer.echo(f"icount: {line}", err=True)

        with progress(quiet) as cb:
            comparison = rerun(comparison, base, new, new_path, confirm, reruns,
                               noise and noise[0], cb, announce)  # fmt: skip
    comparison = inlined.annotate(comparison, base, new, base_path, new_path)  # DWARF's word
    return render.given_order(render.with_build_changes(comparison, builds), new, base)


def _confirm_commands(cmd: list[str], file: Path | None) -> tuple[CommandSpec, ...]:
    """The commands --confirm may rerun: those this invocation names, as icount run
    reads and resolves them (programs made absolute from here)."""
    from icount import measure_command
    from icount.cli.measure_options import collect_commands as _collect

    specs = _collect([], None, cmd, file, {}, resuming=True)
    return tuple(measure_command.resolve(s, Path.cwd()) for s in specs)


def _history_noise(history: Path, new: Results) -> tuple[NoiseMap, str]:
    """Each cell's noise in the history folder, and the verdict line's note on it."""
    from icount.history import store
    from icount.history.noise import of_history

    past = [r for _, r in store.load(history)]
    noise, other = of_history(past, new.fingerprint)
    note = f"thresholds from the history of {len(past) - other} commits"
    if other:
        note += f" ({other} measured in another environment left out)"
    return noise, note


def _interleaved(
    base_cmd: str | None,
    new_cmd: str | None,
    control_cmd: str | None,
    pairs: int,
    name: str,
    backend: str,
    timeout: float | None,
    limits: Thresholds,
    quiet: bool,
) -> Comparison:
    import tempfile

    from icount import backends, measure_command
    from icount.cli.progress import progress
    from icount.compare import model
    from icount.compare.control import Rounds, judged
    from icount.compare.interleave import run_pairs
    from icount.results import UNIT_INSTRUCTIONS

    if not base_cmd or not new_cmd:
        raise UsageError("--interleave needs --base-cmd 'CMD' and --new-cmd 'CMD'")
    _check_control_pairs(control_cmd, pairs, "--control-cmd")
    cwd = Path.cwd()
    base = measure_command.resolve(_spec(name, base_cmd, "--base-cmd"), cwd)
    new = measure_command.resolve(_spec(name, new_cmd, "--new-cmd"), cwd)
    control = None
    if control_cmd is not None:
        control = measure_command.resolve(_spec(name, control_cmd, "--control-cmd"), cwd)
    choice = backends.choose(backend)
    if not quiet:
        typer.echo(f"icount: backend {choice.backend}: {choice.why}", err=True)
    opts = measure_command.RunOptions(backend=backends.create(choice.backend), timeout=timeout)
    with tempfile.TemporaryDirectory(prefix="icount-compare-") as tmp, progress(quiet) as cb:
        done = run_pairs(base, new, opts, pairs, Path(tmp), cb, control, choice.backend)
    c = model.compare_pairs(
        name, choice.backend, UNIT_INSTRUCTIONS, done.pairs, done.failed, limits
    )
    if done.control is None:
        return c
    import dataclasses

    rows = tuple(judged(r, Rounds(done.pairs, done.control)) for r in c.rows)
    return dataclasses.replace(c, rows=rows)


def _check_control_pairs(control: str | None, pairs: int, flag: str) -> None:
    if control is not None and pairs < 2:
        raise UsageError(f"{flag} needs --pairs 2 or more: its drift is read between rounds")


def _serve_request(params: dict[str, Any], backend: str) -> ServeRequest:
    """The interleave's runs as serve measures a cell's: serve's options, parsed by
    serve's parser into the typed values it measures with."""
    from icount.cli.measure_options import measure_fields
    from icount.serve.plan import ServeRequest

    return ServeRequest(backend=backend, **measure_fields(params))


def _interleaved_servers(
    given: tuple[str | None, str | None, str | None],
    paths: tuple[str, ...],
    request: ServeRequest,
    pairs: int,
    name: str | None,
    limits: Thresholds,
    quiet: bool,
) -> tuple[Comparison, dict[str, Any]]:
    """The comparison, and its provenance: the machine's state over the measurement and
    what it measured with."""
    import tempfile

    from icount import environment
    from icount.cli.options import argv_tail
    from icount.cli.progress import progress
    from icount.compare import interleave_serve
    from icount.compare.control import BASE, CONTROL, NEW

    base, new, control = given
    if not base or not new:
        raise UsageError("--interleave needs --base-target ADAPTER and --new-target ADAPTER")
    _check_control_pairs(control, pairs, "--control-target")
    targets = {BASE: base, NEW: new, **({CONTROL: control} if control else {})}
    with tempfile.TemporaryDirectory(prefix="icount-compare-") as tmp:
        arms = interleave_serve.prepare_arms(request, targets, paths, Path(tmp))
        if not quiet:
            for line in arms.plan.notes():
                typer.echo(f"icount: {line}", err=True)
        cell = name or arms.targets[NEW].adapter.name
        recorder = environment.ProvenanceRecorder(["icount", "compare", *argv_tail()])
        with progress(quiet) as cb:
            comparison = interleave_serve.measure(arms, pairs, cell, limits, cb)
        return comparison, recorder.finish({"plan": arms.record(pairs)})


def _spec(name: str, line: str, flag: str) -> CommandSpec:
    from icount.measure_command import CommandSpec

    try:
        argv = shlex.split(line)
    except ValueError as e:
        raise UsageError(f"{flag}: {e}") from None
    if not argv:
        raise UsageError(f"{flag} is empty")
    return CommandSpec(name, tuple(argv))


def _emit(text: str, output: Path | None, quiet: bool, comparison: Comparison, width: int) -> None:
    import os

    from icount import export
    from icount.results import write_atomic

    if output is not None:
        write_atomic(output, text, overwrite=True)
        if not quiet:
            typer.echo(export.render_comparison(comparison, "table", width), nl=False)
    else:
        typer.echo(text, nl=False)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        from icount.errors import OutputError
        from icount.results.files import append_text

        try:
            append_text(Path(summary), export.render_comparison(comparison, "md") + "\n")
        except OutputError as e:
            # the verdict's exit code (3 for a regression) must not become 2 for this
            from icount.text import printable

            typer.echo(f"icount: warning: {printable(str(e))}; the summary is not in it", err=True)
