"""Helpers of the fuzz tests: every position of a value in a parsed document, and a
copy of the document with the value at one position replaced."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any


def slots(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every position of a value in the document (the root is ()), as a path of keys
    and indices."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += slots(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += slots(v, (*prefix, i))
    return out


def replace(doc: Any, where: tuple[Any, ...], value: Any) -> Any:
    """A copy of `doc` with `value` at `where`."""
    if not where:
        return value
    head, rest = where[0], where[1:]
    if isinstance(doc, dict):
        return {k: (replace(v, rest, value) if k == head else v) for k, v in doc.items()}
    return [(replace(v, rest, value) if i == head else v) for i, v in enumerate(doc)]


def drop(doc: Any, where: tuple[Any, ...]) -> Any:
    """A copy of `doc` without the key or item at `where` (not the root)."""
    head, rest = where[0], where[1:]
    if not rest:
        if isinstance(doc, dict):
            return {k: v for k, v in doc.items() if k != head}
        return [v for i, v in enumerate(doc) if i != head]
    if isinstance(doc, dict):
        return {k: (drop(v, rest) if k == head else v) for k, v in doc.items()}
    return [(drop(v, rest) if i == head else v) for i, v in enumerate(doc)]


def mutated(doc: Any, rng: random.Random, edges: Sequence[Any], times: int = 3) -> Any:
    """`doc` with 1 to `times` positions each replaced by an edge value (or, one time in
    seven, dropped): what both the results and the comparison fuzzers feed readers."""
    for _ in range(rng.randint(1, times)):
        where = rng.choice(slots(doc))
        if where and rng.random() < 0.15:
            doc = drop(doc, where)
        else:
            doc = replace(doc, where, rng.choice(edges))
    return doc
