"""`icount size` end to end: formats, determinism, several files, --diff, --gzip."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

from .conftest import ROOT, Built, tool

pytestmark = pytest.mark.slow


def icount(*args: str, code: int = 0) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "icount", "size", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == code, proc.stderr
    return proc.stdout if code == 0 else proc.stderr


def test_json_is_deterministic_and_sums(built: Built) -> None:
    path = str(built.path("hello_fat"))
    out = icount("--format", "json", "--by", "symbols", path)
    assert out == icount("--format", "json", "--by", "symbols", path)
    doc = json.loads(out)
    assert doc["format"] == "icount-size" and doc["version"] == 2 and doc["view"] == "symbols"
    size = built.path("hello_fat").stat().st_size
    assert [i["arch"] for i in doc["images"]] == ["x86_64", "arm64"]
    for image in doc["images"]:
        assert image["file_bytes"] == size == sum(r["file_bytes"] for r in image["rows"])
        assert image["vm_bytes"] == sum(r["vm_bytes"] for r in image["rows"])
    assert doc["images"][0]["vm_bytes"] != doc["images"][1]["vm_bytes"]


def test_gzip_equals_gzip_9(built: Built) -> None:
    path = built.path("hello_elf")
    gz = subprocess.run(
        [tool("gzip"), "-9", "-n", "-c", str(path)], capture_output=True, check=True
    ).stdout
    doc = json.loads(icount("--gzip", "--format", "json", str(path)))
    assert doc["images"][0]["gzip_bytes"] == len(gz)


def test_side_by_side(built: Built) -> None:
    # The example: hello world in C vs Rust vs Go, plus a Mach-O one, as one table.
    names = [str(built.path(n)) for n in ("hello_elf", "hello_rust", "hello_go", "hello_arm64")]
    md = icount("--format", "md", "--gzip", *names)
    header = next(line for line in md.splitlines() if line.startswith("| Section"))
    assert "hello_elf file" in header and "hello_rust VM" in header and "hello_arm64 file" in header
    assert "hello_go file" in header and "| .gopclntab |" in md
    assert "| TOTAL |" in md and "gzip -9" in md
    rows = list(csv.DictReader(io.StringIO(icount("--format", "csv", *names))))
    for n in names:
        mine = [r for r in rows if r["file"] == n]
        assert sum(int(r["file_bytes"]) for r in mine) == (ROOT / n).stat().st_size


def test_symbols_top(built: Built) -> None:
    out = icount("--by", "symbols", "--top", "5", "--format", "md", str(built.path("hello_static")))
    body = [
        line
        for line in out.splitlines()
        if line.startswith("| ") and not line.startswith("| Symbol")
    ]
    assert len(body) == 7  # 5 rows, the others, TOTAL
    # Markdown escapes the first column's brackets: it holds names from the file
    assert "others\\]" in body[5] and body[6].startswith("| TOTAL")


def test_diff(built: Built) -> None:
    a, b = str(built.path("hello_elf")), str(built.path("hello_static"))
    out = icount("--diff", "--format", "csv", a, b)
    rows = list(csv.DictReader(io.StringIO(out)))
    deltas = [max(abs(int(r["delta_file_bytes"])), abs(int(r["delta_vm_bytes"]))) for r in rows]
    assert deltas == sorted(deltas, reverse=True)
    assert sum(int(r["delta_file_bytes"]) for r in rows) == (
        built.path("hello_static").stat().st_size - built.path("hello_elf").stat().st_size
    )
    table = icount("--diff", a, b)
    assert "Δ file" in table and "TOTAL" in table


def test_diff_shows_changed_rows_unless_all(built: Built) -> None:
    """A file against itself: one summed row; --all lists every row, each unchanged."""
    a = str(built.path("hello_elf"))
    rows = list(csv.DictReader(io.StringIO(icount("--diff", "-f", "csv", a, a))))
    every = list(csv.DictReader(io.StringIO(icount("--diff", "--all", "-f", "csv", a, a))))
    assert [r["label"] for r in rows] == [f"[{len(every)} unchanged]"]
    assert {r["change"] for r in every} == {"unchanged"} and len(every) > 20
    size = built.path("hello_elf").stat().st_size
    assert int(rows[0]["old_file_bytes"]) == sum(int(r["old_file_bytes"]) for r in every) == size
    assert "--all lists the unchanged rows of --diff" in icount("--all", a, code=2)


def test_diff_marks_symbols_new_and_deleted(built: Built) -> None:
    """hello_elf.o against libsize.so: symbols only one holds are [NEW] or [DEL]."""
    a, b = str(built.path("hello_elf.o")), str(built.path("libsize.so"))
    doc = json.loads(icount("--diff", "--by", "symbols", "-f", "json", a, b))
    rows = doc["diff"][0]["rows"]
    assert doc["version"] == 2
    for r in rows:
        if r["change"] == "new":
            assert r["old_file_bytes"] == r["old_vm_bytes"] == 0
        if r["change"] == "deleted":
            assert r["new_file_bytes"] == r["new_vm_bytes"] == 0
    assert {"new", "deleted"} <= {r["change"] for r in rows}
    table = icount("--diff", "--by", "symbols", "--top", "0", a, b)
    assert "[NEW]" in table and "[DEL]" in table


def test_diff_of_fat_files_pairs_architectures(built: Built) -> None:
    doc = json.loads(
        icount(
            "--diff",
            "--format",
            "json",
            str(built.path("hello_fat")),
            str(built.path("hello_fat64")),
        )
    )
    assert (
        [d["old"]["arch"] for d in doc["diff"]]
        == [d["new"]["arch"] for d in doc["diff"]]
        == ["x86_64", "arm64"]
    )


def test_usage_errors(built: Built) -> None:
    a = str(built.path("hello_elf"))
    assert "exactly two files" in icount("--diff", a, code=2)
    assert "share no architecture" in icount(
        "--diff", str(built.path("hello_fat")), str(built.path("hello_arm64_32")), code=2
    )


def test_help_has_an_example() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "icount", "size", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    ).stdout
    assert "Examples:" in out and "icount size --by symbols" in out


def test_top_applies_to_json_and_csv_of_fat_and_several_files(built: Built) -> None:
    """Issue 15 item 6: --top was ignored there; the rows kept are those the table keeps."""
    fat = str(built.path("hello_fat"))
    doc = json.loads(icount("--top", "3", "--format", "json", fat))
    for image in doc["images"]:
        labels = [r["label"] for r in image["rows"]]
        assert len(labels) <= 4 and labels[-1].endswith(" others]")
        assert sum(r["file_bytes"] for r in image["rows"]) == built.path("hello_fat").stat().st_size
    two = [str(built.path("hello_elf")), str(built.path("hello_static"))]
    rows = list(csv.DictReader(io.StringIO(icount("--top", "2", "--format", "csv", *two))))
    for name in two:
        mine = [r for r in rows if r["file"] == name]
        assert len(mine) == 3 and mine[-1]["label"].endswith(" others]")
    kept = {r["label"] for r in rows if not r["label"].endswith(" others]")}
    table = icount("--top", "2", "--format", "md", *two)
    assert all(f"| {label} |" in table for label in kept)
