"""`icount size` from files to breakdowns, and breakdowns to a results file.

`breakdowns` loads each file with what its view needs (symbols, DWARF) and computes
one Breakdown per image; `select` applies --top to several breakdowns alike (the same
rows for each, ranked by their largest size in any of them, the rest summed); and
`to_results` writes them as an icount results file, so that `icount compare` gates a
binary's growth like an instruction count: one cell per image and row, for the file
bytes and the VM bytes, plus the totals and the gzip size, in unit "bytes".
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from icount.labels import distinct_suffixes
from icount.size.model import Breakdown, Row

if TYPE_CHECKING:
    from icount.results import Results

BACKEND = "size"
UNIT = "bytes"


def needs_symbols(by: str) -> bool:
    from icount.size.views import VIEWS, View

    return VIEWS[View(by)].symbols


def breakdowns(path: Path, by: str, top: int, gzip: bool) -> list[Breakdown]:
    """The breakdowns of one file (one per architecture of a fat file). `top` applies
    to a thin file only: the slices of a fat file match rows by label (select)."""
    from icount.size import load, views

    dwarf = by if views.VIEWS[views.View(by)].dwarf else None
    images = load(path, symbols=needs_symbols(by), dwarf=dwarf)
    each = top if len(images) == 1 else 0
    out = [views.view(image, by, each) for image in images]
    if gzip:
        size_gz = gzip_size(path)
        for b in out:
            b.gzip_bytes = size_gz
    return out


def gzip_size(path: Path) -> int:
    import gzip

    from icount.errors import ParseError

    try:
        data = path.read_bytes()
    except OSError as e:
        raise ParseError(f"cannot read: {e.strerror or e}", source=str(path)) from None
    # mtime=0 and no file name: the size depends on the bytes only, as `gzip -9 -n` does
    return len(gzip.compress(data, compresslevel=9, mtime=0))


def ranked(items: Sequence[Breakdown]) -> list[str]:
    """Every row label of `items`, the largest (file or VM, in any of them) first."""
    cells = [{r.label: r for r in b.rows} for b in items]
    return sorted(
        {r.label for b in items for r in b.rows},
        key=lambda lb: (-max(max(c[lb].file, c[lb].vm) if lb in c else 0 for c in cells), lb),
    )


def short_names(items: Sequence[Breakdown]) -> list[str]:
    """Column names: the shortest part of each path that tells it from the others
    (labels.distinct_suffixes: `O2/lzbench`, `O3/lzbench`), plus arch for fat slices."""
    names = distinct_suffixes([b.path for b in items])
    return [f"{n} [{b.arch}]" if b.fat else n for n, b in zip(names, items, strict=True)]


def shown_labels(items: Sequence[Breakdown], top: int) -> tuple[list[str], list[str]]:
    """The labels --top keeps for all of `items`, and those it sums away."""
    labels = ranked(items)
    if top <= 0 or len(labels) <= top + 1:
        return labels, []
    return labels[:top], labels[top:]


def select(items: Sequence[Breakdown], top: int) -> list[Breakdown]:
    """Each breakdown with the rows --top keeps for all of them, then `[N others]`."""
    if top <= 0:
        return list(items)
    shown, hidden = shown_labels(items, top)
    if not hidden:
        return list(items)
    keep, rest = set(shown), set(hidden)
    out = []
    for b in items:
        rows = [r for r in b.rows if r.label in keep]
        away = [r for r in b.rows if r.label in rest]
        if away:
            rows.append(
                Row(
                    f"[{len(away)} others]",
                    sum(r.file for r in away),
                    sum(r.vm for r in away),
                )
            )
        out.append(with_rows(b, rows))
    return out


def with_rows(b: Breakdown, rows: list[Row]) -> Breakdown:
    """`b` with other rows (the same bytes, summed differently)."""
    return Breakdown(
        b.path,
        b.arch,
        b.fmt,
        b.kind,
        b.file_size,
        rows,
        list(b.notes),
        b.gzip_bytes,
        b.fat,
        b.symbols,
    )


def _others(label: str) -> bool:
    return label.startswith("[") and label.endswith(" others]")


def is_unchanged(label: str) -> bool:
    """The row `changed_only` sums the rows equal on both sides into."""
    return label.startswith("[") and label.endswith(" unchanged]")


def changed_only(old: Breakdown, new: Breakdown) -> tuple[Breakdown, Breakdown]:
    """The pair with the rows of equal file and VM size on both sides summed into one
    `[N unchanged]` row, so that every column still sums to its total."""
    before = {r.label: r for r in old.rows}
    same = {r.label for r in new.rows if before.get(r.label) == r}
    if not same:
        return old, new

    def fold(b: Breakdown) -> Breakdown:
        kept = [r for r in b.rows if r.label not in same]
        gone = [r for r in b.rows if r.label in same]
        summed = Row(f"[{len(same)} unchanged]", sum(r.file for r in gone), sum(r.vm for r in gone))
        return with_rows(b, [*kept, summed])

    return fold(old), fold(new)


def to_results(items: Sequence[Breakdown], by: str) -> Results:
    """A results file of `items`: cell name the file's short name (its base name, with
    the architecture for a slice of a fat file), path `VIEW/LABEL/file` and
    `VIEW/LABEL/vm`, and `total/file`, `total/vm`, `total/gzip`. A `[N others]` row is
    `[others]`, so that its key does not change with N. A row's zero figure (the VM of
    `.symtab`, the file bytes of `.bss`) is no cell: a section that appears or
    disappears is `missing` in compare, and the totals hold its bytes."""
    from icount import __version__
    from icount.results import Cell, Results, Run
    from icount.stats import DEFAULT_MAX_SPREAD

    cells = []
    for b, name in zip(items, short_names(items), strict=True):
        params = {"view": by, "format": b.fmt, "kind": b.kind, "arch": b.arch}
        figures: list[tuple[str, int]] = []
        for r in b.rows:
            label = "[others]" if _others(r.label) else r.label
            figures += [
                (f"{by}/{label}/{column}", n) for column, n in (("file", r.file), ("vm", r.vm)) if n
            ]
        figures += [("total/file", b.file_total), ("total/vm", b.vm_total)]
        if b.gzip_bytes is not None:
            figures.append(("total/gzip", b.gzip_bytes))
        for path, value in figures:
            cells.append(
                Cell(
                    name=name,
                    path=path,
                    backend=BACKEND,
                    unit=UNIT,
                    # a size is read, not measured: one exact run, no spread
                    runs=(Run(value=value, valid=True),),
                    params=params,
                    runs_wanted=1,
                    max_spread=DEFAULT_MAX_SPREAD,
                )
            )
    # sizes depend on the file alone: no CPU, tool or library fields to check
    return Results({"backend": BACKEND, "icount_version": __version__}, tuple(cells))
