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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from icount import numfmt
from icount.compare import geomean
from icount.compare.model import Comparison, Verdict
from icount.errors import UsageError
from icount.text import md_code, md_plain, md_text

HEADER = "# icount ledger\n\nOne entry per change measured with `icount compare --ledger`.\n"
MOVED = (Verdict.REGRESSED, Verdict.IMPROVED)
DECISIONS = ("kept", "rejected")
MAX_LEDGER_BYTES = 16 * 1024 * 1024
GEOMEAN = "- geometric mean"


@dataclass(frozen=True)
class Origin:
    """Where one side of the comparison came from (drawn.Side is its figures)."""

    src: str  # as given: a results file or a folder of shard files
    commits: tuple[str, ...]  # those its files recorded; () when none did


@dataclass
class Entry:
    """One entry as a reader sees it: the report's ledger page and the check that
    --ledger names a ledger read entries back through parse."""

    date: str
    decision: str
    note: str
    geomean: str = ""
    moved: list[str] = field(default_factory=list)


def parse(text: str) -> tuple[Entry, ...]:
    """The entries, each field as it reads rendered (entry's escapes and code spans
    undone: text.md_plain). People edit ledgers, so a line of another shape is left out,
    never an error."""
    entries: list[Entry] = []
    for line in text.splitlines():
        if line.startswith("## "):
            parts = [p.strip() for p in line[3:].split(" · ", 2)]
            parts += [""] * (3 - len(parts))
            entries.append(Entry(parts[0], parts[1], md_plain(parts[2])))
        elif entries and line.startswith(GEOMEAN):
            entries[-1].geomean = line.removeprefix("- ").split(": ", 1)[-1]
        elif entries and line.startswith("  - "):
            entries[-1].moved.append(md_plain(line[4:]))
    return tuple(entries)


def today() -> str:
    """The entry's date: $SOURCE_DATE_EPOCH's, where set (a reproducible build's), else
    now, in UTC."""
    from icount.numparse import parse_epoch

    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is not None:  # ASCII digits to year 9999: isdigit() took Arabic-Indic ones
        return datetime.fromtimestamp(parse_epoch(epoch), UTC).strftime("%Y-%m-%d")
    return datetime.now(UTC).strftime("%Y-%m-%d")


def side(src: str, files: Sequence[str]) -> Origin:
    from icount.results.stamps import recorded

    commits = sorted({c for c in (recorded(f)[0] for f in files) if c is not None})
    return Origin(src, tuple(commits))


def _commits(s: Origin) -> str:
    # a commit is whatever the provenance file beside the results says: escaped, so that
    # one holding a newline cannot end the list and forge a `## DATE` entry under it
    if not s.commits:
        return f"{md_code(s.src)} (no commit recorded)"
    return f"{md_code(s.src)} at " + ", ".join(md_code(c[:12]) for c in s.commits)


def entry(c: Comparison, base: Origin, new: Origin, note: str, rejected: bool, date: str) -> str:
    """One entry, a Markdown section, ending in a blank line."""
    decision = "rejected" if rejected else "kept"
    lines = [
        f"## {date} · {decision} · {md_text(note)}",
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
                f"  - {md_code(r.label)}: {numfmt.plain(r.base.median)} → "
                f"{numfmt.plain(r.new.median)} ({change}, {r.verdict.value})"
            )
    return "\n".join(lines) + "\n\n"


def check_path(path: Path, inputs: Sequence[Path], output: Path | None) -> None:
    """Before anything is read or measured: --ledger names a Markdown ledger to append to,
    neither one of the files compared nor --output (each would be rewritten as the other),
    nor a JSON file (a results file with Markdown appended no longer loads), nor a file
    that is not already an icount ledger."""
    import json

    from icount.errors import OutputError, ParseError
    from icount.results import check_writable
    from icount.results.files import read_bounded
    from icount.samefile import same_file

    if any(same_file(path, f) for f in inputs):
        raise UsageError(f"--ledger {path} is one of the files to compare")
    if output is not None and same_file(path, output):
        raise UsageError(f"--ledger {path} is also --output: give each a file of its own")
    if path.suffix.lower() == ".json":
        raise UsageError(f"--ledger {path} names a JSON file; a ledger is Markdown (FILE.md)")
    if path.is_dir():
        raise UsageError(f"--ledger {path} is a directory", hint="give --ledger a file name")
    check_writable(path)
    if not path.is_file() or path.stat().st_size == 0:
        return
    try:
        data = read_bounded(path, MAX_LEDGER_BYTES, ParseError, "a ledger")
    except ParseError as e:
        raise OutputError(f"cannot read --ledger {path}: {e}", path=str(path)) from None
    text = data.decode("utf-8", errors="replace")
    try:
        json.loads(text)
    except ValueError:
        pass
    else:
        raise UsageError(f"--ledger {path} is a JSON file, not a Markdown ledger; refusing to "
                         "append to it")  # fmt: skip
    # its own heading, or an entry icount wrote: a README with a '## ' heading is neither
    ours = text.startswith(HEADER.split("\n", 1)[0] + "\n")
    if not ours and not any(e.decision in DECISIONS for e in parse(text)):
        raise UsageError(
            f"--ledger {path} is not an icount ledger (no '# icount ledger' heading, no "
            "'## DATE · kept|rejected · NOTE' entry); refusing to append to it",
            hint="name a new file or an existing ledger",
        )


def append(path: Path, text: str) -> None:
    """Append the entry, the ledger's heading first when the file is new or empty."""
    from icount.results.files import append_text

    fresh = not path.exists() or path.stat().st_size == 0
    append_text(path, (HEADER + "\n" if fresh else "") + text)
