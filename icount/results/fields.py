"""Typed reads of JSON values, for the results readers: each names the field at fault."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from icount.results.extras import check as check_measured
from icount.text import printable

T = TypeVar("T")

MAX_NUMBER = 2.0**63
# The smallest figure but 0 a file may hold: no count, ratio or fraction icount writes is
# nearer 0, and the ratio of any two figures within MIN_NUMBER..MAX_NUMBER (2**126 at
# most), even as a percentage, stays finite
MIN_NUMBER = 2.0**-63


def int_(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{what} is not an integer")
    return v


def num(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise TypeError(f"{what} is not a number")
    if not abs(v) < MAX_NUMBER:  # a count, a size or a fraction: no measurement is 1e300
        raise ValueError(f"{what} {v!r} is beyond any count icount measures")
    if 0 < abs(v) < MIN_NUMBER:  # 5e-324: a base median of it made a change of +inf%
        raise ValueError(f"{what} {v!r} is too small to be any figure icount measures")
    return abs(v) if v == 0 else v  # -0.0 would be written back as "-0.0"


def opt_num(v: Any, what: str) -> float | None:
    return None if v is None else num(v, what)


def count(v: Any, what: str) -> float:
    """An instruction count, a byte count or a duration: no measurement is negative
    (runs of -5 and 5 have a median of 0, which no spread can be taken over)."""
    x = num(v, what)
    if x < 0:
        raise ValueError(f"{what} {x!r} is negative; no count icount measures is")
    return x


def opt_count(v: Any, what: str) -> float | None:
    return None if v is None else count(v, what)


def count_int(v: Any, what: str) -> int:
    n = int_(v, what)
    if n < 0:
        raise ValueError(f"{what} {n!r} is negative; no count icount measures is")
    return n


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


def free_form(v: Any, what: str) -> dict[str, Any]:
    """An object of any shape (a fingerprint, a cell's params or extra, a plan's
    identity) whose every number, however deep, is still one `num` takes: tables,
    compare and the charts read figures out of them too."""
    d = obj(v, what)
    stack: list[Any] = [d]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += item.values()
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, int | float) and not isinstance(item, bool):
            num(item, f"a number in {what}")
    return d


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
    """The cell's `extra`: the binary sizes icount serve records must be byte counts,
    and the functions behind a spread (`spread_explained`) what serve/spread.py
    writes, since the table's notes read every field of it."""
    for key in ("binary_bytes", "binary_text_bytes"):
        if key in extra:
            n = int_(extra[key], f"cell.extra.{key}")
            if n < 0:
                raise ValueError(f"cell.extra.{key} must not be negative")
    if "spread_explained" in extra:
        _explained(obj(extra["spread_explained"], "cell.extra.spread_explained"))
    check_measured(extra)  # the build label, peak memory and start-up floor
    return extra


def _explained(d: Mapping[str, Any]) -> None:
    what = "cell.extra.spread_explained"

    def field(doc: Mapping[str, Any], key: str, where: str) -> Any:
        if key not in doc:
            raise ValueError(f"{where} has no {key!r}")
        return doc[key]

    count(field(d, "spread", what), f"{what}.spread")
    num(d.get("explained", 0), f"{what}.explained")
    for side in ("low", "high"):
        w = obj(field(d, side, what), f"{what}.{side}")
        str_(field(w, "window", f"{what}.{side}"), f"{what}.{side}.window")
        count(field(w, "per_request", f"{what}.{side}"), f"{what}.{side}.per_request")
    for item in list_(field(d, "functions", what), f"{what}.functions"):
        pair = list_(item, f"{what}.functions[]")
        if len(pair) != 2:
            raise ValueError(f"{what}.functions[] is [function name, change per request]")
        str_(pair[0], f"{what}.functions[] name")
        num(pair[1], f"{what}.functions[] change")


def in_cell(doc: Any, index: int, read: Callable[[Any], T]) -> T:
    """`read(doc)` of the cell at `index`, its error prefixed with the cell it is in, so
    that a refusal names the cell and the field: 'cell fib/callgrind: run 2: ...'."""
    try:
        return read(doc)
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"cell {_cell_name(doc, index)}: {describe(e)}") from None


def _cell_name(doc: Any, index: int) -> str:
    if isinstance(doc, dict):
        parts = [doc.get(k) for k in ("name", "path", "backend")]
        if all(isinstance(p, str) for p in parts):  # names from the file: escaped
            return printable("/".join(p for p in parts if p))
    return f"#{index + 1}"


def in_run(doc: Any, index: int, read: Callable[[Any], T]) -> T:
    try:
        return read(doc)
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"run {index + 1}: {describe(e)}") from None


def describe(e: Exception) -> str:
    """The message of a reader's error; a KeyError's is the missing field."""
    if type(e) is KeyError:
        return f"missing field {e.args[0]!r}" if e.args else "missing field"
    return str(e.args[0]) if e.args else type(e).__name__
