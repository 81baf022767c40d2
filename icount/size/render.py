"""Breakdowns to text: terminal table, Markdown, CSV and versioned JSON.

Pure functions of the breakdowns: no clock, no environment, so equal inputs print
byte-identical output. Tables show sizes in human units with percentages; CSV and
JSON carry the exact byte counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from icount.numfmt import human_bytes, share, signed_percent
from icount.size.model import Breakdown, Row
from icount.size.report import is_unchanged, short_names, shown_labels
from icount.tables import Column, Table, render_csv
from icount.terminal import Group

FORMAT_NAME = "icount-size"
# version 1: first format (images with rows; diff with old/new rows)
# version 2: a diff's rows say their "change"; rows equal on both sides are one
# `[N unchanged]` row unless --all; an image of a view of symbols says where they came
# from ("symbols") and whether the file is "stripped"
FORMAT_VERSION = 2

TOTAL = "TOTAL"
GZIP_ROW = "gzip -9 of the whole file"


def _label_title(by: str) -> str:
    from icount.size.views import VIEWS, View

    return VIEWS[View(by)].title if by in View.__members__ else "Part"


def _title(b: Breakdown, name: str) -> str:
    """`NAME: ELF64 executable, x86_64`, and `, stripped` (or `, no symbols`) in a view
    of symbols of a file without its full symbol table."""
    said = f", {b.symbols.split(':')[0]}" if b.stripped else ""
    return f"{name}: {b.fmt} {b.kind}, {b.arch}{said}"


def table(items: Sequence[Breakdown], by: str, top: int = 0) -> Table:
    """One breakdown: label, file, file %, VM, VM %. Several: a file and VM column each."""
    names = short_names(items)
    label_col = Column(_label_title(by), "left")
    if len(items) == 1:
        b = items[0]
        t = Table(
            [label_col, Column("File size"), Column("File %"), Column("VM size"), Column("VM %")],
            title=_title(b, names[0]),
            groups=[Group("", 2), Group("", 2)],
        )
        for r in b.rows:
            t.add_row(
                [
                    r.label,
                    human_bytes(r.file),
                    share(r.file, b.file_total),
                    human_bytes(r.vm),
                    share(r.vm, b.vm_total),
                ]
            )
        t.add_row(
            [
                TOTAL,
                human_bytes(b.file_total),
                share(b.file_total, b.file_total),
                human_bytes(b.vm_total),
                share(b.vm_total, b.vm_total),
            ]
        )
        if b.gzip_bytes is not None:
            t.add_row(
                [GZIP_ROW, human_bytes(b.gzip_bytes), share(b.gzip_bytes, b.file_total), "", ""]
            )
        t.notes += [f"{b.file_total} bytes in the file, {b.vm_total} bytes of VM", *b.notes]
        return t

    columns = [label_col]
    for n in names:
        columns += [Column(f"{n} file"), Column(f"{n} VM")]
    heading = [_title(b, n) for b, n in zip(items, names, strict=True)]
    t = Table(
        columns, title="\n".join(heading), groups=[Group(n, 2) for n in names], heading=heading
    )
    cells = [{r.label: r for r in b.rows} for b in items]
    shown, hidden = shown_labels(items, top)
    for lb in shown:
        row = [lb]
        for c in cells:
            cell = c.get(lb)
            row += [human_bytes(cell.file), human_bytes(cell.vm)] if cell else ["-", "-"]
        t.add_row(row)
    if hidden:
        row = [f"[{len(hidden)} others]"]
        for c in cells:
            rs = [c[lb] for lb in hidden if lb in c]
            row += [human_bytes(sum(r.file for r in rs)), human_bytes(sum(r.vm for r in rs))]
        t.add_row(row)
    t.add_row(
        [TOTAL] + [x for b in items for x in (human_bytes(b.file_total), human_bytes(b.vm_total))]
    )
    if any(b.gzip_bytes is not None for b in items):
        t.add_row([GZIP_ROW] + [x for b in items for x in (human_bytes(b.gzip_bytes or 0), "")])
    for b, n in zip(items, names, strict=True):
        t.notes += [f"{n}: {note}" for note in b.notes]
    return t


def to_json(items: Sequence[Breakdown], by: str) -> str:
    import json

    doc: dict[str, Any] = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "view": by,
        "images": [_image_json(b) for b in items],
    }
    return json.dumps(doc, sort_keys=True, indent=2) + "\n"


def _image_json(b: Breakdown) -> dict[str, Any]:
    out: dict[str, Any] = {
        "file": b.path,
        "arch": b.arch,
        "format": b.fmt,
        "kind": b.kind,
        "file_bytes": b.file_total,
        "vm_bytes": b.vm_total,
        "rows": [{"label": r.label, "file_bytes": r.file, "vm_bytes": r.vm} for r in b.rows],
        "notes": b.notes,
    }
    if b.gzip_bytes is not None:
        out["gzip_bytes"] = b.gzip_bytes
    if b.symbols:
        out["symbols"] = b.symbols
        out["stripped"] = b.stripped
    return out


def to_csv(items: Sequence[Breakdown], by: str) -> str:
    rows: list[list[object]] = []
    for b in items:
        rows += [[b.path, b.arch, by, r.label, r.file, r.vm, b.symbols] for r in b.rows]
        if b.gzip_bytes is not None:
            rows.append([b.path, b.arch, by, GZIP_ROW, b.gzip_bytes, "", b.symbols])
    header = ["file", "arch", "view", "label", "file_bytes", "vm_bytes", "symbols"]
    return render_csv(header, rows)


class DiffRow(NamedTuple):
    label: str
    old_file: int
    new_file: int
    old_vm: int
    new_vm: int

    @property
    def d_file(self) -> int:
        return self.new_file - self.old_file

    @property
    def d_vm(self) -> int:
        return self.new_vm - self.old_vm

    @property
    def change(self) -> str:
        """One of: new (no bytes in OLD), deleted (none in NEW), changed, unchanged."""
        if self.d_file == 0 and self.d_vm == 0:
            return "unchanged"
        if self.old_file == self.old_vm == 0:
            return "new"
        if self.new_file == self.new_vm == 0:
            return "deleted"
        return "changed"


MARKS = {"new": "[NEW]", "deleted": "[DEL]"}


def diff_rows(old: Breakdown, new: Breakdown) -> list[DiffRow]:
    """Rows of both, matched by label, the largest change (file or VM, absolute) first,
    ties by label; an `[N unchanged]` row last."""
    a = {r.label: r for r in old.rows}
    b = {r.label: r for r in new.rows}
    zero = Row("", 0, 0)
    out = [
        DiffRow(
            lb, a.get(lb, zero).file, b.get(lb, zero).file, a.get(lb, zero).vm, b.get(lb, zero).vm
        )
        for lb in set(a) | set(b)
    ]
    return sorted(
        out, key=lambda d: (is_unchanged(d.label), -max(abs(d.d_file), abs(d.d_vm)), d.label)
    )


def _signed(n: int) -> str:
    return ("+" if n > 0 else "") + human_bytes(n)


def _change(old: int, new: int) -> str:
    if old == 0:
        return "new" if new else "0.00%"
    return signed_percent((new - old) / old)


def diff_table(old: Breakdown, new: Breakdown, by: str, top: int = 0) -> Table:
    on, nn = short_names([old, new])
    t = Table(
        [
            Column(_label_title(by), "left"),
            Column("Old file"),
            Column("New file"),
            Column("Δ file"),
            Column("Δ %"),
            Column("Old VM"),
            Column("New VM"),
            Column("Δ VM"),
        ],
        title=f"{_title(old, on)} -> {_title(new, nn)}",
        groups=[Group("", 4), Group("", 3)],
    )
    rows = diff_rows(old, new)
    same = [d for d in rows if is_unchanged(d.label)]
    rows = [d for d in rows if not is_unchanged(d.label)]
    shown = rows if top <= 0 or len(rows) <= top + 1 else rows[:top]
    hidden = rows[len(shown) :]
    if hidden:
        shown = [
            *shown,
            DiffRow(
                f"[{len(hidden)} others]",
                sum(d.old_file for d in hidden),
                sum(d.new_file for d in hidden),
                sum(d.old_vm for d in hidden),
                sum(d.new_vm for d in hidden),
            ),
        ]
    total = DiffRow(TOTAL, old.file_total, new.file_total, old.vm_total, new.vm_total)
    for d in [*shown, *same, total]:
        t.add_row(
            [
                d.label,
                human_bytes(d.old_file),
                human_bytes(d.new_file),
                _signed(d.d_file),
                MARKS.get(d.change) or _change(d.old_file, d.new_file),
                human_bytes(d.old_vm),
                human_bytes(d.new_vm),
                _signed(d.d_vm),
            ]
        )
    if old.gzip_bytes is not None and new.gzip_bytes is not None:
        g = DiffRow(GZIP_ROW, old.gzip_bytes, new.gzip_bytes, 0, 0)
        t.add_row(
            [
                g.label,
                human_bytes(g.old_file),
                human_bytes(g.new_file),
                _signed(g.d_file),
                _change(g.old_file, g.new_file),
                "",
                "",
                "",
            ]
        )
    t.notes += [
        f"{d.label}: the rows of equal file and VM size in both, summed (--all lists them)"
        for d in same
    ]
    return t


def diff_json(pairs: Sequence[tuple[Breakdown, Breakdown]], by: str) -> str:
    import json

    doc: dict[str, Any] = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "view": by,
        "diff": [
            {
                "old": _image_json(o) | {"rows": None},
                "new": _image_json(n) | {"rows": None},
                "rows": [
                    {
                        "label": d.label,
                        "change": d.change,
                        "old_file_bytes": d.old_file,
                        "new_file_bytes": d.new_file,
                        "old_vm_bytes": d.old_vm,
                        "new_vm_bytes": d.new_vm,
                    }
                    for d in diff_rows(o, n)
                ],
            }
            for o, n in pairs
        ],
    }
    for entry in doc["diff"]:
        del entry["old"]["rows"], entry["new"]["rows"]
    return json.dumps(doc, sort_keys=True, indent=2) + "\n"


def diff_csv(pairs: Sequence[tuple[Breakdown, Breakdown]], by: str) -> str:
    rows: list[list[object]] = []
    for o, n in pairs:
        rows += [
            [
                o.path,
                n.path,
                n.arch,
                by,
                d.label,
                d.old_file,
                d.new_file,
                d.d_file,
                d.old_vm,
                d.new_vm,
                d.d_vm,
                d.change,
            ]
            for d in diff_rows(o, n)
        ]
    header = [
        "old",
        "new",
        "arch",
        "view",
        "label",
        "old_file_bytes",
        "new_file_bytes",
        "delta_file_bytes",
        "old_vm_bytes",
        "new_vm_bytes",
        "delta_vm_bytes",
        "change",
    ]
    return render_csv(header, rows)
