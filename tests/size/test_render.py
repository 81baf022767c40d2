"""Renderers against golden files (set ICOUNT_UPDATE_GOLDEN=1 to rewrite them, then review)."""

from __future__ import annotations

from pathlib import Path

import pytest

from icount.size import render, report
from icount.size.model import Breakdown, Row
from icount.tables import Table, render_markdown, render_terminal
from tests.support.golden import assert_golden


def render_table(t: Table, fmt: str, width: int) -> str:
    """What `icount size` prints for the table in this format at this width."""
    return render_terminal(t, width) if fmt == "table" else render_markdown(t)


GOLDEN = Path(__file__).parent / "golden"


def _b(path: str, arch: str, rows: list[tuple[str, int, int]], fat: bool = False) -> Breakdown:
    rs = [Row(label, f, v) for label, f, v in rows]
    return Breakdown(
        path, arch, "ELF64", "executable", sum(r.file for r in rs), rs, ["a note"], fat=fat
    )


OLD = _b(
    "build/old/server",
    "x86_64",
    [
        (".text", 120_000, 120_000),
        (".rodata", 30_000, 30_000),
        (".bss", 0, 4096),
        ("[padding]", 1_234, 0),
    ],
)
NEW = _b(
    "build/new/server",
    "x86_64",
    [
        (".text", 150_500, 150_500),
        (".data", 2_048, 2_048),
        (".bss", 0, 8192),
        ("[padding]", 1_000, 0),
    ],
)
FAT = _b("app", "arm64", [("__TEXT,__text", 4_000, 4_000), ("__PAGEZERO", 0, 1 << 32)], fat=True)


def check(name: str, text: str) -> None:
    assert_golden(GOLDEN / name, text)


@pytest.mark.parametrize("fmt", ["table", "md"])
def test_single(fmt: str) -> None:
    b = _b(OLD.path, OLD.arch, [(r.label, r.file, r.vm) for r in OLD.rows])
    b.gzip_bytes = 60_000
    check(f"single.{fmt}", render_table(render.table([b], "sections"), fmt, 100))


@pytest.mark.parametrize("fmt", ["table", "md"])
def test_side_by_side(fmt: str) -> None:
    check(f"multi.{fmt}", render_table(render.table([OLD, NEW, FAT], "sections", top=3), fmt, 140))


# what `icount size --diff` renders: two rows equal on both sides summed into one
SAME = [(".dynsym", 500, 500), (".comment", 40, 0)]
PAIR = report.changed_only(
    _b(OLD.path, OLD.arch, [(r.label, r.file, r.vm) for r in OLD.rows] + SAME),
    _b(NEW.path, NEW.arch, [(r.label, r.file, r.vm) for r in NEW.rows] + SAME),
)


@pytest.mark.parametrize("fmt", ["table", "md"])
def test_diff(fmt: str) -> None:
    check(f"diff.{fmt}", render_table(render.diff_table(*PAIR, "sections"), fmt, 120))


def test_json_and_csv() -> None:
    check("multi.json", render.to_json([OLD, FAT], "symbols"))
    check("multi.csv", render.to_csv([OLD, FAT], "symbols"))
    check("diff.json", render.diff_json([PAIR], "sections"))
    check("diff.csv", render.diff_csv([PAIR], "sections"))


def test_diff_order_is_by_absolute_change_then_label() -> None:
    rows = render.diff_rows(*PAIR)
    assert [d.label for d in rows] == [
        ".text", ".rodata", ".bss", ".data", "[padding]", "[2 unchanged]"
    ]  # fmt: skip
    # .bss changed by 4,096 bytes of VM and none of file: more than .data's 2,048 of both
    assert [d.change for d in rows] == ["changed", "deleted", "changed", "new", "changed",
                                        "unchanged"]  # fmt: skip


def test_unchanged_rows_are_one_row_and_totals_stay_exact() -> None:
    old, new = PAIR
    assert old.rows[-1] == Row("[2 unchanged]", 540, 500) == new.rows[-1]
    assert old.file_total == OLD.file_total + 540 and new.vm_total == NEW.vm_total + 500
    assert report.changed_only(OLD, OLD)[0].rows == [Row("[4 unchanged]", 151_234, 154_096)]
    assert report.changed_only(OLD, NEW) == (OLD, NEW)  # nothing equal: untouched


def test_diff_marks_new_and_deleted_rows() -> None:
    lines = render_terminal(render.diff_table(*PAIR, "sections", top=3), 120).splitlines()
    row = {line.split("  ")[0]: line for line in lines if line.startswith((".", "["))}
    assert "[DEL]" in row[".rodata"] and "[NEW]" not in row[".rodata"]
    assert "[2 others]" in row and "[2 unchanged]" in row  # --top does not sum it away
    assert lines[-1].startswith("[2 unchanged]: the rows of equal")


def test_pie_and_compressed_sections_golden() -> None:
    """Issue 16: a PIE is named as readelf names it, and a compressed section says so,
    with its uncompressed size in a note (the figures of Go's hello world)."""
    from icount.size import views
    from icount.size.model import Image, Region

    image = Image(
        "hello_go",
        "x86_64",
        "ELF64",
        "position-independent executable",
        4096 + 217_253 + 115_134,
        4096,
        sections=[
            Region(".text", 0, 4096, 4096, executable=True, sym_addr=0, sym_size=4096),
            Region(".debug_info", 4096, 217_253, 0, sym_addr=0, compressed=("zlib", 523_952)),
            Region(".debug_line", 221_349, 115_134, 0, sym_addr=0, compressed=("zlib", 202_513)),
        ],
    )
    b = views.by_sections(image)
    check("compressed.table", render_table(render.table([b], "sections"), "table", 100))


HOSTILE = ["[x](https://example.com)", "<img src=x>", "a|b", "__init__", "`code`"]


@pytest.mark.parametrize("diff", [False, True])
def test_markdown_escapes_names_from_the_file(diff: bool) -> None:
    """A symbol or section name is the file's, not icount's: in Markdown it reads as
    written and renders as nothing else (no link, no HTML, no emphasis, no table cell
    split), as the results tables' names do."""
    from icount import export
    from icount.export import documents as d
    from icount.text import md_plain

    rows = [(name, 100 + i, 100 + i) for i, name in enumerate(HOSTILE)]
    old = _b("build/old/[srv](x)", "x86_64", rows)
    new = _b("build/new/[srv](x)", "x86_64", [(n, f + 1, v + 1) for n, f, v in rows])
    doc: d.Document = (
        d.SizeDiffDoc([(old, new)], "sections") if diff else d.SizeDoc([old], [old], "sections")
    )
    text = export.render(doc, "md")
    cells = [line.split(" | ")[0].removeprefix("| ") for line in text.splitlines()]
    for name in HOSTILE:
        escaped = [c for c in cells if md_plain(c.replace("\\|", "|")) == name]
        assert escaped, f"{name!r} not found as one escaped cell in:\n{text}"
        assert escaped[0] != name
    assert "[x](https://example.com)" not in text
    assert "<img" not in text.replace("\\<img", "")
