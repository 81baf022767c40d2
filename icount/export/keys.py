"""Formats that key each cell by one name (BMF's benchmarks, github-action-benchmark's
series, JUnit's test cases) must never give two cells the same one: a cell named `a/b`
and the cell `a` with path `b` were one Bencher benchmark, and one figure was silently
dropped. Such a document is refused, naming both cells; renaming them is the user's
call, and a made-up suffix would start a new series in the tracker the next day."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any

from icount.errors import UsageError
from icount.text import printable


def cell_words(name: str, path: str, backend: str) -> str:
    """A cell as a message names it apart from every other: 'name "a", path "b", backend
    callgrind' (its label `a/b` is also the label of a cell named "a/b")."""
    parts = [f'name "{printable(name)}"']
    if path:
        parts.append(f'path "{printable(path)}"')
    return ", ".join([*parts, f"backend {printable(backend)}"])


def refuse_collisions(
    claims: Iterable[tuple[Hashable, str]],
    fmt: str,
    what: str,
    shown: Callable[[Any], str] = str,
) -> None:
    """UsageError where two claims, each (the key in the format, the cell claiming it as
    `cell_words` says it), have one key; `shown` says a key in the message."""
    seen: dict[Hashable, str] = {}
    for key, cell in claims:
        if key in seen:
            raise UsageError(
                f'--format {fmt}: two cells would be one {what}, "{printable(shown(key))}": '
                f"{seen[key]}; and {cell}",
                hint="rename one of them, or choose another --format",
            )
        seen[key] = cell
