"""The results file: versioned JSON holding every raw sample, cell statistics,
validity and the environment fingerprint.

Provenance (date, host, load, steal, commit) lives in a separate file beside it, so
the results themselves stay byte-identical when the same measurement is repeated.
`model` holds runs, cells and results; `details` the typed payload of each run;
`files` reading (every version) and writing (the newest); `merge` below joins files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from icount.errors import UsageError
from icount.jsonout import dumps
from icount.results.files import (
    FORMAT,
    MAX_RESULTS_BYTES,
    VERSION,
    check_writable,
    holds_measurements,
    load,
    next_free_path,
    output_path,
    provenance_path,
    read_bounded,
    read_json,
    refuse_to_replace,
    release_unused,
    results_json,
    save,
    to_json,
    write_atomic,
)
from icount.results.model import UNIT_INSTRUCTIONS, UNIT_PER_REQUEST, Cell, Results, Run

__all__ = [
    "FORMAT",
    "MAX_RESULTS_BYTES",
    "UNIT_INSTRUCTIONS",
    "UNIT_PER_REQUEST",
    "VERSION",
    "Cell",
    "Results",
    "Run",
    "check_writable",
    "dumps",
    "holds_measurements",
    "load",
    "merge",
    "next_free_path",
    "output_path",
    "provenance_path",
    "read_bounded",
    "read_json",
    "refuse_to_replace",
    "release_unused",
    "results_json",
    "save",
    "to_json",
    "write_atomic",
]


def merge(named: Iterable[tuple[str, Results]]) -> Results:
    """Merge several results files; cells with the same key in two files are refused."""
    seen: dict[tuple[str, str, str], str] = {}
    cells: list[Cell] = []
    fingerprint: Mapping[str, Any] = {}
    collisions: list[str] = []
    for src, res in named:
        if not fingerprint:
            fingerprint = res.fingerprint
        for cell in res.cells:
            if cell.key in seen:
                collisions.append(f"{cell.key_text} ({seen[cell.key]} and {src})")
            else:
                seen[cell.key] = src
                cells.append(cell)
    if collisions:
        raise UsageError(
            "cells collide: " + "; ".join(collisions), hint="merge only files with distinct cells"
        )
    return Results(fingerprint, tuple(cells))
