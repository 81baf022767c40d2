"""Option parsing shared by several commands (formats, spreads, outputs)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from icount.errors import UsageError
from icount.numfmt import parse_percent, plural

__all__ = [
    "check_format",
    "check_sort",
    "parse_exit_codes",
    "parse_percent",
    "print_results",
]
from icount.export import Kind


def check_format(fmt: str, kind: Kind = Kind.RESULTS) -> str:
    """`fmt` when it prints `kind` (icount.export's registry), else a one-line error
    naming the formats that do."""
    from icount import export

    return export.check(fmt, kind)


def format_help(kind: Kind = Kind.RESULTS) -> str:
    from icount import export

    return export.help_text(kind)


def table_width(width: int | None) -> int:
    """--width, or the terminal's: $COLUMNS, else the width of the terminal on stdout,
    else 120 (output to a file or a pipe is as wide whatever ran it)."""
    import shutil

    if width is not None:
        return width
    return max(MIN_WIDTH, shutil.get_terminal_size((120, 24)).columns)


def parse_exit_codes(text: str) -> frozenset[int] | None:
    """'0,1' -> {0, 1}; 'any' -> None (every exit status accepted)."""
    if text.strip() == "any":
        return None
    from icount.numparse import NumberError, parse_int

    try:  # ASCII digits only: int() takes '1_0' and Unicode digits
        codes = frozenset(parse_int(p, "--allow-exit") for p in text.split(",") if p.strip())
    except NumberError:
        raise UsageError(f"--allow-exit takes codes like 0,1 or 'any', got {text!r}") from None
    return codes | {0}


@contextlib.contextmanager
def output_errors(out: Path) -> Iterator[None]:
    """A file of the run's artifacts folder that cannot be written mid-run (the folder
    became read-only, the disk filled up: a run's outputs fail before the results file)
    as one line naming it and saying what was kept, not an internal error."""
    from icount.errors import OutputError

    try:
        yield
    except OSError as e:
        name = e.filename
        artifacts = out.with_suffix(".artifacts")
        if not isinstance(name, str | Path) or not Path(name).absolute().is_relative_to(artifacts):
            raise
        kept = f"the cells finished before it are in {out}" if out.is_file() else "none was saved"
        raise OutputError(
            f"cannot write {name}: {e.strerror or e}; {kept}",
            path=str(name),
            hint="make room or rerun with another --output",
        ) from None


def argv_tail() -> list[str]:
    """The arguments after `icount COMMAND`, for the provenance."""
    import sys

    return sys.argv[2:]


SORT_HELP = "Rows as the commands/targets were given (order) or by name (fib-2 before fib-10)."
# No table fits in fewer columns (0 or a negative width printed an empty table)
MIN_WIDTH = 20
WIDTH_HELP = "Table width in characters [default: $COLUMNS, else the terminal's, else 120]."
BACKEND_HELP = "auto (perf where it counts instructions, else callgrind), callgrind or perf."
FORCE_HELP = "Overwrite --output (and the provenance beside it) if it exists."


def check_sort(sort: str) -> str:
    from icount.sorting import SORTS

    if sort not in SORTS:
        raise UsageError(f"unknown sort {sort!r}", hint=f"use --sort {'|'.join(SORTS)}")
    return sort


def print_results(res: Any, fmt: str, width: int | None, sort: str = "order") -> None:
    """Print the results table (`width` None: the terminal's); exit 5 after it when a
    cell is not valid."""
    import typer

    from icount import export
    from icount.errors import ExitCode

    typer.echo(export.render_results(res, fmt, table_width(width), sort=sort), nl=False)
    invalid = [c for c in res.cells if not c.valid]
    if invalid:
        typer.echo(
            f"icount: error: {len(invalid)} of {plural(len(res.cells), 'cell')} "
            f"{'is' if len(res.cells) == 1 else 'are'} not valid "
            "(reasons under the table)",
            err=True,
        )
        raise typer.Exit(int(ExitCode.INVALID))
