"""The three views of an Image: by sections, by segments, by symbols.

The file-size column of every view sums exactly to the file size: regions are swept
in file order, a byte claimed twice (overlapping ranges in a hostile file) counts for
the region that starts first, and bytes nobody claims are `[padding]` (or take the
label of the Mach-O segment they lie in). The VM column adds what each region maps;
VM bytes of the image not covered by any row (alignment between sections) are
`[padding]` too.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any, NamedTuple

from icount.size.model import PADDING, Breakdown, Container, Image, Region, Row


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

        return by_units(image, view, top)

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


def exclusive_bytes(
    file_size: int, regions: Sequence[Region]
) -> tuple[list[int], list[tuple[int, int]]]:
    """Bytes each region holds alone, and the gaps nobody claims, in file order."""
    owned = [0] * len(regions)
    gaps: list[tuple[int, int]] = []
    cursor = 0
    order = sorted(
        (i for i, r in enumerate(regions) if r.length > 0), key=lambda i: (regions[i].start, i)
    )
    for i in order:
        start = min(regions[i].start, file_size)
        end = min(start + regions[i].length, file_size)
        if start > cursor:
            gaps.append((cursor, start))
        owned[i] = max(0, end - max(start, cursor))
        cursor = max(cursor, end)
    if cursor < file_size:
        gaps.append((cursor, file_size))
    return owned, gaps


def _split_gaps(
    gaps: list[tuple[int, int]], containers: Sequence[Container]
) -> tuple[dict[str, int], int]:
    """Gap bytes per container label, and gap bytes outside every container."""
    spans: list[tuple[int, int, str]] = []
    cursor = 0
    for c in sorted(containers, key=lambda c: (c.start, c.label)):
        start, end = max(c.start, cursor), c.start + c.length
        if end > start:  # overlapping containers: the earlier one keeps the bytes
            spans.append((start, end, c.label))
            cursor = end
    starts = [s[0] for s in spans]
    inside: dict[str, int] = {}
    outside = 0
    for g0, g1 in gaps:
        covered = 0
        k = max(0, bisect.bisect_right(starts, g0) - 1)
        while k < len(spans) and spans[k][0] < g1:
            s0, s1, label = spans[k]
            n = max(0, min(g1, s1) - max(g0, s0))
            if n:
                inside[label] = inside.get(label, 0) + n
                covered += n
            k += 1
        outside += (g1 - g0) - covered
    return inside, outside


class _Rows:
    """Rows keyed by label, summed, in a deterministic order."""

    def __init__(self) -> None:
        self.cells: dict[str, list[int]] = {}

    def add(self, label: str, file: int, vm: int) -> None:
        cell = self.cells.setdefault(label, [0, 0])
        cell[0] += file
        cell[1] += vm

    def rows(self) -> list[Row]:
        return sorted(
            (Row(k, v[0], v[1]) for k, v in self.cells.items() if v != [0, 0]),
            key=lambda r: (-max(r.file, r.vm), -r.file, r.label),
        )


def _finish(
    image: Image, acc: _Rows, gap_out: int, top: int, hidden: tuple[int, int, int] = (0, 0, 0)
) -> Breakdown:
    """Add the padding row, keep the `top` rows; `hidden` = (count, file, vm) of rows
    already summed away (symbols whose names were never decoded)."""
    vm_used = sum(v[1] for v in acc.cells.values()) + hidden[2]
    acc.add(PADDING, gap_out, max(0, image.vm_total - vm_used))
    if acc.cells[PADDING] == [0, 0]:
        del acc.cells[PADDING]
    rows = limit(acc.rows(), top, hidden)
    return Breakdown(
        image.path,
        image.arch,
        image.fmt,
        image.kind,
        image.file_size,
        rows,
        list(image.notes),
        fat=image.fat,
    )


def limit(rows: list[Row], top: int, hidden: tuple[int, int, int] = (0, 0, 0)) -> list[Row]:
    """The first `top` rows, the rest (and `hidden`) summed into one row (top <= 0: all)."""
    if top <= 0 or (len(rows) <= top + 1 and hidden[0] == 0):
        return rows
    rest = rows[top:]
    other = Row(
        f"[{len(rest) + hidden[0]} others]",
        sum(r.file for r in rest) + hidden[1],
        sum(r.vm for r in rest) + hidden[2],
    )
    return [*rows[:top], other]


COMPRESSED = " (compressed)"


def row_label(r: Region) -> str:
    """A section's row label: its name, marked when its bytes are compressed."""
    return r.label + COMPRESSED if r.compressed else r.label


def compressed_note(regions: Sequence[Region]) -> list[str]:
    """What the (compressed) rows hold: each section's uncompressed size, from its Chdr."""
    parts = [
        f"{r.label} {r.length} -> {size} bytes ({algo})"
        for r in regions
        if r.compressed
        for algo, size in [r.compressed]
    ]
    if not parts:
        return []
    return [
        "(compressed): SHF_COMPRESSED sections, shown at their size in the file; "
        "in the file -> uncompressed: " + ", ".join(parts)
    ]


def _layout(
    image: Image, regions: Sequence[Region], containers: Sequence[Container]
) -> tuple[_Rows, list[int], int]:
    owned, gaps = exclusive_bytes(image.file_size, regions)
    acc = _Rows()
    for r, n in zip(regions, owned, strict=True):
        acc.add(row_label(r), n, r.vm)
    inside, outside = _split_gaps(gaps, containers)
    for c in containers:
        acc.add(c.label, inside.pop(c.label, 0), c.vm)
    return acc, owned, outside


def by_sections(image: Image, top: int = 0) -> Breakdown:
    acc, owned, outside = _layout(image, image.sections, image.section_containers)
    out = _finish(image, acc, outside, top)
    out.notes += _overlap_note(image.sections, owned) + compressed_note(image.sections)
    return out


def _overlap_note(regions: Sequence[Region], owned: list[int]) -> list[str]:
    shared = sum(r.length for r in regions) - sum(owned)
    if shared <= 0:
        return []
    return [
        f"{shared} bytes lie in more than one section (overlapping ranges): "
        "each counts once, for the range that starts first"
    ]


def by_segments(image: Image, top: int = 0) -> Breakdown:
    acc, _, outside = _layout(image, image.segments, [])  # segments are never compressed
    return _finish(image, acc, outside, top)


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
    acc = _Rows()
    notes = list(image.notes)
    table = image.symbols
    split = [False] * len(regions)
    rest = (0, 0, 0)
    if table is None:
        notes.append("no symbol table: bytes are shown by section")
    else:
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
        notes.append(f"symbols from {table.source}; aliases at one address count once")
    for i, r in enumerate(regions):
        if not split[i]:
            acc.add(r.label if r.sym_addr is None else f"[section {row_label(r)}]", owned[i], r.vm)
    inside, outside = _split_gaps(gaps, image.section_containers)
    for c in image.section_containers:
        acc.add(c.label, inside.pop(c.label, 0), c.vm)
    out = _finish(image, acc, outside, top, rest)
    out.notes = notes + _overlap_note(regions, owned) + compressed_note(regions)
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
