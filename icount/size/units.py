"""The compileunits and files views: section bytes by the DWARF unit or source file
they come from (dwarf.py reads the attribution).

For every loaded section (one that takes address space), the addresses are given out
by priority, each byte once: for files, the line table's ranges first, then the rest
of each unit's ranges to the unit's own file; for units, the units' ranges; then, in
both, the variables, each sized by the symbol at its address (symbols.charge: aliases
and overlaps once). What no claim reaches in a section that DWARF covers in part is
`[no debug info]`; a section DWARF never reaches stays whole as `[section NAME]`, and
so do the sections that take no address space (`.debug_*`, `.symtab`): exactly as the
symbols view does, so that every section's bytes are accounted for once.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from icount.numfmt import plural
from icount.size.model import Breakdown, Image
from icount.size.rows import Rows, exclusive_bytes, finish_sections, whole_label

NO_DEBUG_INFO = "[no debug info]"

Claim = tuple[int, int, str]  # [lo, hi), label


def by_units(image: Image, files: bool, top: int = 0) -> Breakdown:
    """The files view (`files`) or the compileunits view."""
    regions = image.sections
    owned, gaps = exclusive_bytes(image.file_size, regions)
    acc = Rows()
    notes = list(image.notes)
    att = image.dwarf
    split: dict[int, dict[str, int]] = {}
    if att is not None:
        sizes = sized_symbols(image)
        split = attribute(image, files, sizes)
        unsized = sum(1 for addr, _, _ in att.variables if addr not in sizes)
        notes.append(
            f"from the DWARF of {plural(att.units, 'compile unit')} "
            f"({plural(len(att.variables), 'variable')} with an address)"
            + (
                f"; {plural(unsized, 'variable')} {'has' if unsized == 1 else 'have'} "
                "no symbol to size them"
                if unsized
                else ""
            )
        )
    for i, r in enumerate(regions):
        parts = split.get(i)
        # a section overlapping another (hostile file) stays whole, as in the symbols view
        if parts is None or owned[i] != r.length:
            acc.add(whole_label(r), owned[i], r.vm)
            continue
        claimed = 0
        for label, n in parts.items():
            acc.add(label, n if r.length else 0, n if r.vm else 0)
            claimed += n
        acc.add(NO_DEBUG_INFO, owned[i] - claimed if r.length else 0, r.vm - claimed)
    return finish_sections(image, acc, gaps, owned, notes, top)


def attribute(image: Image, files: bool, sizes: dict[int, int]) -> dict[int, dict[str, int]]:
    """Section index -> label (source file if `files`, else compile unit) -> bytes, for
    the loaded sections DWARF reaches; each section's labels sum to at most its size.
    `sizes`: sized_symbols(image)."""
    att = image.dwarf
    if att is None:
        return {}
    if files:
        levels: list[list[Claim]] = [att.line_ranges, [(a, b, f) for a, b, _, f in att.unit_ranges]]
    else:
        levels = [[(a, b, u) for a, b, u, _ in att.unit_ranges]]
    levels.append(
        [
            (addr, addr + sizes[addr], file if files else unit)
            for addr, unit, file in att.variables
            if sizes.get(addr)
        ]
    )
    loaded = sorted(
        (r.sym_addr, i)
        for i, r in enumerate(image.sections)
        if r.sym_addr is not None and r.vm > 0 and r.sym_size > 0
    )
    out: dict[int, dict[str, int]] = {}
    for lo, i in loaded:
        hi = lo + image.sections[i].sym_size
        parts = _carve(lo, hi, [_within(level, lo, hi) for level in levels])
        if parts:
            out[i] = parts
    return out


def _within(claims: Iterable[Claim], lo: int, hi: int) -> list[Claim]:
    return [(max(a, lo), min(b, hi), x) for a, b, x in claims if a < hi and b > lo]


def _carve(lo: int, hi: int, levels: list[list[Claim]]) -> dict[str, int]:
    """Bytes per label of [lo, hi): each level takes only what earlier levels left,
    and within a level the claim that starts first keeps a byte claimed twice."""
    covered: list[tuple[int, int]] = []  # disjoint, sorted
    out: dict[str, int] = {}
    for level in levels:
        taken: list[tuple[int, int]] = []
        cursor = lo
        for a, b, label in sorted(level):
            a = max(a, cursor)
            if b <= a:
                continue
            for x, y in _free(covered, a, b):
                out[label] = out.get(label, 0) + (y - x)
                taken.append((x, y))
            cursor = b
        covered = _merge(covered + taken)
    return out


def _free(covered: list[tuple[int, int]], a: int, b: int) -> list[tuple[int, int]]:
    """The parts of [a, b) that no interval of `covered` holds."""
    out = []
    k = max(0, bisect.bisect_right(covered, (a, a)) - 1)
    cursor = a
    while k < len(covered) and covered[k][0] < b:
        x, y = covered[k]
        if y > cursor:
            if x > cursor:
                out.append((cursor, min(x, b)))
            cursor = max(cursor, y)
        k += 1
    if cursor < b:
        out.append((cursor, b))
    return out


def _merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def sized_symbols(image: Image) -> dict[int, int]:
    """Address -> exclusive bytes of the symbol there, in the loaded sections."""
    if image.symbols is None:
        return {}
    from icount.size import symbols

    charged = symbols.charge(image.symbols, image.sections)
    addrs = image.symbols.addr[charged.index].tolist()
    return dict(zip(addrs, charged.size.tolist(), strict=True))
