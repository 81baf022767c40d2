"""`icount size`: where the bytes of ELF and Mach-O files go."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from icount.cli.fastargs import PlainCommand

if TYPE_CHECKING:
    from icount.size.model import Breakdown, Image


class By(StrEnum):
    sections = "sections"
    segments = "segments"
    symbols = "symbols"


class Format(StrEnum):
    table = "table"
    md = "md"
    csv = "csv"
    json = "json"


HELP = """Break down the size of ELF and Mach-O files (executables, shared libraries,
object files, fat files: one breakdown per architecture).

Each row shows its bytes in the file and in memory (VM); headers and padding are rows
of their own, so the file column sums to the file size. Several files print side by
side; --diff OLD NEW prints the change, largest first.

\b
Examples:
  icount size ./server
  icount size --by symbols --top 20 libfoo.so
  icount size --gzip hello_c hello_rust hello_go
  icount size --diff --format md old/server new/server
"""


def register(app: typer.Typer) -> None:
    app.command("size", help=HELP, cls=PlainCommand)(size)


def size(
    files: list[Path] = typer.Argument(
        ..., help="ELF or Mach-O files.", show_default=False, metavar="FILE"
    ),
    by: By = typer.Option(By.sections, "--by", help="Rows: sections, segments or symbols."),
    top: int | None = typer.Option(
        None, "--top", help="Show the N largest rows, the rest summed (default: all; symbols: 30)."
    ),
    gzip: bool = typer.Option(False, "--gzip", help="Add the gzip -9 size of each whole file."),
    diff: bool = typer.Option(False, "--diff", help="Compare two files: OLD NEW."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="Output format."),
    width: int = typer.Option(120, "--width", help="Width of the terminal table."),
) -> None:
    from icount.errors import UsageError
    from icount.size import load, render, views

    symbols = by is By.symbols
    if symbols:
        _import_numpy_without_blas_threads()

    if diff and len(files) != 2:
        raise UsageError(f"--diff takes exactly two files (OLD NEW), got {len(files)}")
    if top is not None and top < 0:
        raise UsageError("--top must be 0 (all) or more")
    limit = top if top is not None else (30 if by is By.symbols else 0)
    loaded = [(path, load(path, symbols=symbols)) for path in files]
    # Several files, or a diff, match rows by label, so every row is computed first.
    each_top = limit if len(loaded) == 1 and len(loaded[0][1]) == 1 and not diff else 0

    def breakdowns(path: Path, images: list[Image]) -> list[Breakdown]:
        out = [views.view(image, by.value, each_top) for image in images]
        if gzip:
            size_gz = _gzip_size(path)
            for b in out:
                b.gzip_bytes = size_gz
        return out

    if diff:
        old, new = (breakdowns(p, imgs) for p, imgs in loaded)
        pairs = _pair(old, new, str(files[0]), str(files[1]))
        if fmt is Format.json:
            typer.echo(render.diff_json(pairs, by.value), nl=False)
        elif fmt is Format.csv:
            typer.echo(render.diff_csv(pairs, by.value), nl=False)
        else:
            tables = [render.diff_table(o, n, by.value, limit) for o, n in pairs]
            typer.echo(render.text(tables, fmt.value, width), nl=False)
        return

    items = [b for p, imgs in loaded for b in breakdowns(p, imgs)]
    if fmt is Format.json:
        typer.echo(render.to_json(items, by.value), nl=False)
    elif fmt is Format.csv:
        typer.echo(render.to_csv(items, by.value), nl=False)
    else:
        t = render.table(items, by.value, limit)
        typer.echo(render.text([t], fmt.value, width), nl=False)


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


def _gzip_size(path: Path) -> int:
    import gzip

    from icount.errors import UsageError

    try:
        data = path.read_bytes()
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror or e}") from None
    # mtime=0 and no file name: the size depends on the bytes only, as `gzip -9 -n` does
    return len(gzip.compress(data, compresslevel=9, mtime=0))
