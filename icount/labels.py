"""Names of files that tell them apart: the shortest trailing part of each path that no
other path given with it ends in (`O2/lzbench`, `O3/lzbench`, `O2lto/lzbench`, where
base names alone made three rows called `lzbench`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath


def _parts(path: str) -> tuple[str, ...]:
    parts = PurePosixPath(path).parts
    return tuple(p for p in parts if p not in ("", "."))


def distinct_suffixes(paths: Sequence[str]) -> list[str]:
    """For each path, its fewest last components (at least the base name) that differ
    from every other path's same number of last components; a path given twice (the
    slices of one fat file) keeps its base name, as the rest then cannot part it."""
    split = [_parts(p) or (p,) for p in paths]
    out = []
    for k, parts in enumerate(split):
        others = {s for j, s in enumerate(split) if j != k and s != parts}
        n = 1
        while n < len(parts) and any(o[-n:] == parts[-n:] for o in others):
            n += 1
        out.append("/".join(parts[-n:]))
    return out
