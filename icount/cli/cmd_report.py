"""`icount report`: results, comparisons and sizes as one self-contained HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from icount.cli.options import SORT_HELP

if TYPE_CHECKING:
    from collections.abc import Sequence

    from icount.charts import Input
    from icount.charts.flame import Pair
    from icount.compare.drawn import CompareRow

HELP = """Draw results, comparisons and sizes as one self-contained HTML page.

\b
Examples:
  icount report icount-results/serve-001.json -o report.html
  icount report --compare base.json new.json -o report.html
  icount compare base.json new.json -f json -o cmp.json; icount report cmp.json
  icount size --format json ./server > size.json && icount report size.json new.json
  icount report --history history/ new.json   # a line per cell over the commits

(`;` after compare, not `&&`: compare exits 3 when a cell regressed, the case a
report is for.)

\b
Each FILE is recognised by its "format": results of `icount run` or `icount
serve` (bars of each cell's median with its min-max range and every run;
warm-up curves where --warmup auto recorded them; binary sizes), `icount
compare --format json` (the change of each cell on a diverging scale, by
verdict, with its threshold; the functions that moved and the differential
flame graph of each changed cell whose profiles kept their calls), or `icount
size --format json` (stacked bars of sections or segments, treemaps of
symbols, the changes of a --diff).
--compare BASE NEW compares two results files as `icount compare` does, with
the same --threshold, --min-delta and --force. The report exits 0 whatever
the verdicts: the gate is `icount compare`. Rows come in the order cells were
asked for, as `icount table` and `compare` print them; --sort name orders
them by name (fib-2 before fib-10) in every section.

