"""Typed reads of JSON values, for the results readers: each names the field at fault."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_NUMBER = 2.0**63


def int_(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{what} is not an integer")
    return v


def num(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise TypeError(f"{what} is not a number")
    if not abs(v) < MAX_NUMBER:  # a count, a size or a fraction: no measurement is 1e300
        raise ValueError(f"{what} {v!r} is beyond any count icount measures")
    return abs(v) if v == 0 else v  # -0.0 would be written back as "-0.0"


def opt_num(v: Any, what: str) -> float | None:
    return None if v is None else num(v, what)


def str_(v: Any, what: str) -> str:
    if not isinstance(v, str):
        raise TypeError(f"{what} is not a string")
    return v


def opt_str(v: Any, what: str) -> str | None:
    return None if v is None else str_(v, what)


def bool_(v: Any, what: str) -> bool:
    if not isinstance(v, bool):
        raise TypeError(f"{what} is not a boolean")
    return v


def obj(v: Any, what: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise TypeError(f"{what} is not an object")
    return v


def list_(v: Any, what: str) -> list[Any]:
    if not isinstance(v, list):
        raise TypeError(f"{what} is not a list")
    return v


def positive_int(v: Any, what: str) -> int:
    n = int_(v, what)
    if n < 1:
        raise ValueError(f"{what} must be a positive integer")
    return n


def spread_limit(v: Any, what: str) -> float:
    """A cell's --max-spread: the fraction `numfmt.parse_percent` accepts (0 to 10)."""
    x = num(v, what)
    if not 0 < x < 10:
        raise ValueError(f"{what} {x!r} is not a spread limit icount takes (above 0%, below 1000%)")
    return x


def check_extra(extra: Mapping[str, Any]) -> Mapping[str, Any]:
    """The cell's `extra`: the binary sizes icount serve records must be byte counts."""
    for key in ("binary_bytes", "binary_text_bytes"):
        if key in extra:
            n = int_(extra[key], f"cell.extra.{key}")
            if n < 0:
                raise ValueError(f"cell.extra.{key} must not be negative")
    return extra
