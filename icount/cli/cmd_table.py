"""`icount table`: re-render saved results, merging several files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

HELP = """Re-render saved results files as one table.

\b
Examples:
  icount table icount-results/run-001.json
  icount table c.json nginx.json --format md > RESULTS.md
  icount table serve-001.json --format svg > results.svg   # a chart for a README

Files are merged when their cells do not collide (same name, path and backend)
and their environment fingerprints agree on what moves counts. Rows come in the
order each file holds them (the order its commands or targets were given), file
after file; --sort name sorts them by name.
"""


def register(app: typer.Typer) -> None:
    app.command("table", help=HELP, no_args_is_help=True)(table_command)


def table_command(
    files: list[Path] = typer.Argument(..., help="Results JSON files."),
    fmt: str = typer.Option("table", "--format", "-f", help="table, md, csv, json or svg."),
    sort: str = typer.Option(
        "order", "--sort", help="Rows as each file holds them, file after file (order), or by name."
    ),
    width: int = typer.Option(120, "--width", help="Table width in characters."),
) -> None:
    from icount import environment, report, results
    from icount.cli.options import check_format, check_sort
    from icount.errors import UsageError
    from icount.tables import FORMATS

    check_format(fmt, (*FORMATS, "svg"))
    check_sort(sort)
    loaded = _one_after_another([(str(f), results.load(f)) for f in files])
    first_src, first = loaded[0]
    for src, res in loaded[1:]:
        diff = environment.fingerprint_differences(
            first.fingerprint, res.fingerprint, same_method=True
        )
        if diff:
            raise UsageError(
                f"{src} was measured in another environment than {first_src} "
                f"(differs in {', '.join(diff)}); its counts are not comparable"
            )
    merged = results.merge(loaded)
    if fmt == "svg":
        from icount import charts

        typer.echo(charts.results_svg(merged), nl=False)
        return
    typer.echo(report.render_results(merged, fmt, width, sort=sort), nl=False)


def _one_after_another(loaded: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Each file's cells placed after the previous file's, in their own order: the rows
    of `icount table c.json go.json` are c's, then go's."""
    from dataclasses import replace

    from icount.results import Results

    shifted, offset = [], 0
    for src, res in loaded:
        cells = tuple(replace(c, order=c.order + offset) for c in res.cells)
        shifted.append((src, Results(res.fingerprint, cells)))
        offset += max((c.order for c in res.cells), default=-1) + 1
    return shifted
