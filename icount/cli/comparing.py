"""What `icount compare` and `icount interleave` share: the options of a comparison's
thresholds and output, the check of -o before anything is read or measured, and the
comparison rendered, then gated. Declared here, so that neither command imports the
other for them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
import typer.core

from icount.cli.options import MIN_WIDTH, SORT_HELP, WIDTH_HELP, format_help
from icount.errors import UsageError
from icount.export import Kind

if TYPE_CHECKING:
    from collections.abc import Sequence

    from icount.compare.model import Comparison
    from icount.compare.thresholds import Thresholds


# (the command's context, the unknown flag, its arguments, its own flags) -> why it is
# refused, or None: click's own error
Refusal = Callable[[Any, str, list[str], set[str]], str | None]

# serve's options that go with no comparison (an interleave's runs take turns in one
# invocation; results files are compared as they are), refused saying why, in compare's
# words, which scripts that call `icount compare --interleave` match on (refused() words
# them for `icount interleave`)
REFUSED = {
    "--jobs": "--jobs does not go with compare: an interleave's runs take turns, one at a time",
    "--shard": "--shard does not go with compare: an interleave's rounds are one measurement "
    "(shard `icount serve` sessions and compare their files)",
    "--resume": "--resume does not go with compare: an interleave's pairs are measured in one "
    "invocation, in one run order",
    "--cold-start": "--cold-start does not go with compare --interleave: it runs each path's "
    "requests, not a server's start (compare two `icount serve --cold-start` files)",
    "--memory": "--memory does not go with compare --interleave: peak memory comes from serve's "
    "native runs (compare two `icount serve --memory` files)",
    # an interleave judges each arm's run figure (the mutator); windows added for a
    # runtime's total would cost minutes a run and be judged by nothing
    "--max-windows": "--max-windows does not go with compare --interleave: it judges each "
    "run's figure (a collected runtime's mutator) and adds no windows for the total (compare "
    "two `icount serve` files to judge totals)",
    "--max-extra-seconds": "--max-extra-seconds does not go with compare --interleave: it adds "
    "no windows for a runtime's total (compare two `icount serve` files to judge totals)",
}
REFUSED["-j"] = REFUSED["--jobs"]


def refused(flag: str, command: str) -> str | None:
    """Why `command` (compare, or `icount interleave` typed as such) refuses serve's
    `flag`; None where it is not one of those."""
    why = REFUSED.get(flag)
    if why is None or command == "compare":
        return why
    head, _, rest = why.partition(" does not go with ")
    _, sep, reason = rest.partition(": ")
    return f"{head} does not go with {command}{sep}{reason}"


def refusing(refuse: Refusal) -> type[typer.core.TyperCommand]:
    """A command class whose unknown options are refused in one line saying why, where
    `refuse` knows why (the options another mode or command takes), instead of click's
    'No such option'."""
    import importlib

    unknown: tuple[type[Exception], ...] = ()
    for module in ("typer._click.exceptions", "click.exceptions"):  # typer's own click first
        try:
            unknown = (importlib.import_module(module).NoSuchOption,)
            break
        except ImportError:
            continue

    class Refusing(typer.core.TyperCommand):
        def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
            given = list(args)
            try:
                return super().parse_args(ctx, args)
            except unknown as e:
                own = {o for p in self.params for o in (*p.opts, *p.secondary_opts)}
                why = refuse(ctx, str(getattr(e, "option_name", "")), given, own)
                if why is None:
                    raise
                raise UsageError(why) from None

    return Refusing


def threshold_option() -> Any:
    return typer.Option(
        [], "--threshold", "-t", help="PCT (default 1%) or 'GLOB=PCT' (repeatable)."
    )


def min_delta_option() -> Any:
    return typer.Option(
        None,
        "--min-delta",
        help="Smallest |delta| that can be a verdict, in the cell's unit [default: 10].",
        show_default=False,
    )


def format_option() -> Any:
    return typer.Option("table", "--format", "-f", help=format_help(Kind.COMPARISON))


def sort_option() -> Any:
    return typer.Option("order", "--sort", help=SORT_HELP)


def output_option() -> Any:
    return typer.Option(
        None, "--output", "-o", help="Write the --format output here; the table goes to stdout."
    )


def width_option() -> Any:
    return typer.Option(None, "--width", min=MIN_WIDTH, help=WIDTH_HELP, show_default=False)


def quiet_option() -> Any:
    return typer.Option(False, "--quiet", "-q", help="No progress output.")


def allow_no_match_option() -> Any:
    return typer.Option(
        False,
        "--allow-no-match",
        help="Pass when no cell of BASE matches one of NEW [exit 5: nothing compared].",
    )


def limits(threshold: list[str], min_delta: float | None) -> Thresholds:
    """--threshold and --min-delta, parsed once."""
    from icount.compare.thresholds import DEFAULT_MIN_DELTA, parse_thresholds

    return parse_thresholds(threshold, DEFAULT_MIN_DELTA if min_delta is None else min_delta)


def check_output(output: Path, files: Sequence[Path], force: bool) -> None:
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


def show(
    comparison: Comparison,
    gated: Comparison,
    limits: Thresholds,
    fmt: str,
    sort: str,
    columns: int,
    output: Path | None,
    quiet: bool,
) -> tuple[Comparison, Comparison]:
    """Warn of a --threshold glob that set no cell's threshold, then render the
    comparison in --sort's order: to -o (the table to stdout) or to stdout, and to
    $GITHUB_STEP_SUMMARY. The comparison and the rows that gate, in that order."""
    from icount.compare.render import in_order

    used = {r.rule for r in comparison.rows}
    for o in limits.overrides:
        if o.glob not in used:  # most often a typo in the glob
            typer.echo(
                f"icount: warning: --threshold '{o.glob}=...' set no cell's threshold "
                "(no match, or an earlier glob matched first)",
                err=True,
            )
    comparison, gated = in_order(comparison, sort), in_order(gated, sort)
    _emit(comparison, fmt, columns, output, quiet)
    return comparison, gated


def gate(gated: Comparison, fail_on_invalid: bool, allow_no_match: bool, interleave: bool) -> None:
    """Exit as the gate says: 3 for a regression, 5 for nothing compared (a warning
    with --allow-no-match), an invalid cell (--fail-on-invalid; always for an
    interleave, whose failed run fails it as it fails `icount run`) or a failed
    control arm."""
    from icount.compare import model

    nothing = model.unmatched(gated, allowed=True)
    if nothing is not None and allow_no_match:
        typer.echo(f"icount: warning: {nothing}", err=True)
    by = "--fail-on-invalid" if fail_on_invalid else "a failed run fails an interleave"
    failure: Exception | None = model.gate(gated, fail_on_invalid or interleave,
                                           allow_no_match, by)  # fmt: skip
    failure = failure or _control_failed(gated)
    if failure is not None:
        raise failure


def _control_failed(comparison: Comparison) -> Exception | None:
    """A control arm that failed leaves nothing claimable: exit 5, as a failed run."""
    from icount.compare.model import GateFailed
    from icount.errors import ExitCode

    for r in comparison.rows:
        ctl = r.rounds.control if r.rounds is not None else None
        if ctl is not None and ctl.failed is not None:
            return GateFailed(f"{r.label}: {ctl.failed}", ExitCode.INVALID)
    return None


def _emit(comparison: Comparison, fmt: str, width: int, output: Path | None, quiet: bool) -> None:
    import os

    from icount import export
    from icount.results import write_atomic

    text = export.render_comparison(comparison, fmt, width)
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
