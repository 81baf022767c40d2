"""Parsing `perf stat -x SEP` output: whole-run counts and `-I` interval records.

icount asks perf for CSV with a separator that cannot occur in values (commas are
not quoted by perf) and LC_NUMERIC=C. A count that is `<not supported>`, `<not
counted>` or multiplexed (running < 100% of the time) never passes as a number: it
becomes a PerfCount with `problem` set. Pure functions, tested on recorded output.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from icount.errors import ParseError

SEP = ";"
EVENT = "instructions:u"


@dataclass(frozen=True)
class PerfCount:
    event: str
    value: float | None  # None when not counted (instructions are whole numbers)
    running_pct: float | None
    problem: str | None  # None only for a clean, complete count

    @property
    def ok(self) -> bool:
        return self.problem is None and self.value is not None


def _check(event: str, raw: str, pct: float | None) -> PerfCount:
    raw = raw.strip()
    if raw.startswith("<"):
        what = raw.strip("<>")
        return PerfCount(event, None, pct, f"{event} {what} (perf printed {raw})")
    if not re.fullmatch(r"\d+(\.\d+)?", raw):
        raise ValueError(f"counter value {raw!r} is not a number")
    value = float(raw)
    if pct is not None and pct < 100.0:
        return PerfCount(
            event, value, pct, f"{event} was multiplexed (counted {pct:g}% of the time); not exact"
        )
    return PerfCount(event, value, pct, None)


def parse_csv(text: str, source: str, sep: str = SEP) -> list[PerfCount]:
    """Parse `perf stat -x SEP` output (with or without `-o FILE`'s header lines)."""
    counts: list[PerfCount] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(sep)
        if len(fields) < 5:
            raise ParseError(
                f"line {lineno}: expected at least 5 {sep!r}-separated fields, got {len(fields)}",
                source=source,
            )
        value, _unit, event, _runtime, pct_text = fields[:5]
        try:
            pct = float(pct_text) if pct_text.strip() else None
            counts.append(_check(event, value, pct))
        except ValueError as e:
            raise ParseError(f"line {lineno}: {e}", source=source) from None
    if not counts:
        raise ParseError("no counter lines in perf stat output", source=source)
    return counts


def find_event(counts: Sequence[PerfCount], event: str = EVENT) -> PerfCount:
    for c in counts:
        if c.event == event:
            return c
    return PerfCount(event, None, None, f"{event} missing from perf output")


@dataclass(frozen=True)
class IntervalRecord:
    timestamp: str
    count: PerfCount


def parse_intervals(text: str, source: str, event: str) -> list[IntervalRecord]:
    """Interval records of `event` in `perf stat -I -x;` output, in order.

    Lines that are not records (perf's `Events enabled`, a partly written last
    line) are skipped; a record line that does not parse is a ParseError.
    """
    records: list[IntervalRecord] = []
    for line in text.splitlines():
        fields = line.strip().split(SEP)
        if len(fields) < 6 or not _is_timestamp(fields[0]):
            continue
        rest = SEP.join(fields[1:])
        counts = parse_csv(rest, source)
        found = [c for c in counts if c.event == event]
        if found:
            records.append(IntervalRecord(fields[0], found[0]))
    return records


def _is_timestamp(text: str) -> bool:
    whole, dot, frac = text.partition(".")
    return bool(dot) and (whole + frac).isascii() and whole.isdigit() and frac.isdigit()


def window_total(
    records: Sequence[IntervalRecord], enabled: bool = False
) -> tuple[float | None, str | None]:
    """Sum of a window's interval records: (count, None) or (None, the problem).

    perf prints `<not counted>` both for a disabled counter and for an enabled one whose
    task never ran: with `enabled` (the caller enabled it and perf acknowledged), a
    window of such records counted 0 (an idle server); without, nothing says it ran."""
    total = 0.0
    counted = False
    for rec in records:
        c = rec.count
        if c.ok and c.value is not None:
            total += c.value
            counted = True
        elif c.problem and "not counted" in c.problem:
            continue  # enabled but never scheduled in that interval: 0 events
        else:
            return None, c.problem or f"{c.event}: no value"
    if not counted:
        if enabled and records:
            return 0.0, None
        return None, f"{records[0].count.event if records else EVENT} was never counted"
    return total, None
