"""Which cells of two `icount size -o` files `icount compare` gates.

A size results file holds a cell per row of its view and column (`VIEW/LABEL/file`,
`VIEW/LABEL/vm`) beside the totals (`total/file`, `total/vm`, `total/gzip`). Gating
them all fails a build for any section that moved past 1%, however few its bytes,
and for the DWARF of a -g build. So compare gates the VM total (what the
image maps: no debug section is in it), or the file total of a file that maps nothing
(Wasm), and the rows the user names with `--size-gate`. A debug section (`.debug_*`,
`.zdebug_*`, Mach-O's `__DWARF`) gates only under a glob that names debug sections
itself (one with "debug" or "DWARF" in it): `*` does not.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import NamedTuple

from icount.compare.model import Comparison, Row, Verdict
from icount.compare.render import NOT_GATED, WITHIN
from icount.size.report import BACKEND

TOTAL = "total"
_DEBUG = (".debug_", ".zdebug_", "[section .debug_", "[section .zdebug_", "__DWARF")


def parse(items: Sequence[str]) -> list[str]:
    """`--size-gate .text,.data --size-gate '.rodata*'` -> the globs, in order."""
    return [g.strip() for item in items for g in item.split(",") if g.strip()]


def label(path: str) -> str:
    """The row a cell is a column of: `VIEW/LABEL/COLUMN` -> LABEL (labels may hold
    '/': source paths, Go import paths); `total/file` -> total."""
    parts = path.split("/")
    return TOTAL if parts[0] == TOTAL else "/".join(parts[1:-1])


def _is_debug(row_label: str) -> bool:
    return row_label.startswith(_DEBUG)


def _names_debug(glob: str) -> bool:
    return "debug" in glob.lower() or "dwarf" in glob.lower()


def named(path: str, globs: Sequence[str]) -> str | None:
    """The first glob naming the cell at `path` (its row's label or the whole path)."""
    row_label = label(path)
    debug = _is_debug(row_label)
    for g in globs:
        if (fnmatchcase(row_label, g) or fnmatchcase(path, g)) and (not debug or _names_debug(g)):
            return g
    return None


def _maps(row: Row) -> bool:
    return any(s is not None and s.max > 0 for s in (row.base, row.new))


class Selected(NamedTuple):
    shown: Comparison  # every row; a size row that does not gate marked NOT_GATED
    gated: Comparison  # the rows the gate judges (every other backend's row kept)
    said: list[str]  # how many size rows do not gate, and each glob that named none


def select(comparison: Comparison, items: Sequence[str]) -> Selected:
    """The rows that gate, and the comparison to show: every row, so that a table, PR
    comment or export still says what changed (the `.data` that grew the VM total),
    each size row that does not gate made "unchanged" with the why `not gated (its
    verdict)`, so that no count, bullet or exit code takes it for a regression."""
    globs = parse(items)
    sized = [r for r in comparison.rows if r.backend == BACKEND]
    if not sized:
        said = ["--size-gate names rows of `icount size -o` files; these hold none"]
        return Selected(comparison, comparison, said if globs else [])
    mapped = {r.name for r in sized if r.path == "total/vm" and _maps(r)}
    used: set[str] = set()

    def gates(r: Row) -> bool:
        if r.backend != BACKEND or r.path == ("total/vm" if r.name in mapped else "total/file"):
            return True
        glob = named(r.path, globs)
        if glob is not None:
            used.add(glob)
        return glob is not None

    kept = tuple(r for r in comparison.rows if gates(r))
    gating = {id(r) for r in kept}
    said = []
    if len(kept) < len(comparison.rows):
        said.append(
            f"{len(comparison.rows) - len(kept)} size cells do not gate (the total does); "
            "name rows with --size-gate GLOB[,GLOB] (e.g. .text,.data or total/file; "
            "debug sections only by a glob with 'debug' in it)"
        )
    said += [f"--size-gate '{g}' named no size row" for g in globs if g not in used]
    shown = tuple(r if id(r) in gating else _not_gated(r) for r in comparison.rows)
    return Selected(
        dataclasses.replace(comparison, rows=shown),
        dataclasses.replace(comparison, rows=kept),
        said,
    )


def _not_gated(r: Row) -> Row:
    moved = r.verdict is not Verdict.UNCHANGED or bool(r.delta) or bool(r.why)
    was = (r.why or WITHIN) if r.verdict is Verdict.UNCHANGED else r.verdict.value
    why = f"{NOT_GATED} ({was})" if moved else NOT_GATED
    return dataclasses.replace(r, verdict=Verdict.UNCHANGED, why=why)
