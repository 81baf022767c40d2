"""Helpers of the fuzz tests: every position of a value in a parsed document, and a
copy of the document with the value at one position replaced."""

from __future__ import annotations

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
