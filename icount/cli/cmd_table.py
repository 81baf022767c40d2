"""`icount table`: re-render saved results, merging several files."""

from __future__ import annotations

from pathlib import Path

import typer

from icount.cli.options import MIN_WIDTH, WIDTH_HELP, format_help
from icount.export import Kind
from icount.text import printable

HELP = """Re-render saved results files as one table.

\b
Examples:
  icount table icount-results/run-001.json
  icount table c.json nginx.json --format md > RESULTS.md
  icount table serve-001.json --format svg > results.svg   # a chart for a README
  icount table shards/ -f json > merged.json     # the shard files of one session

Files are merged when their cells do not collide (same name, path and backend)
and their environment fingerprints agree on what moves counts. A folder stands
for every results file in it. Rows come in the order each file holds them (the order
its commands or targets were given), file after file; --sort name sorts them by
name (fib-2 before fib-10). The shard files of one session (--shard I/N) merge
into exactly what the session run unsharded gives (the same table, CSV and JSON
bytes), and only when they are all there, each once, of one plan, one
environment and one icount version; otherwise icount names what differs. One
shard file alone shows its own cells (and keeps its shard record in --format
json).

\b
A table of files measured at different commits, or in different sessions, says
so (read from the provenance beside each file). --at REF (a commit, branch or
tag git resolves here, or a commit hash) shows every cell of a file measured at
another commit as 'not measured at REF yet': its figures are not REF's.
"""


def register(app: typer.Typer) -> None:
    app.command("table", help=HELP, no_args_is_help=True)(table_command)


def table_command(
    files: list[Path] = typer.Argument(..., help="Results JSON files, or folders of them."),
    fmt: str = typer.Option("table", "--format", "-f", help=format_help(Kind.RESULTS)),
    sort: str = typer.Option(
        "order",
        "--sort",
        help="Rows as each file holds them, file after file (order), or by name "
        "(fib-2 before fib-10).",
    ),
    width: int | None = typer.Option(
        None, "--width", min=MIN_WIDTH, help=WIDTH_HELP, show_default=False
    ),
    at: str = typer.Option(
        None, "--at", help="REF: cells measured at another commit say 'not measured at REF yet'."
    ),
) -> None:
    from icount import export, results
    from icount.cli.options import check_sort, table_width
    from icount.results import stamps

    export.check(fmt, Kind.RESULTS)
    check_sort(sort)
    commit = None if at is None else stamps.resolve(at, Path.cwd())
    loaded = results.load_inputs(files)
    for note in stamps.mixed(stamps.stamps(loaded)):
        typer.echo(f"icount: warning: {printable(note)}", err=True)
    if at is not None and commit is not None:
        loaded = stamps.at(loaded, at, commit)
    merged = results.merge_inputs(loaded, one_shard=True)
    if merged.shard is not None:
        typer.echo(
            f"icount: warning: {loaded[0][0]} is shard {merged.shard.label} of a session: "
            f"only its cells (give all {merged.shard.total} shard files to merge the session)",
            err=True,
        )
    typer.echo(export.render_results(merged, fmt, table_width(width), sort=sort), nl=False)
