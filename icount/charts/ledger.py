"""The ledger (`icount compare --ledger`) as a page of the report: one row per change
tried, kept or rejected, with its geometric mean and the cells that moved.

The ledger is a Markdown file icount appends to and people may edit; compare/ledger.py
writes its entries and reads them back (parse), leniently. Its own module, so the page
only dispatches to it (page.py). Pure: one file gives one page.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from icount.charts import svg
from icount.compare.ledger import MAX_LEDGER_BYTES, Entry, parse
from icount.errors import ParseError


@dataclass(frozen=True)
class LedgerInput:
    name: str  # the ledger file, as given
    entries: tuple[Entry, ...]


def load(path: Path, name: str) -> LedgerInput:
    from icount.results.files import read_bounded

    try:  # a FIFO or a device is refused before it is read: it would never end
        data = read_bounded(path, MAX_LEDGER_BYTES, ParseError, "a ledger")
    except ParseError as err:
        what = str(err).removeprefix(f"{err.source}: ") if err.source else str(err)
        raise ParseError(what, source=name) from None
    text = data.decode("utf-8", errors="replace")
    entries = parse(text)
    if not entries:
        raise ParseError("no entry (## DATE · DECISION · NOTE): not a ledger", source=name)
    return LedgerInput(name, entries)


def ledger_section(item: LedgerInput, sid: str) -> str:
    e = svg.esc
    kept = sum(1 for x in item.entries if x.decision == "kept")
    titles = ("date", "decision", "change", "geometric mean", "cells that moved")
    left = ' class="l"'
    head = "".join(f"<th{left if k < 3 else ''}>{h}</th>" for k, h in enumerate(titles))
    rows = "".join(
        f'<tr><td class="l">{e(x.date)}</td><td class="l">{e(x.decision)}</td>'
        f'<td class="l">{e(x.note)}</td><td>{e(x.geomean)}</td>'
        f"<td>{'<br/>'.join(e(m) for m in x.moved) or '-'}</td></tr>"
        for x in item.entries
    )
    return (
        f'<h2 id="{sid}">Ledger: {e(item.name)}</h2>'
        f"<p>{len(item.entries)} changes tried, {kept} kept, "
        f"{len(item.entries) - kept} rejected.</p>"
        f'<div class="scroll"><table><tr>{head}</tr>{rows}</table></div>'
    )
