"""Output formats as one registry: `--format` of every command checks it, and the
help texts read it.

Each format is a module of this package with one function, `render(doc, width)`,
for the documents (icount.export.documents) it supports. Importing the registry
imports no format: a command loads the one it prints.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, NamedTuple

from icount.errors import UsageError
from icount.export.documents import (
    ComparisonDoc,
    Document,
    InlineDoc,
    Kind,
    ResultsDoc,
    SizeDiffDoc,
    SizeDoc,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from icount.compare.model import Comparison
    from icount.results import Results
    from icount.results_table import ExtraColumn

__all__ = [
    "FORMATS",
    "ComparisonDoc",
    "Document",
    "Format",
    "InlineDoc",
    "Kind",
    "ResultsDoc",
    "SizeDiffDoc",
    "SizeDoc",
    "check",
    "help_text",
    "names",
    "render",
]

_TABLES = frozenset(Kind)
_DATA = frozenset({Kind.RESULTS, Kind.COMPARISON, Kind.SIZE, Kind.SIZE_DIFF})


class Format(NamedTuple):
    name: str
    module: str  # icount.export.<module> renders it
    kinds: frozenset[Kind]  # the documents it supports


# In the order help texts list them.
FORMATS = (
    Format("table", "table", _TABLES),
    Format("md", "md", _TABLES),
    Format("csv", "csv", _DATA),
    Format("json", "json", _TABLES),
    Format("benchmark-json", "benchmark", frozenset({Kind.COMPARISON})),
    Format("bmf", "bmf", frozenset({Kind.RESULTS, Kind.COMPARISON})),
    Format("junit", "junit", frozenset({Kind.COMPARISON})),
    Format("svg", "svg", _DATA),
)
_BY_NAME = {f.name: f for f in FORMATS}


def names(kind: Kind) -> tuple[str, ...]:
    """The formats a kind of document can be printed in."""
    return tuple(f.name for f in FORMATS if kind in f.kinds)


def help_text(kind: Kind) -> str:
    """'table, md, csv, json or svg.': what --format --help says."""
    *most, last = names(kind)
    return f"{', '.join(most)} or {last}."


def check(fmt: str, kind: Kind) -> str:
    """`fmt` when it prints this kind of document; else a UsageError naming the
    formats that do."""
    allowed = names(kind)
    if fmt in allowed:
        return fmt
    hint = f"use --format {'|'.join(allowed)}"
    if fmt in _BY_NAME:
        raise UsageError(f"--format {fmt} does not print {kind.value}", hint=hint)
    raise UsageError(f"unknown format {fmt!r}", hint=hint)


def render(doc: Document, fmt: str, width: int = 120) -> str:
    """`doc` in format `fmt` (checked: ValueError for one it does not support);
    `width` is for the terminal table."""
    spec = _BY_NAME.get(fmt)
    if spec is None or doc.kind not in spec.kinds:
        raise ValueError(f"format {fmt!r} does not print {doc.kind.value}")
    module = importlib.import_module(f"icount.export.{spec.module}")
    text: str = module.render(doc, width)
    return text


def render_results(
    results: Results,
    fmt: str,
    width: int = 120,
    extra: Sequence[ExtraColumn] = (),
    sort: str = "order",
) -> str:
    """Results in `fmt`: rows as given (sort "order") or by name; JSON keeps the
    file's order."""
    from icount.sorting import Sort

    return render(ResultsDoc(results, Sort(sort), extra), fmt, width)


def render_comparison(comparison: Comparison, fmt: str, width: int = 120) -> str:
    return render(ComparisonDoc(comparison), fmt, width)
