"""`icount compare`: the regression gate between two results files (the interleaved
A/B of commands and servers is `icount interleave`, which `--interleave` routes to)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from icount.cli import comparing
from icount.errors import UsageError
from icount.export import Kind

if TYPE_CHECKING:
    from collections.abc import Sequence

    from icount.compare.model import Comparison, NoiseMap
    from icount.compare.thresholds import Thresholds
    from icount.measure_command import CommandSpec
    from icount.results import Results

HELP = """Compare two results files cell by cell and fail on regressions (exit 3).

\b
Examples:
  icount compare base.json new.json
  icount compare base.json new.json --threshold 1% --threshold 'nginx/*=2%' -f md
  icount compare base.json new.json -f benchmark-json -o bench.json
  icount compare base.json new.json -f svg -o change.svg
  icount compare base.json shards/ -f md   # NEW: the folder of a session's shard files
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
`icount compare --interleave ...` runs `icount interleave ...`: two builds
measured alternately (see icount interleave --help).

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
     --fail-on-invalid, a cell is invalid or missing on either side
  6  a results file is unreadable or not icount's
"""


def register(app: typer.Typer) -> None:
    app.command("compare", help=HELP, no_args_is_help=True, cls=comparing.refusing(_refusal))(
        compare_command
    )


# interleave's options that compare takes and ignores, saying so: scripts pass
# `--backend callgrind` to their run and compare lines alike
_IGNORED = ("--backend", "--name", "--timeout", "--pairs")


def compare_command(
    files: list[Path] = typer.Argument(
        None, help="BASE NEW: results files, or folders of shard files."
    ),
    threshold: list[str] = comparing.threshold_option(),
    size_gate: list[str] = typer.Option(
        [],
        "--size-gate",
        help="Size files: rows that gate besides the total (which always gates), GLOB[,GLOB].",
    ),
    min_delta: float | None = comparing.min_delta_option(),
    fail_on_invalid: bool = typer.Option(
        False, "--fail-on-invalid", help="Exit 5 when a cell is invalid or missing."
    ),
    allow_no_match: bool = comparing.allow_no_match_option(),
    force: bool = typer.Option(
        False,
        "--force",
        help="Compare despite environment differences; let -o replace a results file.",
    ),
    fmt: str = comparing.format_option(),
    sort: str = comparing.sort_option(),
    output: Path = comparing.output_option(),
    width: int | None = comparing.width_option(),
    quiet: bool = comparing.quiet_option(),
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
    backend: str = typer.Option(None, "--backend", hidden=True),
    name: str = typer.Option(None, "--name", hidden=True),
    timeout: float = typer.Option(None, "--timeout", min=0.001, hidden=True),
    pairs: int = typer.Option(None, "--pairs", min=1, max=1000, hidden=True),
) -> None:
    from icount import export
    from icount.cli.options import check_sort, table_width

    given = (backend, name, timeout, pairs)
    ignored = [f for f, v in zip(_IGNORED, given, strict=True) if v is not None]
    if ignored:
        typer.echo(
            f"icount: warning: {_and(ignored)} {'does' if len(ignored) == 1 else 'do'} "
            "nothing without interleaving (`icount interleave` measures two builds); ignored",
            err=True,
        )
    export.check(fmt, Kind.COMPARISON)
    check_sort(sort)
    columns = table_width(width)
    if output is not None:
        comparing.check_output(output, files or [], force)
    limits = comparing.limits(threshold, min_delta)
    _check_ledger(ledger, note, rejected)
    if ledger is not None:
        from icount.compare.ledger import check_path

        check_path(ledger, files or [], output)
    if (cmd or commands_file is not None) and not confirm:
        raise UsageError("--cmd and --file name the commands --confirm reruns: give --confirm N")
    if not files or len(files) != 2:
        raise UsageError("compare takes two results files (or folders of shard files): BASE NEW")
    reruns = _confirm_commands(cmd, commands_file) if confirm else ()
    comparison = _from_files(
        files[0], files[1], limits, force, allow_build_change, history, confirm, quiet, reruns
    )

    from icount.compare import model
    from icount.compare import size_gate as gate

    comparison, gated, said = gate.select(comparison, size_gate)  # icount size -o files
    for line in said:
        typer.echo(f"icount: {line}", err=True)
    comparison, gated = comparing.show(comparison, gated, limits, fmt, sort, columns, output,
                                       quiet)  # fmt: skip
    nothing = model.unmatched(gated, allowed=True)
    # a regression is worth its entry too; a comparison that compared nothing is not
    if ledger is not None and note is not None and (nothing is None or allow_no_match):
        _write_ledger(ledger, comparison, files, note, rejected)
    comparing.gate(gated, fail_on_invalid, allow_no_match, interleave=False)


def _refusal(ctx: object, flag: str, args: list[str], own: set[str]) -> str | None:
    """Why compare of files refuses `flag`: serve's options that go with no comparison,
    and those of `icount interleave` (routed there with `--interleave`), naming every one
    given."""
    from icount.cli import build_command

    if flag in comparing.REFUSED:
        return comparing.REFUSED[flag]
    theirs: dict[str, str] = {}  # interleave's flag -> its name in the message
    for p in build_command("interleave").params:
        for o in (*p.opts, *p.secondary_opts):
            if o not in own:
                theirs[o] = max(p.opts, key=len)
    if flag not in theirs:
        return None
    words = args[: args.index("--")] if "--" in args else args
    named = {theirs[w.split("=", 1)[0]] for w in words if w.split("=", 1)[0] in theirs}
    given = [f for f in dict.fromkeys(theirs.values()) if f in named]
    return f"{_and(given)} need{'s' if len(given) == 1 else ''} --interleave"


def _and(flags: Sequence[str]) -> str:
    """`--a`, `--a and --b`, `--a, --b and --c`."""
    return flags[0] if len(flags) == 1 else f"{', '.join(flags[:-1])} and {flags[-1]}"


def _check_ledger(ledger: Path | None, note: str | None, rejected: bool) -> None:
    if ledger is None:
        if note is not None or rejected:
            raise UsageError("--note and --rejected describe a --ledger entry: give --ledger FILE")
        return
    if not note or not note.strip():
        raise UsageError("--ledger needs --note TEXT: what the change was")


def _write_ledger(
    path: Path, comparison: Comparison, files: list[Path], note: str, rejected: bool
) -> None:
    from icount.compare import ledger
    from icount.results.merge import input_files

    base, new = (ledger.side(str(f), [s for s, _ in input_files([f])]) for f in files)
    ledger.append(path, ledger.entry(comparison, base, new, note, rejected, ledger.today()))


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
