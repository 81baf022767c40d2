"""The ledger (`icount compare BASE NEW --ledger FILE.md --note TEXT [--rejected]`): one
Markdown entry per optimisation tried, kept or rejected.

A page that keeps such a ledger lists every optimisation with before -> after, the
rejected ones included, and sums a change up as the geometric mean over many cells: the
record of what was tried is worth as much as the record of what was kept. An entry
names the date (UTC; $SOURCE_DATE_EPOCH when set, for reproducible files), the commits
each side measured (from the provenance beside its files), the note, the decision, the
geometric mean over all cells and each cell that moved (regressed or improved) with its
medians before and after.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from icount import numfmt
from icount.compare import geomean
from icount.compare.model import Comparison, Verdict
from icount.errors import UsageError
from icount.text import printable

HEADER = "# icount ledger\n\nOne entry per change measured with `icount compare --ledger`.\n"
MOVED = (Verdict.REGRESSED, Verdict.IMPROVED)


@dataclass(frozen=True)
class Side:
    src: str  # as given: a results file or a folder of shard files
    commits: tuple[str, ...]  # those its files recorded; () when none did


def today() -> str:
    """The entry's date: $SOURCE_DATE_EPOCH's, where set (a reproducible build's), else
    now, in UTC."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is not None:
        if not epoch.strip().isdigit():
            raise UsageError(f"SOURCE_DATE_EPOCH={epoch!r} is not a number of seconds")
        return datetime.fromtimestamp(int(epoch), UTC).strftime("%Y-%m-%d")
    return datetime.now(UTC).strftime("%Y-%m-%d")


def side(src: str, files: Sequence[str]) -> Side:
    from icount.results.stamps import recorded

    commits = sorted({c for c in (recorded(f)[0] for f in files) if c is not None})
    return Side(src, tuple(commits))


def _commits(s: Side) -> str:
    if not s.commits:
        return f"`{printable(s.src)}` (no commit recorded)"
    return f"`{printable(s.src)}` at " + ", ".join(f"`{c[:12]}`" for c in s.commits)


def entry(c: Comparison, base: Side, new: Side, note: str, rejected: bool, date: str) -> str:
    """One entry, a Markdown section, ending in a blank line."""
    decision = "rejected" if rejected else "kept"
    lines = [
        f"## {date} · {decision} · {printable(note)}",
        "",
        f"- base: {_commits(base)}",
        f"- new: {_commits(new)}",
    ]
    g = geomean.of(c)
    lines.append(
        f"- geometric mean of new/base over {numfmt.plural(g.cells, 'cell')}: "
        f"{g.ratio:.4f} ({numfmt.signed_percent(g.change)})"
        if g is not None
        else "- geometric mean: no cell has both sides valid"
    )
    moved = [r for r in c.rows if r.verdict in MOVED and r.base and r.new]
    if not moved:
        lines.append("- no cell moved beyond its threshold")
    else:
        lines.append(f"- moved ({numfmt.plural(len(moved), 'cell')}):")
        for r in moved:
            assert r.base is not None and r.new is not None
            change = numfmt.signed_percent(r.delta_pct) if r.delta_pct is not None else ""
            lines.append(
                f"  - `{printable(r.label)}`: {numfmt.plain(r.base.median)} → "
                f"{numfmt.plain(r.new.median)} ({change}, {r.verdict.value})"
            )
    return "\n".join(lines) + "\n\n"


def append(path: Path, text: str) -> None:
    """Append the entry, the ledger's heading first when the file is new or empty."""
    from icount.results.files import append_text

    fresh = not path.exists() or path.stat().st_size == 0
    append_text(path, (HEADER + "\n" if fresh else "") + text)
