"""`icount size`: where the bytes of ELF, Mach-O and WebAssembly files go."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from icount.cli.fastargs import PlainCommand
from icount.cli.options import MIN_WIDTH, WIDTH_HELP, format_help
from icount.export import Kind
from icount.size.views import VIEWS, View, help_lines

if TYPE_CHECKING:
    from icount.results import Results
    from icount.size.model import Breakdown


HELP = """Break down the size of ELF, Mach-O and WebAssembly files.

Executables, shared libraries, object files, fat files (one breakdown per
architecture), Wasm modules and static libraries (.a: the members summed,
--by segments lists each). Each row shows its bytes in the file and in memory
(VM); headers and padding are rows of their own, so the file column sums to the
file size. Several files print side by side; --diff OLD NEW prints the rows that
changed, largest change first ([NEW], [DEL]; --all adds the rest); -o FILE writes
a results file for `icount compare`, which exits 3 when a size grew past its
threshold.

\b
Views (--by):
{views}

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


def _long_views() -> str:
    """'30 for symbols, compileunits and files': the views with a default --top."""
    tops: dict[int, list[str]] = {}
    for view, spec in VIEWS.items():
        if spec.top:
            tops.setdefault(spec.top, []).append(view.value)
    return "; ".join(f"{n} for {', '.join(v[:-1])} and {v[-1]}" for n, v in tops.items())


def register(app: typer.Typer) -> None:
    text = HELP.replace("{views}", "\n".join(help_lines()))
    app.command("size", help=text, cls=PlainCommand)(size)


def size(
    files: list[Path] = typer.Argument(
        ..., help="ELF, Mach-O or WebAssembly files.", show_default=False, metavar="FILE"
    ),
    by: View = typer.Option(View.sections, "--by", help="Rows: see Views above."),
    top: int | None = typer.Option(
        None,
        "--top",
        help=f"Show the N largest rows, the rest summed (default: all; {_long_views()}).",
    ),
    gzip: bool = typer.Option(False, "--gzip", help="Add the gzip -9 size of each whole file."),
    diff: bool = typer.Option(False, "--diff", help="Compare two files: OLD NEW."),
    every: bool = typer.Option(
        False, "--all", help="With --diff: list the unchanged rows too, not one summed row."
    ),
    fmt: str = typer.Option("table", "--format", "-f", help=format_help(Kind.SIZE)),
    width: int | None = typer.Option(
        None, "--width", min=MIN_WIDTH, help=WIDTH_HELP, show_default=False
    ),
    output: Path | None = typer.Option(
        None,
        "--output",
        "-o",
        help="Also write the sizes as a results file for icount compare.",
        show_default=False,
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite --output if it exists."),
) -> None:
    from icount import export
    from icount.cli.options import table_width
    from icount.errors import UsageError

    export.check(fmt, Kind.SIZE_DIFF if diff else Kind.SIZE)
    if diff and len(files) != 2:
        raise UsageError(f"--diff takes exactly two files (OLD NEW), got {len(files)}")
    if every and not diff:
        raise UsageError("--all lists the unchanged rows of --diff", hint="add --diff OLD NEW")
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
    from icount.size import report

    spec = VIEWS[by]
    if spec.symbols:
        _import_numpy_without_blas_threads()
    limit = top if top is not None else spec.top
    # Several files, a fat file or a diff match rows by label: every row is computed
    # first, and --top applies to all of them alike (report.select).
    each_top = limit if len(files) == 1 and not diff else 0
    loaded = [report.breakdowns(p, by.value, each_top, gzip) for p in files]

    doc: export.Document
    if diff:
        pairs = _pair(loaded[0], loaded[1], str(files[0]), str(files[1]))
        if not every:
            pairs = [report.changed_only(o, n) for o, n in pairs]
        doc = export.SizeDiffDoc(pairs, by.value, limit)
    else:
        items = [b for bds in loaded for b in bds]
        chosen = report.select(items, limit)
        if output is not None:
            _save(output, report.to_results(chosen, by.value), force)
        doc = export.SizeDoc(items, chosen, by.value, limit)
    typer.echo(export.render(doc, fmt, table_width(width)), nl=False)


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