\b
Axes span the valid cells (an invalid cell's bar ends at the axis) and start
at 0; targets whose medians are 50x apart or more, and binaries more than 20x
apart in size, get an axis per group of like size, and a comparison whose
largest change is 10x its threshold is linear within it and logarithmic
beyond. Each chart that does so says it in a line under its title.

\b
The page has no scripts and loads nothing: charts are inline SVG, every mark
has a title with the exact figure, it follows the reader's light or dark
setting, and the same inputs give the same bytes. A results file's
.provenance.json beside it (date, host, load) is shown folded; --no-provenance
leaves it out, so that the page of a repeated measurement is the same too.
"""


def register(app: typer.Typer) -> None:
    app.command("report", help=HELP)(report_command)


def report_command(
    files: list[Path] = typer.Argument(
        None, help="Results, compare or size JSON files.", show_default=False, metavar="FILE"
    ),
    output: str = typer.Option(
        "icount-report.html", "--output", "-o", help="The HTML file to write; - for stdout."
    ),
    compare: tuple[Path, Path] | None = typer.Option(
        None, "--compare", metavar="BASE NEW", help="Compare two results files (first section)."
    ),
    threshold: list[str] = typer.Option(
        [], "--threshold", "-t", help="With --compare: PCT or 'GLOB=PCT', as icount compare."
    ),
    min_delta: float | None = typer.Option(
        None,
        "--min-delta",
        help="With --compare: smallest |delta| for a verdict [10].",
        show_default=False,
    ),
    force: bool = typer.Option(
        False, "--force", help="With --compare: compare despite environment differences."
    ),
    sort: str = typer.Option("order", "--sort", help=SORT_HELP),
    no_provenance: bool = typer.Option(
        False, "--no-provenance", help="Leave out the results files' provenance."
    ),
    history: Path = typer.Option(
        None, "--history", help="A history folder (icount history): a line per cell over commits."
    ),
    ledger: Path = typer.Option(
        None, "--ledger", help="A ledger (icount compare --ledger): a row per change tried."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary line on stderr."),
) -> None:
    from icount import charts, numfmt
    from icount.cli.options import check_sort
    from icount.errors import UsageError
    from icount.results import write_atomic

    check_sort(sort)
    inputs = [*(compare or ()), *(files or [])]
    if not inputs and history is None and ledger is None:
        raise UsageError("report takes results, compare or size JSON files (or --compare BASE NEW)")
    if not compare and (threshold or min_delta is not None or force):
        raise UsageError("--threshold, --min-delta and --force need --compare BASE NEW")
    if output != "-":
        _check_output(Path(output), inputs, ledger, history)
    names = _names(inputs)
    items: list[Input] = []
    if compare:
        items.append(_comparison(compare, threshold, min_delta, force, names, sort))
    for path in files or []:
        items.append(_load(path, names[path], not no_provenance, sort))
    if history is not None:
        from icount.charts import ResultsInput
        from icount.charts.history import HistoryInput
        from icount.history import render, store

        loaded = store.load(history)
        if not loaded:
            raise UsageError(f"history {history} holds no entry (NNNN-COMMIT.json)")
        given = tuple((i.name, i.results) for i in items if isinstance(i, ResultsInput))
        items.append(HistoryInput(str(history), render.build(loaded), given))
    if ledger is not None:
        from icount.charts.ledger import load as load_ledger

        items.append(load_ledger(ledger, str(ledger)))
    page = charts.report_html(items)
    if output == "-":
        typer.echo(page, nl=False)
        return
    write_atomic(Path(output), page, overwrite=True)
    if not quiet:
        kib = len(page.encode()) / 1024
        sections = numfmt.plural(len(items), "section")
        typer.echo(f"icount: report in {output} ({sections}, {kib:.0f} KiB)", err=True)


def _check_output(
    output: Path, inputs: list[Path], ledger: Path | None, history: Path | None
) -> None:
    """Before any input is read: -o names a file that can be written, and neither an
    input (the ledger and the history folder too) nor a JSON file (a results file, a
    saved comparison or sizes: a report never replaces what it is drawn from)."""
    from icount import results
    from icount.errors import UsageError
    from icount.samefile import same_file

    target = output.resolve()
    if any(same_file(output, f) for f in inputs):
        raise UsageError(f"--output {output} is one of the input files")
    if ledger is not None and same_file(output, ledger):
        raise UsageError(f"--output {output} is the --ledger it would draw; refusing to replace it")
    if history is not None and target.is_relative_to(history.resolve()):
        raise UsageError(f"--output {output} is inside the --history folder")
    results.check_writable(output)
    if results.holds_measurements(output):
        raise UsageError(
            f"--output {output} is an icount results file; refusing to replace it",
            hint="choose another --output",
        )
    if _is_json(output):
        raise UsageError(
            f"--output {output} is a JSON file; the report is HTML: refusing to replace it",
            hint="choose another --output (report.html)",
        )


def _is_json(path: Path) -> bool:
    from icount.errors import ParseError
    from icount.results import read_json

    if not path.is_file():
        return False
    try:
        read_json(path)
    except ParseError:
        return False
    return True


def _names(paths: list[Path]) -> dict[Path, str]:
    """Section names: base names, or the paths as given where base names repeat."""
    bases = [p.name for p in paths]
    return {p: p.name if bases.count(p.name) == 1 else str(p) for p in paths}


def _load(path: Path, name: str, with_provenance: bool, sort: str) -> Input:
    import dataclasses

    from icount import charts, results, sorting
    from icount.errors import ParseError

    doc = results.read_json(path, "JSON file")
    kind = doc.get("format") if isinstance(doc, dict) else None
    if kind == results.FORMAT:
        res = results.load(path)
        provenance = _provenance(path) if with_provenance else None
        return charts.ResultsInput(name, res, provenance, sort)
    if kind == charts.COMPARE_FORMAT:
        comparison = charts.comparison_from_json(doc, str(path))
        from icount.compare import saved

        saved.check(doc, comparison, str(path))  # drawn only where it agrees with itself
        if sort == sorting.Sort.NAME:  # else the file's order: the order compare gave
            rows = tuple(sorting.by_name(comparison.rows, lambda r: r.label))
            comparison = dataclasses.replace(comparison, rows=rows)
        return charts.ComparisonInput(name, comparison, _flames(doc, str(path), comparison.rows))
    if kind == charts.SIZE_FORMAT:
        return charts.SizesInput(name, charts.sizes_from_json(doc, str(path)))
    raise ParseError(
        f"not an icount results, compare or size document (format {kind!r})",
        source=str(path),
        hint="make one with icount run/serve, icount compare -f json or icount size -f json",
    )


def _provenance(path: Path) -> dict[str, Any] | None:
    from icount.errors import ParseError
    from icount.results import provenance_path, read_json
    from icount.text import printable

    prov = provenance_path(path)
    if not prov.exists():
        return None
    try:
        doc = read_json(prov, "provenance file")
    except ParseError as e:
        why = printable(str(e).removeprefix(f"{prov}: "))
        typer.echo(
            f"icount: warning: {printable(str(prov))}: unreadable ({why}); the report leaves it "
            "out",
            err=True,
        )
        return None
    if not isinstance(doc, dict):
        typer.echo(
            f"icount: warning: {printable(str(prov))}: not a JSON object; the report leaves it out",
            err=True,
        )
        return None
    return doc


def _comparison(
    pair: tuple[Path, Path],
    threshold: list[str],
    min_delta: float | None,
    force: bool,
    names: dict[Path, str],
    sort: str,
) -> Input:
    from icount import charts, results
    from icount.compare import inlined, model, render
    from icount.compare.thresholds import DEFAULT_MIN_DELTA, parse_thresholds
    from icount.errors import UsageError

    limits = parse_thresholds(threshold, DEFAULT_MIN_DELTA if min_delta is None else min_delta)
    base_path, new_path = pair
    base, new = results.load(base_path), results.load(new_path)
    diffs = model.fingerprint_differences(base.fingerprint, new.fingerprint)
    if diffs and not force:
        raise UsageError(model.refusal(diffs, str(base_path), str(new_path)), hint="pass --force")
    # the rows of `icount compare`: as the cells were given, or by name
    compared = inlined.annotate(model.compare(base, new, limits, diffs), base, new, *pair)
    comparison = render.in_order(render.given_order(compared, new, base), sort)
    name = f"{names[base_path]} → {names[new_path]}"
    # a changed cell whose two sides kept their calls: as a saved comparison carries them
    profiles = tuple(
        (r.label, *r.explained.flame)
        for r in comparison.rows
        if r.explained is not None and r.explained.flame is not None
    )
    return charts.ComparisonInput(name, charts.comparison_doc(comparison), profiles)


def _flames(doc: Any, src: str, order: Sequence[CompareRow]) -> tuple[Pair, ...]:
    """The differential flame graphs' figures a comparison JSON carries (explained.flame,
    since version 2 of its format; none in files written before), in the rows' order."""
    from icount.errors import ParseError
    from icount.results.cell_profile import flame_pair_from_json

    found = {}
    for i, cell in enumerate(doc.get("cells") or (), 1):
        explained = cell.get("explained") if isinstance(cell, dict) else None
        flame = explained.get("flame") if isinstance(explained, dict) else None
        if flame is None:
            continue
        try:
            pair = flame_pair_from_json(flame, f"cell {i}: explained.flame")
        except (TypeError, ValueError) as e:
            raise ParseError(str(e), source=src) from None
        key = (cell.get("name"), cell.get("path", ""), cell.get("backend", ""))
        found[key] = pair
    keys = [(r, (r.name, r.path, r.backend)) for r in order]
    return tuple((r.label, *found[k]) for r, k in keys if k in found)
