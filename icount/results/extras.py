"""Checks of what a cell's `extra` holds from the issue-22 measurements, as icount
writes them: the build label (build_label.py), the peak memory (memory.py) and the
start-up floor (startup_floor.py). Kept here, beside the loader, so that loading a file
imports none of the modules that measure them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MODE_FIELDS = ("optimisation", "lto")
CACHE_EVENTS = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")


def check_label(doc: Any, where: str) -> Mapping[str, Any]:
    """A stored label: an object whose mode fields are text, a flag or null (the
    table's notes and compare read them)."""
    if not isinstance(doc, Mapping):
        raise ValueError(f"{where} must be an object")
    mode = doc.get("mode", {})
    if not isinstance(mode, Mapping):
        raise ValueError(f"{where}.mode must be an object")
    for f in MODE_FIELDS:
        v = mode.get(f)
        if v is not None and not isinstance(v, str | bool):
            raise ValueError(f"{where}.mode.{f} must be text, true/false or null")
    for f in ("interpreter", "build_id", "program"):
        if doc.get(f) is not None and not isinstance(doc.get(f), str):
            raise ValueError(f"{where}.{f} must be text")
    return doc


def check_memory(doc: Any, where: str) -> Mapping[str, Any]:
    """Stored peaks: byte counts, one per native run, and why there are fewer."""
    return _counts(doc, where, "peak_rss_bytes", "byte counts", int)


def check_floor(doc: Any, where: str) -> Mapping[str, Any]:
    """A stored floor: its kind, and the counts of its runs."""
    d = _counts(doc, where, "runs", "counts", int | float)
    if d.get("kind") is not None and not isinstance(d["kind"], str):
        raise ValueError(f"{where}.kind must be text")
    return d


def _counts(doc: Any, where: str, key: str, what: str, kind: Any) -> Mapping[str, Any]:
    """An object whose `key` lists non-negative numbers within 64 bits, with an
    optional `reason` (why the list is short)."""
    if not isinstance(doc, Mapping):
        raise ValueError(f"{where} must be an object")
    values = doc.get(key)
    if not isinstance(values, list) or not all(
        isinstance(v, kind) and not isinstance(v, bool) and _figure(v) for v in values
    ):
        raise ValueError(f"{where}.{key} must be a list of {what}")
    _reason(doc, where)
    return doc


def check_cache_sim(doc: Any, where: str) -> Mapping[str, Any]:
    """A stored simulation: its events' counts and wall times, or why there is none."""
    if not isinstance(doc, Mapping):
        raise ValueError(f"{where} must be an object")
    _reason(doc, where)
    if doc.get("reason") is not None:
        return doc
    events = doc.get("events")
    if not isinstance(events, Mapping) or not all(
        isinstance(events.get(e), int)
        and not isinstance(events.get(e), bool)
        and 0 <= events[e] < 2**63
        for e in CACHE_EVENTS
    ):
        raise ValueError(f"{where}.events must count {', '.join(CACHE_EVENTS)}")
    for key in ("wall_s", "counted_wall_s"):
        v = doc.get(key)
        if not isinstance(v, int | float) or isinstance(v, bool) or not _figure(v, 1e9):
            raise ValueError(f"{where}.{key} must be seconds")
    return doc


def _figure(v: float, high: float = 2**63) -> bool:
    """A count or a duration as a measurement writes it: 0, or within 2**-63 (a
    subnormal such as 5e-324 is none) and `high`."""
    return v == 0 or 2**-63 <= v < high


def _reason(doc: Mapping[str, Any], where: str) -> None:
    if doc.get("reason") is not None and not isinstance(doc["reason"], str):
        raise ValueError(f"{where}.reason must be text")


def check(extra: Mapping[str, Any]) -> None:
    checks = (
        ("build", check_label),
        ("memory", check_memory),
        ("floor", check_floor),
        ("cache_sim", check_cache_sim),
    )
    for key, checker in checks:
        if key in extra:
            checker(extra[key], f"cell.extra.{key}")
