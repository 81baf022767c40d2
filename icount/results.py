"""The results file: versioned JSON holding every raw sample, cell statistics,
validity and the environment fingerprint.

Provenance (date, host, load, steal, commit) lives in a separate file beside it, so
the results themselves stay byte-identical when the same measurement is repeated.

Format history (bump VERSION and add a line on every change to the layout):
  1 - first version: {format, version, fingerprint, cells[]}; see docs in README.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icount.errors import ResultsFileError, UsageError
from icount.stats import Summary, spread_reason, summarize

FORMAT = "icount-results"
VERSION = 1
MAX_RESULTS_BYTES = 256 * 1024 * 1024  # refuse to load absurd files rather than exhaust memory

UNIT_INSTRUCTIONS = "instructions"
UNIT_PER_REQUEST = "instructions/request"


@dataclass(frozen=True)
class Run:
    """One fresh process. `value` is None when the run produced no figure."""

    value: float | None
    valid: bool
    reason: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "valid": self.valid,
            "reason": self.reason,
            "detail": dict(self.detail),
        }


@dataclass(frozen=True)
class Cell:
    """One measured cell. Its statistics are derived from the runs once, on first use
    (a frozen dataclass keeps them valid)."""

    name: str
    path: str
    backend: str
    unit: str
    runs: tuple[Run, ...]
    params: Mapping[str, Any]
    runs_wanted: int
    max_spread: float
    extra: Mapping[str, Any] = field(default_factory=dict)
    invalid_reason: str | None = None  # set when the cell failed before any run counted

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.name, self.path, self.backend)

    @property
    def key_text(self) -> str:
        return "/".join(p for p in self.key if p)

    @functools.cached_property
    def values(self) -> list[float]:
        return [r.value for r in self.runs if r.valid and r.value is not None]

    @functools.cached_property
    def summary(self) -> Summary | None:
        vals = self.values
        return summarize(vals) if vals else None

    @functools.cached_property
    def reason(self) -> str | None:
        """Why the cell is invalid, or None if it is valid."""
        if self.invalid_reason:
            return self.invalid_reason
        bad = [r for r in self.runs if not r.valid]
        if bad:
            first = bad[0].reason or "run failed"
            more = f" (and {len(bad) - 1} more failed runs)" if len(bad) > 1 else ""
            return f"run {self.runs.index(bad[0]) + 1} of {self.runs_wanted}: {first}{more}"
        if len(self.runs) < self.runs_wanted:
            return f"only {len(self.runs)} of {self.runs_wanted} runs completed"
        summary = self.summary
        if summary is None:
            return "no run produced a value"
        return spread_reason(summary, self.max_spread)

    @functools.cached_property
    def valid(self) -> bool:
        return self.reason is None

    def to_json(self) -> dict[str, Any]:
        s = self.summary
        return {
            "name": self.name,
            "path": self.path,
            "backend": self.backend,
            "unit": self.unit,
            "params": dict(self.params),
            "runs_wanted": self.runs_wanted,
            "max_spread": self.max_spread,
            "runs": [r.to_json() for r in self.runs],
            "median": s.median if s else None,
            "min": s.min if s else None,
            "max": s.max if s else None,
            "spread": s.spread if s else None,
            "valid": self.valid,
            "reason": self.reason,
            "invalid_reason": self.invalid_reason,
            "extra": dict(self.extra),
        }


@dataclass(frozen=True)
class Results:
    fingerprint: Mapping[str, Any]
    cells: tuple[Cell, ...]

    def sorted(self) -> Results:
        return Results(self.fingerprint, tuple(sorted(self.cells, key=lambda c: c.key)))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "fingerprint": dict(self.fingerprint),
            "cells": [c.to_json() for c in sorted(self.cells, key=lambda c: c.key)],
        }

    def with_cell(self, cell: Cell) -> Results:
        """A copy with `cell` added or replacing the cell of the same key."""
        kept = tuple(c for c in self.cells if c.key != cell.key)
        return Results(self.fingerprint, (*kept, cell))


def dumps(obj: Any) -> str:
    """The one JSON encoding icount writes: sorted keys, 2-space indent, final newline."""
    return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def results_json(results: Results) -> str:
    return dumps(results.to_json())


def write_atomic(path: Path, text: str, *, overwrite: bool) -> None:
    """Write via a temporary file and rename, so a reader never sees half a file."""
    if path.exists() and not overwrite:
        raise UsageError(f"{path} exists; refusing to overwrite it", hint="pass --force")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():
        raise UsageError(f"{path} is a directory", hint="name a file to write")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def provenance_path(results_path: Path) -> Path:
    return results_path.with_name(results_path.stem + ".provenance.json")


def save(
    path: Path, results: Results, provenance: Mapping[str, Any] | None, *, overwrite: bool
) -> None:
    write_atomic(path, results_json(results), overwrite=overwrite)
    if provenance is not None:
        write_atomic(provenance_path(path), dumps(dict(provenance)), overwrite=True)


def next_free_path(directory: Path, stem: str) -> Path:
    """icount-results/run-001.json, -002, ...: a default that never overwrites."""
    for i in range(1, 100000):
        candidate = directory / f"{stem}-{i:03d}.json"
        if not candidate.exists():
            return candidate
    raise UsageError(f"too many result files in {directory}", hint="pass --output")


# ---------------------------------------------------------------- loading


def load(path: Path) -> Results:
    src = str(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise ResultsFileError("no such file", source=src) from None
    except OSError as e:
        raise ResultsFileError(f"cannot read: {e.strerror}", source=src) from None
    if path.is_dir():
        raise ResultsFileError("is a directory, not a results file", source=src)
    if size > MAX_RESULTS_BYTES:
        raise ResultsFileError(f"{size} bytes is too large for a results file", source=src)
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise ResultsFileError("not UTF-8 text; not an icount results file", source=src) from None
    except json.JSONDecodeError as e:
        raise ResultsFileError(
            f"not valid JSON (line {e.lineno} column {e.colno}: {e.msg}); truncated or corrupt?",
            source=src,
        ) from None
    except ValueError as e:  # NaN or Infinity, which icount never writes
        raise ResultsFileError(f"not a valid results file: {e}", source=src) from None
    return from_json(doc, src)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number icount writes")


def from_json(doc: Any, src: str) -> Results:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ResultsFileError(f'not an icount results file (no "format": "{FORMAT}")', source=src)
    version = doc.get("version")
    if version != VERSION:
        raise ResultsFileError(
            f"results format version {version!r}; this icount reads version {VERSION}", source=src
        )
    try:
        fingerprint = _obj(doc["fingerprint"], "fingerprint")
        cells = tuple(_cell(c) for c in _list(doc["cells"], "cells"))
    except (KeyError, TypeError, ValueError) as e:
        raise ResultsFileError(f"malformed results file: {_describe(e)}", source=src) from None
    seen: set[tuple[str, str, str]] = set()
    for cell in cells:
        if cell.key in seen:
            raise ResultsFileError(f"cell {cell.key_text} appears twice", source=src)
        seen.add(cell.key)
    return Results(fingerprint, cells)


def _describe(e: Exception) -> str:
    if isinstance(e, KeyError):
        return f"missing field {e.args[0]!r}"
    return str(e)


def _obj(v: Any, what: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise TypeError(f"{what} is not an object")
    return v


def _list(v: Any, what: str) -> list[Any]:
    if not isinstance(v, list):
        raise TypeError(f"{what} is not a list")
    return v


def _str(v: Any, what: str) -> str:
    if not isinstance(v, str):
        raise TypeError(f"{what} is not a string")
    return v


def _num(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise TypeError(f"{what} is not a number")
    return float(v) if isinstance(v, float) else v


def _opt_num(v: Any, what: str) -> float | None:
    return None if v is None else _num(v, what)


def _opt_str(v: Any, what: str) -> str | None:
    return None if v is None else _str(v, what)


def _run(doc: Any) -> Run:
    d = _obj(doc, "run")
    valid = d["valid"]
    if not isinstance(valid, bool):
        raise TypeError("run.valid is not a boolean")
    return Run(
        value=_opt_num(d["value"], "run.value"),
        valid=valid,
        reason=_opt_str(d.get("reason"), "run.reason"),
        detail=_obj(d.get("detail", {}), "run.detail"),
    )


def _cell(doc: Any) -> Cell:
    d = _obj(doc, "cell")
    runs_wanted = d["runs_wanted"]
    if not isinstance(runs_wanted, int) or runs_wanted < 1:
        raise ValueError("cell.runs_wanted must be a positive integer")
    cell = Cell(
        name=_str(d["name"], "cell.name"),
        path=_str(d["path"], "cell.path"),
        backend=_str(d["backend"], "cell.backend"),
        unit=_str(d["unit"], "cell.unit"),
        runs=tuple(_run(r) for r in _list(d["runs"], "cell.runs")),
        params=_obj(d.get("params", {}), "cell.params"),
        runs_wanted=runs_wanted,
        max_spread=_num(d["max_spread"], "cell.max_spread"),
        extra=_obj(d.get("extra", {}), "cell.extra"),
        invalid_reason=_opt_str(d.get("invalid_reason"), "cell.invalid_reason"),
    )
    _check_stored_statistics(cell, d)
    return cell


def _check_stored_statistics(cell: Cell, d: dict[str, Any]) -> None:
    """The statistics stored beside the runs are derived from them: a file where they
    disagree was edited or damaged, and its numbers cannot be trusted."""
    s = cell.summary
    derived: dict[str, Any] = {
        "median": s.median if s else None,
        "min": s.min if s else None,
        "max": s.max if s else None,
        "valid": cell.valid,
    }
    for key, want in derived.items():
        if key in d and d[key] != want:
            raise ValueError(
                f"cell {cell.key_text}: stored {key} {d[key]!r} disagrees with its runs"
            )


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
