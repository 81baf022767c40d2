"""`icount size`: where the bytes of ELF, Mach-O and WebAssembly files go."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from icount.cli.fastargs import PlainCommand

if TYPE_CHECKING:
    from icount.results import Results
    from icount.size.model import Breakdown


class By(StrEnum):
    sections = "sections"
    segments = "segments"
    symbols = "symbols"
    compileunits = "compileunits"
    files = "files"
    crates = "crates"
    namespaces = "namespaces"
    packages = "packages"


class Format(StrEnum):
    table = "table"
    md = "md"
    csv = "csv"
    json = "json"
    svg = "svg"


# views with many rows: the largest 30 unless --top says otherwise
_LONG_VIEWS = (By.symbols, By.compileunits, By.files)

HELP = """Break down the size of ELF, Mach-O and WebAssembly files.

Executables, shared libraries, object files, fat files (one breakdown per
architecture) and Wasm modules. Each row shows its bytes in the file and in memory
(VM); headers and padding are rows of their own, so the file column sums to the
file size. Several files print side by side; --diff OLD NEW prints the change,
largest first; -o FILE writes a results file for `icount compare`, which exits 3
when a size grew past its threshold.

\b
Views (--by):
  sections, segments  the file's own layout (Wasm: its sections; segments groups them)
  symbols             functions and data (Wasm: the name section)
  compileunits, files what the DWARF (-g) of an ELF file attributes to each compile
                      unit / source file; [no debug info] for the rest
  crates, namespaces, packages
                      symbols grouped by Rust crate, C++ namespace, Go package

\b
Examples:
  icount size ./server
  icount size --by symbols --top 20 libfoo.so
  icount size --by compileunits ./server
  icount size --gzip hello_c hello_rust hello_go app.wasm
  icount size --diff --format md old/server new/server
  icount size --format svg ./server > size.svg    # a chart for a README
  icount size --gzip -o new.json build/server && icount compare base.json new.json
"""


def register(app: typer.Typer) -> None:
    app.command("size", help=HELP, cls=PlainCommand)(size)


def size(
    files: list[Path] = typer.Argument(
        ..., help="ELF, Mach-O or WebAssembly files.", show_default=False, metavar="FILE"
    ),
    by: By = typer.Option(By.sections, "--by", help="Rows: see Views above."),
    top: int | None = typer.Option(
        None,
        "--top",
        help="Show the N largest rows, the rest summed (default: all; 30 for symbols, "
        "compileunits and files).",
    ),
    gzip: bool = typer.Option(False, "--gzip", help="Add the gzip -9 size of each whole file."),
    diff: bool = typer.Option(False, "--diff", help="Compare two files: OLD NEW."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="Output format."),
    width: int = typer.Option(120, "--width", help="Width of the terminal table."),
    output: Path | None = typer.Option(
        None,
        "--output",
        "-o",
        help="Also write the sizes as a results file for icount compare.",
        show_default=False,
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite --output if it exists."),
) -> None:
    from icount.errors import UsageError

    if diff and len(files) != 2:
        raise UsageError(f"--diff takes exactly two files (OLD NEW), got {len(files)}")
    if top is not None and top < 0:
        raise UsageError("--top must be 0 (all) or more")
    if output is not None:
        if diff:
            raise UsageError(
                "--output records the sizes of builds; compare two results files with "
                "icount compare",
                hint="drop --diff",
            )
        _check_output(output, force)
    from icount.size import render, report

    if report.needs_symbols(by.value):
        _import_numpy_without_blas_threads()
    limit = top if top is not None else (30 if by in _LONG_VIEWS else 0)
    # Several files, a fat file or a diff match rows by label: every row is computed
    # first, and --top applies to all of them alike (report.select).
    each_top = limit if len(files) == 1 and not diff else 0
    loaded = [report.breakdowns(p, by.value, each_top, gzip) for p in files]

    if diff:
        old, new = loaded
        pairs = _pair(old, new, str(files[0]), str(files[1]))
        if fmt in (Format.json, Format.svg):
            text = render.diff_json(pairs, by.value)
            typer.echo(_svg(text) if fmt is Format.svg else text, nl=False)
        elif fmt is Format.csv:
            typer.echo(render.diff_csv(pairs, by.value), nl=False)
        else:
            tables = [render.diff_table(o, n, by.value, limit) for o, n in pairs]
            typer.echo(render.text(tables, fmt.value, width), nl=False)
        return

    items = [b for bds in loaded for b in bds]
    chosen = report.select(items, limit)
    if output is not None:
        _save(output, report.to_results(chosen, by.value), force)
    if fmt in (Format.json, Format.svg):
        text = render.to_json(chosen, by.value)
        typer.echo(_svg(text) if fmt is Format.svg else text, nl=False)
    elif fmt is Format.csv:
        typer.echo(render.to_csv(chosen, by.value), nl=False)
    else:
        t = render.table(items, by.value, limit)
        typer.echo(render.text([t], fmt.value, width), nl=False)


def _svg(size_json: str) -> str:
    """The chart of what --format json prints (icount.charts reads that document)."""
    import json

    from icount import charts

    return charts.sizes_svg(charts.sizes_from_json(json.loads(size_json), "icount size"))


def _check_output(path: Path, force: bool) -> None:
    """What can be refused before any file is read."""
    from icount.errors import UsageError

    if path.is_dir():
        raise UsageError(f"--output {path} is a directory", hint="give --output a file name")
    if path.exists() and not force:
        raise UsageError(f"{path} exists; refusing to overwrite it", hint="pass --force")
    from icount import results

    results.check_writable(path)  # its folder, a FIFO, /proc: before any file is read


def _save(path: Path, res: Results, force: bool) -> None:
    from icount import results
    from icount.errors import UsageError

    names = [c.key for c in res.cells]
    if len(set(names)) != len(names):
        raise UsageError("the same file is given twice: its cells would collide in --output")
    try:
        results.save(path, res, None, overwrite=force)
    except OSError as e:
        raise UsageError(f"--output {path}: cannot write: {e.strerror or e}") from None


def _import_numpy_without_blas_threads() -> None:
    """Import numpy with OpenBLAS held to one thread.

    icount does no linear algebra, but numpy's OpenBLAS starts one spinning thread
    per core when it loads: ~50 ms of a 0.3 s run on 2 cores. A setting of the user's
    own wins; the environment is restored afterwards, so nothing started later
    inherits it.
    """
    import os
    import sys

    if "numpy" in sys.modules:
        return
    name = "OPENBLAS_NUM_THREADS"
    saved = os.environ.get(name)
    os.environ.setdefault(name, "1")
    try:
        import numpy  # noqa: F401
    finally:
        if saved is None:
            del os.environ[name]


def _pair(
    old: list[Breakdown], new: list[Breakdown], a: str, b: str
) -> list[tuple[Breakdown, Breakdown]]:
    """Thin vs thin: one pair. Fat files: the architectures both hold, in OLD's order."""
    from icount.errors import UsageError

    if len(old) == 1 and len(new) == 1:
        return [(old[0], new[0])]
    by_arch = {n.arch: n for n in new}
    pairs = [(o, by_arch[o.arch]) for o in old if o.arch in by_arch]
    if not pairs:
        archs_a = ", ".join(o.arch for o in old)
        archs_b = ", ".join(n.arch for n in new)
        raise UsageError(f"{a} ({archs_a}) and {b} ({archs_b}) share no architecture to compare")
    return pairs
