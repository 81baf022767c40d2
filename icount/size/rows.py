"""What every view of an Image does with its rows: the bytes each region holds alone,
the gaps nobody claims (split by the containers they lie in), rows summed by label in
one order, the `[padding]` row, the `top` cut and the notes on the sections.

The views (views.py) and the DWARF views (units.py) both build on these, and neither
on the other's module.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from icount.size.model import PADDING, Breakdown, Container, Image, Region, Row

COMPRESSED = " (compressed)"


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


def split_gaps(
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


class Rows:
    """Rows keyed by label, summed, in a deterministic order."""

    def __init__(self) -> None:
        self.cells: dict[str, list[int]] = {}

    def add(self, label: str, file: int, vm: int) -> None:
        cell = self.cells.setdefault(label, [0, 0])
        cell[0] += file
        cell[1] += vm

    def add_containers(self, gaps: list[tuple[int, int]], containers: Sequence[Container]) -> int:
        """A row per container, of the gap bytes in it (and its VM); returns the gap
        bytes outside every container."""
        inside, outside = split_gaps(gaps, containers)
        for c in containers:
            self.add(c.label, inside.pop(c.label, 0), c.vm)
        return outside

    def rows(self) -> list[Row]:
        return sorted(
            (Row(k, v[0], v[1]) for k, v in self.cells.items() if v != [0, 0]),
            key=lambda r: (-max(r.file, r.vm), -r.file, r.label),
        )


def finish(
    image: Image, acc: Rows, gap_out: int, top: int, hidden: tuple[int, int, int] = (0, 0, 0)
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


def finish_sections(
    image: Image,
    acc: Rows,
    gaps: list[tuple[int, int]],
    owned: list[int],
    notes: list[str],
    top: int,
    hidden: tuple[int, int, int] = (0, 0, 0),
) -> Breakdown:
    """The end of a view whose rows come from the sections: the section containers'
    rows, the padding row, the `top` cut, then `notes` and what the sections need said
    (overlaps, compression). `owned`, `gaps`: exclusive_bytes of image.sections."""
    outside = acc.add_containers(gaps, image.section_containers)
    out = finish(image, acc, outside, top, hidden)
    out.notes = notes + _overlap_note(image.sections, owned) + _compressed_note(image.sections)
    return out


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


def row_label(r: Region) -> str:
    """A section's row label: its name, marked when its bytes are compressed."""
    return r.label + COMPRESSED if r.compressed else r.label


def whole_label(r: Region) -> str:
    """The row of a section a symbols or DWARF view leaves whole: `[section NAME]` for
    one that could have been split (it has an address), its name for the rest."""
    return r.label if r.sym_addr is None else f"[section {row_label(r)}]"


def _compressed_note(regions: Sequence[Region]) -> list[str]:
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


def _overlap_note(regions: Sequence[Region], owned: list[int]) -> list[str]:
    shared = sum(r.length for r in regions) - sum(owned)
    if shared <= 0:
        return []
    return [
        f"{shared} bytes lie in more than one section (overlapping ranges): "
        "each counts once, for the range that starts first"
    ]
