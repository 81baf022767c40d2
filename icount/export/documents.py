"""The documents icount prints, typed: what each output format renders.

A command builds one document and hands it to a format (icount.export); the
format's module knows how each kind of document looks in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from icount.sorting import Sort

if TYPE_CHECKING:
    from icount.compare.model import Comparison
    from icount.results import Results
    from icount.results_table import ExtraColumn
    from icount.size.model import Breakdown


class Kind(StrEnum):
    """What a document holds, as the refusal of a format names it."""

    RESULTS = "results"
    COMPARISON = "a comparison"
    SIZE = "sizes"
    SIZE_DIFF = "a size diff"
    INLINE = "an inline report"


@dataclass(frozen=True)
class ResultsDoc:
    """`icount run`, `serve` and `table`: cells of one or more results files."""

    results: Results
    sort: Sort = Sort.ORDER
    extra: Sequence[ExtraColumn] = ()
    kind = Kind.RESULTS


@dataclass(frozen=True)
class ComparisonDoc:
    """`icount compare`: its rows already in the order asked for."""

    comparison: Comparison
    kind = Kind.COMPARISON


@dataclass(frozen=True)
class SizeDoc:
    """`icount size`: `items` every breakdown with all its rows (the table ranks them
    itself), `chosen` the same with --top applied alike (what CSV and JSON carry)."""

    items: Sequence[Breakdown]
    chosen: Sequence[Breakdown]
    view: str
    limit: int = 0
    kind = Kind.SIZE


@dataclass(frozen=True)
class SizeDiffDoc:
    """`icount size --diff OLD NEW`: one pair per architecture both hold."""

    pairs: Sequence[tuple[Breakdown, Breakdown]]
    view: str
    limit: int = 0
    kind = Kind.SIZE_DIFF


@dataclass(frozen=True)
class InlineDoc:
    """`icount inline`: the report dict of icount.inline.report."""

    report: dict[str, Any] = field(default_factory=dict)
    kind = Kind.INLINE


Document = ResultsDoc | ComparisonDoc | SizeDoc | SizeDiffDoc | InlineDoc
