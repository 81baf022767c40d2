"""The three views of an Image: by sections, by segments, by symbols.

The file-size column of every view sums exactly to the file size: regions are swept
in file order, a byte claimed twice (overlapping ranges in a hostile file) counts for
the region that starts first, and bytes nobody claims are `[padding]` (or take the
label of the Mach-O segment they lie in). The VM column adds what each region maps;
VM bytes of the image not covered by any row (alignment between sections) are
`[padding]` too.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any, NamedTuple

from icount.size.model import Breakdown, Image, symbols_said
from icount.size.rows import (
    Rows,
    exclusive_bytes,
    finish,
    finish_sections,
    row_label,
    whole_label,
)


class View(StrEnum):
    """`icount size --by`: the one place the views are named."""

    sections = "sections"
    segments = "segments"
    symbols = "symbols"
    compileunits = "compileunits"
    files = "files"
    crates = "crates"
    namespaces = "namespaces"
    packages = "packages"


class ViewSpec(NamedTuple):
    title: str  # the label column's title
    compute: Callable[[Image, int], Breakdown]  # (image, top) -> rows
    what: str  # --help: what its rows are (views of one `what` are listed together)
    symbols: bool = False  # needs the symbol tables (and numpy)
    dwarf: bool = False  # needs the DWARF: load(path, dwarf=view) reads it
    top: int = 0  # rows shown unless --top says otherwise (0: all)


def _crates(image: Image, top: int) -> Breakdown:
    from icount.size.groups import crate

    return by_symbols(image, top, crate)


def _namespaces(image: Image, top: int) -> Breakdown:
    from icount.size.groups import namespace

    return by_symbols(image, top, namespace)


def _packages(image: Image, top: int) -> Breakdown:
    from icount.size.groups import package

    return by_symbols(image, top, package)


def _units(view: View) -> Callable[[Image, int], Breakdown]:
    """Bytes by what the DWARF attributes them to (units.py)."""

    def compute(image: Image, top: int) -> Breakdown:
        from icount.size.units import by_units

        return by_units(image, view == View.files, top)

    return compute


def _sections(image: Image, top: int) -> Breakdown:
    return by_sections(image, top)


def _segments(image: Image, top: int) -> Breakdown:
    return by_segments(image, top)


def _symbols(image: Image, top: int) -> Breakdown:
    return by_symbols(image, top)


_LAYOUT = "the file's own layout (Wasm: its sections; segments groups them)"
_SYMBOLS = "functions and data (Wasm: the name section)"
_DWARF = (
    "what the DWARF (-g) of an ELF file attributes to each compile unit / source file; "
    "[no debug info] for the rest"
)
_GROUPED = "symbols grouped by Rust crate, C++ namespace, Go package"

VIEWS: dict[View, ViewSpec] = {
    View.sections: ViewSpec("Section", _sections, _LAYOUT),
    View.segments: ViewSpec("Segment", _segments, _LAYOUT),
    View.symbols: ViewSpec("Symbol", _symbols, _SYMBOLS, symbols=True, top=30),
    View.compileunits: ViewSpec(
        "Compile unit", _units(View.compileunits), _DWARF, symbols=True, dwarf=True, top=30
    ),
    View.files: ViewSpec(
        "Source file", _units(View.files), _DWARF, symbols=True, dwarf=True, top=30
    ),
    # symbols grouped by their names (groups.py)
    View.crates: ViewSpec("Crate", _crates, _GROUPED, symbols=True),
    View.namespaces: ViewSpec("Namespace", _namespaces, _GROUPED, symbols=True),
    View.packages: ViewSpec("Package", _packages, _GROUPED, symbols=True),
}


def by_sections(image: Image, top: int = 0) -> Breakdown:
    owned, gaps = exclusive_bytes(image.file_size, image.sections)
    acc = Rows()
    for r, n in zip(image.sections, owned, strict=True):
        acc.add(row_label(r), n, r.vm)
    return finish_sections(image, acc, gaps, owned, list(image.notes), top)


def by_segments(image: Image, top: int = 0) -> Breakdown:
    owned, gaps = exclusive_bytes(image.file_size, image.segments)
    acc = Rows()
    for r, n in zip(image.segments, owned, strict=True):
        acc.add(row_label(r), n, r.vm)
    return finish(image, acc, acc.add_containers(gaps, []), top)


def by_symbols(
    image: Image, top: int = 30, group: Callable[[str, str], str] | None = None
) -> Breakdown:
    """Sections split into their symbols; bytes no symbol covers stay with the section.

    Symbols are grouped by name in numpy; only the rows that can be shown (the largest
    `top` by file and by VM size, or all when top <= 0) get their names decoded and
    demangled, so a million-symbol library costs no per-symbol Python. With `group`
    (raw name, demangled name -> row label) every name is decoded and rows are groups.
    """
    import numpy as np

    from icount.size import demangle, symbols

    regions = image.sections
    owned, gaps = exclusive_bytes(image.file_size, regions)
    acc = Rows()
    notes = list(image.notes)
    table = image.symbols
    split = [False] * len(regions)
    rest = (0, 0, 0)
    named = 0
    if table is not None:
        charged = symbols.charge(table, regions)
        per = symbols.per_region(charged, len(regions))
        for i, r in enumerate(regions):
            # A section that overlaps another (hostile file) has fewer bytes than its
            # symbols claim: it stays whole rather than be charged twice.
            split[i] = r.sym_addr is not None and owned[i] == r.length and int(per[i]) > 0
        in_split = np.array([*split, False], dtype=bool)[charged.region]
        has_file = np.array([r.length > 0 for r in regions] + [False], dtype=bool)
        has_vm = np.array([r.vm > 0 for r in regions] + [False], dtype=bool)
        reg = charged.region[in_split]
        size = charged.size[in_split]
        f_size = np.where(has_file[reg], size, 0)
        v_size = np.where(has_vm[reg], size, 0)
        # one row per distinct name (string-table offset): equal offsets, equal names
        sym = charged.index[in_split]
        order = symbols.sort_order([table.name_off[sym]])
        name_sorted = table.name_off[sym][order]
        starts = np.flatnonzero(np.r_[True, name_sorted[1:] != name_sorted[:-1]][: sym.size])
        offs = name_sorted[starts]
        first = sym[order][starts]
        g_file = np.add.reduceat(f_size[order], starts) if starts.size else starts
        g_vm = np.add.reduceat(v_size[order], starts) if starts.size else starts
        shown = np.ones(offs.size, dtype=bool)
        if top > 0 and offs.size > 4 * top and group is None:
            shown[:] = False
            shown[_largest(g_file, offs, 4 * top)] = True
            shown[_largest(g_vm, offs, 4 * top)] = True
        names = {int(g): table.name(int(first[g])) for g in np.flatnonzero(shown)}
        labels = demangle.demangle_many(sorted(set(names.values())))
        for g, raw in names.items():
            label = labels[raw] if group is None else group(raw, labels[raw])
            acc.add(label, int(g_file[g]), int(g_vm[g]))
        hidden = ~shown
        rest = (int(hidden.sum()), int(g_file[hidden].sum()), int(g_vm[hidden].sum()))
        for i, r in enumerate(regions):
            if split[i]:
                f_used = int(per[i]) if r.length > 0 else 0
                v_used = int(per[i]) if r.vm > 0 else 0
                acc.add(f"[section {row_label(r)}]", owned[i] - f_used, max(0, r.vm - v_used))
        named = int(offs.size)
    for i, r in enumerate(regions):
        if not split[i]:
            acc.add(whole_label(r), owned[i], r.vm)
    said = symbols_said(table, named)
    aliases = "; aliases at one address count once" if named else ""
    out = finish_sections(image, acc, gaps, owned, [said + aliases, *notes], top, rest)
    out.symbols = said
    return out


def _largest(values: Any, tie: Any, k: int) -> Any:
    """Indices of the first k entries ordered by value (largest first), then by `tie`
    (distinct): what np.lexsort((tie, -values))[:k] selects, without sorting them all."""
    import numpy as np

    if values.size <= k:
        return np.arange(values.size)
    kth = np.partition(values, values.size - k)[values.size - k]  # the k-th largest
    above = np.flatnonzero(values > kth)
    at = np.flatnonzero(values == kth)
    at = at[np.argsort(tie[at])[: k - above.size]]
    return np.concatenate([above, at])


def help_lines() -> list[str]:
    """The views as --help lists them: the views of one `what` on a line, then it."""
    import textwrap

    groups: dict[str, list[str]] = {}
    for v, spec in VIEWS.items():
        groups.setdefault(spec.what, []).append(v.value)
    lines = []
    for what, names in groups.items():
        head = ", ".join(names)
        text = textwrap.wrap(what, 64)
        if len(head) < 20:
            lines.append(f"  {head:<20}{text[0]}")
            text = text[1:]
        else:
            lines.append(f"  {head}")
        lines += [f"  {'':<20}{t}" for t in text]
    return lines


def view(image: Image, by: str, top: int) -> Breakdown:
    return VIEWS[View(by)].compute(image, top)
