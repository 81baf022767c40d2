"""The one row order of every table: as given, or by name in natural order.

Rows come in the order their commands, targets or files were given; `--sort name`
orders names as a person reads them (fib-1, fib-2, fib-10), not as text (fib-1,
fib-10, fib-2).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import TypeVar

T = TypeVar("T")

_DIGITS = re.compile(r"([0-9]+)")


class Sort(StrEnum):
    ORDER = "order"  # as the commands, targets or files were given
    NAME = "name"  # by name, numbers in names by value


SORTS = tuple(s.value for s in Sort)


def natural_key(name: str) -> tuple[tuple[str | tuple[int, str], ...], str]:
    """fib-2 before fib-10: runs of ASCII digits compare by value, the rest as text;
    names equal by that (fib-01, fib-1) by their text, so that the order is total."""
    parts = _DIGITS.split(name)
    return tuple(_by_value(p) if i % 2 else p for i, p in enumerate(parts)), name


def _by_value(digits: str) -> tuple[int, str]:
    """A run of digits as its value orders it, without int(): a name from a file may
    hold more digits than int() converts (4,300)."""
    significant = digits.lstrip("0")
    return len(significant), significant


def by_name(items: Iterable[T], name: Callable[[T], str]) -> list[T]:
    return sorted(items, key=lambda item: natural_key(name(item)))


def names(items: Iterable[str]) -> list[str]:
    """Distinct names in natural order."""
    return sorted(set(items), key=natural_key)
