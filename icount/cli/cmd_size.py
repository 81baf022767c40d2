"""`icount size`: where the bytes of ELF and Mach-O files go."""

from __future__ import annotations

import re
from enum import Enum, StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args, get_origin

import typer
import typer.core

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
    svg = "svg"


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
  icount size --format svg ./server > size.svg    # a chart for a README
"""


def register(app: typer.Typer) -> None:
    app.command("size", help=HELP, cls=_SizeCommand)(size)


class _SizeCommand(typer.core.TyperCommand):
    """The size command, its arguments converted without pydantic where that is exact.

    typer 0.2x converts every parameter through a pydantic TypeAdapter: importing
    pydantic and building the adapters costs ~0.1 s per run, a quarter of
    `icount size --by symbols` on a 200 MB library (scripts/bench_size.py). This
    command's values are plain (file paths, choices, decimal integers): those are
    converted here with typer's own helpers, and anything else (a malformed number, an
    unknown choice) goes through typer's pydantic path, so values and error messages
    stay typer's. typer versions without that machinery are left alone.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        convert_without_pydantic(self.params)

    def get_help_option(self, ctx: Any) -> Any:
        # made on first use; its value is None unless --help is given
        option = super().get_help_option(ctx)
        if option is not None:
            convert_without_pydantic([option])
        return option


_DECIMAL = re.compile(r"-?[0-9]{1,18}")
_UNSURE = object()


def convert_without_pydantic(params: list[Any]) -> None:
    """Give each typer parameter a converter that needs no pydantic for plain values."""
    try:
        from typer._coercion import RuntimeParam, build_runtime_param
        from typer._param_types import coerce_cli_choice, coerce_cli_path
    except ImportError:  # a typer that converts with click's types: nothing to avoid
        return

    def leaf(kind: Any, value: Any, info: Any, param: Any, ctx: Any) -> Any:
        """What typer's adapter for `kind` makes of `value`, or _UNSURE."""
        if kind is bool or kind is str:
            return value if type(value) is kind else _UNSURE
        if kind is int:
            if type(value) is int:
                return value
            if isinstance(value, str) and _DECIMAL.fullmatch(value):
                return int(value)
            return _UNSURE
        if isinstance(kind, type) and issubclass(kind, Enum):
            try:  # what typer's choice adapter calls, minus the pydantic wrapper
                choices = list(kind)
                return coerce_cli_choice(
                    value, choices=choices, case_sensitive=info.case_sensitive, ctx=ctx
                )
            except ValueError:
                return _UNSURE
        if kind is Path and isinstance(value, str) and value:
            # typer's own checks (existence flags, readability), given a Path so that
            # it needs no pydantic to make one
            return coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)
        return _UNSURE

    class Plain(RuntimeParam):
        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            kind: Any = self.annotation
            info = self.parameter_info
            if get_origin(kind) is list and isinstance(value, list | tuple):
                (item,) = get_args(kind)
                out = [leaf(item, v, info, param, ctx) for v in value]
                if not any(x is _UNSURE for x in out):
                    return out
            else:
                one = leaf(kind, value, info, param, ctx)
                if one is not _UNSURE:
                    return one
            slow = build_runtime_param(param.type_descriptor)
            return slow._coerce_value(value, param=param, ctx=ctx)

    for p in params:
        desc = getattr(p, "type_descriptor", None)
        if getattr(p, "_runtime_param", True) is None and desc is not None:
            try:
                p._runtime_param = Plain(
                    parameter_info=desc.parameter_info, annotation=desc.annotation
                )
            except (TypeError, AttributeError):  # typer's private API moved: use typer's path
                return


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

    _import_numpy_without_blas_threads()
    from icount.size import load, render, views

    if diff and len(files) != 2:
        raise UsageError(f"--diff takes exactly two files (OLD NEW), got {len(files)}")
    if top is not None and top < 0:
        raise UsageError("--top must be 0 (all) or more")
    limit = top if top is not None else (30 if by is By.symbols else 0)
    loaded = [(path, load(path)) for path in files]
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
        if fmt in (Format.json, Format.svg):
            text = render.diff_json(pairs, by.value)
            typer.echo(_svg(text) if fmt is Format.svg else text, nl=False)
        elif fmt is Format.csv:
            typer.echo(render.diff_csv(pairs, by.value), nl=False)
        else:
            tables = [render.diff_table(o, n, by.value, limit) for o, n in pairs]
            typer.echo(render.text(tables, fmt.value, width), nl=False)
        return

    items = [b for p, imgs in loaded for b in breakdowns(p, imgs)]
    if fmt in (Format.json, Format.svg):
        text = render.to_json(items, by.value)
        typer.echo(_svg(text) if fmt is Format.svg else text, nl=False)
    elif fmt is Format.csv:
        typer.echo(render.to_csv(items, by.value), nl=False)
    else:
        t = render.table(items, by.value, limit)
        typer.echo(render.text([t], fmt.value, width), nl=False)


def _svg(size_json: str) -> str:
    """The chart of what --format json prints (icount.charts reads that document)."""
    import json

    from icount import charts

    return charts.sizes_svg(charts.sizes_from_json(json.loads(size_json), "icount size"))


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
