"""Typed reads of the JSON documents icount writes and reads back (a comparison, a size
document): each failure is a ParseError naming the file and the key at fault."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from icount.errors import ParseError


class Reader:
    """Typed access to one JSON document, failing with the file's name and the key."""

    def __init__(self, src: str) -> None:
        self.src = src

    def fail(self, what: str) -> ParseError:
        return ParseError(what, source=self.src)

    def obj(self, doc: Any, what: str) -> Mapping[str, Any]:
        if not isinstance(doc, dict):
            raise self.fail(f"{what} is not an object")
        return doc

    def items(self, doc: Mapping[str, Any], key: str, what: str) -> list[Any]:
        v = doc.get(key)
        if not isinstance(v, list):
            raise self.fail(f"{what}: {key!r} is missing or not a list")
        return v

    def text(self, doc: Mapping[str, Any], key: str, what: str, default: str | None = None) -> str:
        v = doc.get(key, default)
        if not isinstance(v, str):
            raise self.fail(f"{what}: {key!r} is missing or not a string")
        return v

    def num(self, doc: Mapping[str, Any], key: str, what: str) -> float:
        v = self.opt_num(doc, key, what)
        if v is None:
            raise self.fail(f"{what}: {key!r} is missing or not a number")
        return v

    def opt_num(self, doc: Mapping[str, Any], key: str, what: str) -> float | None:
        v = doc.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise self.fail(f"{what}: {key!r} is not a number")
        if not abs(v) < 2.0**63:  # as results files: no figure icount writes is 1e308
            raise self.fail(f"{what}: {key!r} {v!r} is beyond any figure icount writes")
        return float(v)

    def count(self, doc: Mapping[str, Any], key: str, what: str) -> int:
        v = doc.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise self.fail(f"{what}: {key!r} is missing or not a byte count")
        return v
