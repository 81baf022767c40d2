"""Renderers against golden files (set ICOUNT_UPDATE_GOLDEN=1 to rewrite them, then review)."""

from __future__ import annotations

from pathlib import Path

import pytest

from icount.size import render
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


@pytest.mark.parametrize("fmt", ["table", "md"])
def test_diff(fmt: str) -> None:
    check(f"diff.{fmt}", render_table(render.diff_table(OLD, NEW, "sections"), fmt, 120))


def test_json_and_csv() -> None:
    check("multi.json", render.to_json([OLD, FAT], "symbols"))
    check("multi.csv", render.to_csv([OLD, FAT], "symbols"))
    check("diff.json", render.diff_json([(OLD, NEW)], "sections"))
    check("diff.csv", render.diff_csv([(OLD, NEW)], "sections"))


def test_diff_order_is_by_absolute_change() -> None:
    rows = render.diff_rows(OLD, NEW)
    changes = [abs(d.d_file) for d in rows]
    assert changes == sorted(changes, reverse=True)
    assert rows[0].label == ".text" and rows[-1].label == ".bss"  # .bss: VM only


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
