"""The JSON document of `icount size --format json` read into what the charts draw, by
its documented keys only (others are ignored, so fields added later do not break the
report). Pure: a parsed document in, objects out; a document that lacks what the charts
need raises ParseError naming the file. A comparison's document is compare/drawn.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from icount.doc_reader import Reader
from icount.labels import distinct_suffixes

SIZE_FORMAT = "icount-size"


@dataclass(frozen=True)
class SizeRow:
    label: str
    file_bytes: int
    vm_bytes: int


@dataclass(frozen=True)
class SizeImage:
    name: str  # the file's base name, with the architecture for fat slices and diffs
    arch: str
    fmt: str
    kind: str
    file_bytes: int
    vm_bytes: int
    rows: tuple[SizeRow, ...]


@dataclass(frozen=True)
class DrawnSizes:
    """Size breakdowns as the charts draw them: from a size JSON document (below) or from
    breakdowns (charts/models.py). Not export/documents.SizeDoc, which is what `icount
    size` hands to an output format."""

    view: str  # sections, segments, symbols (or a view added later)
    images: tuple[SizeImage, ...]
    diff: bool  # images come in (old, new) pairs


def _image(r: Reader, d: Mapping[str, Any], what: str, rows: tuple[SizeRow, ...]) -> SizeImage:
    return SizeImage(
        name=r.text(d, "file", what),  # the path: named apart from the others by _by_path
        arch=r.text(d, "arch", what, ""),
        fmt=r.text(d, "format", what, ""),
        kind=r.text(d, "kind", what, ""),
        file_bytes=r.count(d, "file_bytes", what),
        vm_bytes=r.count(d, "vm_bytes", what),
        rows=rows,
    )


def _rows(r: Reader, raw: list[Any], what: str, prefix: str = "") -> tuple[SizeRow, ...]:
    out = []
    for k, row in enumerate(raw, 1):
        rw = r.obj(row, f"{what} row {k}")
        out.append(
            SizeRow(
                r.text(rw, "label", f"{what} row {k}"),
                r.count(rw, f"{prefix}file_bytes", f"{what} row {k}"),
                r.count(rw, f"{prefix}vm_bytes", f"{what} row {k}"),
            )
        )
    return tuple(out)


def sizes_from_json(doc: Any, src: str) -> DrawnSizes:
    r = Reader(src)
    d = r.obj(doc, "the document")
    if d.get("format") != SIZE_FORMAT:
        raise r.fail(f'not an icount size document (no "format": "{SIZE_FORMAT}")')
    view = r.text(d, "view", "the size document")
    images: list[SizeImage] = []
    if "diff" in d:
        sides: list[SizeImage] = []
        for i, raw in enumerate(r.items(d, "diff", "the size diff"), 1):
            e = r.obj(raw, f"diff {i}")
            rows = r.items(e, "rows", f"diff {i}")
            for side in ("old", "new"):
                what = f"diff {i} {side}"
                sides.append(
                    _image(r, r.obj(e.get(side), what), what, _rows(r, rows, what, f"{side}_"))
                )
        sides = _by_path(sides)
        for k in range(0, len(sides), 2):
            images += diff_pair(sides[k], sides[k + 1])
        return DrawnSizes(view, tuple(images), True)
    for i, raw in enumerate(r.items(d, "images", "the size document"), 1):
        what = f"image {i}"
        img = r.obj(raw, what)
        images.append(_image(r, img, what, _rows(r, r.items(img, "rows", what), what)))
    return DrawnSizes(view, tuple(distinct_names(_by_path(images))), False)


def _by_path(images: list[SizeImage]) -> list[SizeImage]:
    """Images named by the shortest part of their paths that tells them apart."""
    names = distinct_suffixes([i.name for i in images])
    return [_renamed(i, n) for i, n in zip(images, names, strict=True)]


def distinct_names(images: list[SizeImage]) -> list[SizeImage]:
    """Fat slices share a file name: add the architecture where names repeat."""
    names = [i.name for i in images]
    return [_renamed(i, f"{i.name} [{i.arch}]") if names.count(i.name) > 1 else i for i in images]


def diff_pair(old: SizeImage, new: SizeImage) -> list[SizeImage]:
    """The two sides of a diff, named apart where their file names are one
    (old/server, new/server: 'old server', 'new server')."""
    if old.name != new.name:
        return [old, new]
    return [_renamed(old, f"old {old.name}"), _renamed(new, f"new {new.name}")]


def _renamed(img: SizeImage, name: str) -> SizeImage:
    return SizeImage(name, img.arch, img.fmt, img.kind, img.file_bytes, img.vm_bytes, img.rows)
