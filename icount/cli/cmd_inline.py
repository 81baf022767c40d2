"""`icount inline`: why one build of a program runs fewer instructions than another."""

from __future__ import annotations

from pathlib import Path

import typer

from icount.cli.options import format_help
from icount.export import Kind

HELP = """Compare two builds of one program on the same workload, function by function.

Runs the workload once under callgrind with each build (or reads two saved callgrind
files), aligns functions by demangled name and reports: functions present in one build
only (inlined away or outlined), call counts that changed per caller -> callee edge,
instructions per call of the functions whose call counts changed, self and inclusive
instruction deltas by function (B - A, largest first), symbol sizes and, from DWARF,
which callees each function holds inlined copies of. Changes below --min-share of A's
total (0.1% by default: mostly the dynamic loader) are left out and counted.

\b
Examples:
  icount inline ./fib-gcc ./fib-clang -- 30
  icount inline ./app-O2 ./app-O3 --top 10 --format md -- input.txt
  icount inline a.callgrind b.callgrind --exe-a ./fib-gcc --exe-b ./fib-clang
  icount inline ./fib-gcc ./fib-clang --keep-profiles prof/ --format json -- 30
  icount inline ./fib-gcc ./fib-clang --min-share 0 --top 0 -- 30   (every row)
"""


def register(app: typer.Typer) -> None:
    app.command(
        "inline",
        help=HELP,
        no_args_is_help=True,
    )(inline_command)


def inline_command(
    build_a: str = typer.Argument(..., help="Program or callgrind file of build A."),
    build_b: str = typer.Argument(..., help="Program or callgrind file of build B."),
    workload: list[str] = typer.Argument(None, help="Arguments of the workload, after --."),
    event: str = typer.Option("Ir", "--event", help="Callgrind event to compare."),
    top: int = typer.Option(20, "--top", min=0, help="Rows per list (0: all)."),
    min_share: str = typer.Option(
        "0.1%",
        "--min-share",
        help="Leave out functions and call edges that change less than this share of "
        "A's total (0: keep all).",
    ),
    fmt: str = typer.Option("table", "--format", "-f", help=format_help(Kind.INLINE)),
    width: int | None = typer.Option(
        None,
        "--width",
        min=40,
        help="Table width in characters, at least 40 [default: $COLUMNS, else the "
        "terminal's, else 120].",
        show_default=False,
    ),
    timeout: float = typer.Option(
        None, "--timeout", min=0.001, help="Seconds per run before it is killed."
    ),
    keep_profiles: Path = typer.Option(
        None, "--keep-profiles", help="Folder to keep a.callgrind and b.callgrind in."
    ),
    exe_a: Path = typer.Option(None, "--exe-a", help="Binary of A for sizes and DWARF."),
    exe_b: Path = typer.Option(None, "--exe-b", help="Binary of B for sizes and DWARF."),
    no_dwarf: bool = typer.Option(False, "--no-dwarf", help="Do not read DWARF inline sites."),
) -> None:
    from icount import export
    from icount.cli.options import parse_percent, table_width
    from icount.inline import measure

    export.check(fmt, Kind.INLINE)
    columns = max(40, table_width(width))
    share = 0.0 if min_share.strip() in ("0", "0%") else parse_percent(min_share, "--min-share")
    if keep_profiles is not None:
        _make_folder(keep_profiles)
    opts = measure.Options(
        event=event,
        top=top,
        min_share=share,
        timeout=timeout,
        # the builds run in work dirs of their own: a relative folder would name one there
        keep_dir=None if keep_profiles is None else keep_profiles.absolute(),
        exe_a=exe_a,
        exe_b=exe_b,
        dwarf=not no_dwarf,
    )
    data = measure.compare_builds(
        build_a,
        build_b,
        workload or [],
        opts,
        progress=lambda msg: typer.echo(f"icount: {msg}", err=True),
    )
    typer.echo(export.render(export.InlineDoc(data), fmt, columns), nl=False)


def _make_folder(folder: Path) -> None:
    """--keep-profiles made before anything runs; a file or an unwritable place is one line."""
    from icount.errors import OutputError

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(
            f"--keep-profiles {folder}: cannot make the folder: {e.strerror or e}",
            path=str(folder),
            hint="name a folder icount can write",
        ) from None
