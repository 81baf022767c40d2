"""`icount size -o`: sizes as an icount results file, gated by `icount compare` with its
thresholds, verdicts, exit 3 and PR markdown (issue 15 item 3)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from icount import results
from icount.compare import model
from icount.size import load, report, views
from icount.size.model import Breakdown, Row

from .conftest import ROOT, tool

pytestmark = pytest.mark.slow


def cli(*args: str, code: int = 0, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "icount", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )
    assert proc.returncode == code, proc.stdout + proc.stderr
    return proc


def build(folder: Path, blob_bytes: int) -> Path:
    """The same program with a data array of `blob_bytes`: prog in its own folder, so
    that base and new have the same name (as a CI job builds the same path twice)."""
    folder.mkdir()
    src = folder / "prog.c"
    src.write_text(
        f"char blob[{blob_bytes}] = {{1}};\n"
        "int main(int argc, char **argv) { (void)argv; return blob[argc]; }\n"
    )
    out = folder / "prog"
    subprocess.run([tool("gcc"), "-O1", "-g0", "-o", str(out), str(src)], check=True, timeout=60)
    return out


@pytest.fixture()
def builds(tmp_path: Path) -> tuple[Path, Path]:
    return build(tmp_path / "base", 200_000), build(tmp_path / "new", 204_000)


def test_a_2pct_growth_exits_3_at_1pct(builds: tuple[Path, Path], tmp_path: Path) -> None:
    base, new = builds
    grew = new.stat().st_size / base.stat().st_size - 1
    assert 0.015 < grew < 0.025  # the whole file grows by about 2%
    cli("size", "--gzip", "-o", str(tmp_path / "base.json"), str(base))
    cli("size", "--gzip", "-o", str(tmp_path / "new.json"), str(new))
    a, b = str(tmp_path / "base.json"), str(tmp_path / "new.json")
    out = cli("compare", a, b, "--threshold", "1%", code=3)
    # by default the VM total alone gates: one cell, the rows' cells are left out
    assert "1 of 1 cell regressed beyond its threshold" in out.stderr
    assert "size cells do not gate (the total does)" in out.stderr
    assert "sizes read from the files" in out.stdout  # not "medians of fresh processes"
    gated = ("--size-gate", ".data,total/file")
    md = cli("compare", a, b, "-t", "1%", "-f", "md", *gated, code=3).stdout
    assert md.startswith("❌") and "**regressed**: `prog/sections/.data/file`" in md
    bullets = "\n".join(line for line in md.splitlines() if line.startswith("- "))
    assert "`prog/total/file`" in bullets and "prog/sections/.text/file" not in bullets
    doc = json.loads(cli("compare", a, b, "-t", "1%", "-f", "json", *gated, code=3).stdout)
    cells = {c["path"]: c for c in doc["cells"]}
    # every row is kept; those outside the gate say so
    assert {"sections/.data/file", "sections/.data/vm", "total/file", "total/vm"} < set(cells)
    assert cells["sections/.text/file"]["why"] == "not gated"
    assert cells["sections/.data/vm"]["verdict"] == "regressed"
    shown = cli("compare", a, b, "--threshold", "1%", code=3).stdout
    assert "not gated (regressed)" in shown and "prog/sections/.data/vm" in shown
    assert cells["sections/.data/file"]["verdict"] == "regressed"
    assert cells["sections/.data/file"]["delta"] == 4000
    assert cells["total/file"]["delta"] == new.stat().st_size - base.stat().st_size
    text = cli("compare", a, b, "-t", "1%", "--size-gate", "*", code=3).stdout
    assert ".text/file" in text and ".debug" not in text  # -g0: no debug section anyway
    # the same sizes at a 5% threshold pass; a file against itself passes
    cli("compare", a, b, "--threshold", "5%")
    cli("compare", a, a)


def test_the_results_file(builds: tuple[Path, Path], tmp_path: Path) -> None:
    base, _ = builds
    path = tmp_path / "sizes.json"
    table = cli("size", "--gzip", "-o", str(path), str(base)).stdout
    assert ".data" in table  # the table is still printed
    res = results.load(path)
    assert res.fingerprint["backend"] == "size"
    cells = {c.path: c for c in res.cells}
    assert {c.unit for c in res.cells} == {"bytes"} and {c.name for c in res.cells} == {"prog"}
    assert all(c.valid for c in res.cells)
    (image,) = load(base)
    b = views.by_sections(image)
    for r in b.rows:  # every non-zero figure of every row, and no other
        for column, n in (("file", r.file), ("vm", r.vm)):
            key = f"sections/{r.label}/{column}"
            assert cells[key].values == [n] if n else key not in cells
    assert len(cells) == sum(bool(r.file) + bool(r.vm) for r in b.rows) + 3
    assert cells["total/file"].values == [base.stat().st_size]
    gz = subprocess.run(
        [tool("gzip"), "-9", "-n", "-c", str(base)], capture_output=True, check=True
    ).stdout
    assert cells["total/gzip"].values == [len(gz)]
    # deterministic, and never overwritten without --force
    first = path.read_bytes()
    err = cli("size", "--gzip", "-o", str(path), str(base), code=2).stderr
    assert "exists" in err and "--force" in err
    cli("size", "--gzip", "-o", str(path), "--force", str(base))
    assert path.read_bytes() == first


def test_output_is_checked_before_reading(tmp_path: Path) -> None:
    err = cli("size", "-o", str(tmp_path), sys.executable, code=2).stderr
    assert "is a directory" in err
    (tmp_path / "file").write_text("x")
    err = cli("size", "-o", str(tmp_path / "file" / "x.json"), sys.executable, code=2).stderr
    assert "not a directory" in err.lower()
    err = cli("size", "--diff", "-o", str(tmp_path / "d.json"), "a", "b", code=2).stderr
    assert "icount compare" in err


def test_top_rows_keep_their_keys(tmp_path: Path) -> None:
    """With --top, the rows summed away are one `[others]` cell whatever their count."""

    def b(rows: list[tuple[str, int]]) -> Breakdown:
        rs = [Row(label, n, n) for label, n in rows]
        return Breakdown("x/app", "x86_64", "ELF64", "executable", 0, rs, [])

    few = report.select([b([("a", 100), ("b", 50), ("c", 5), ("d", 4)])], 2)
    many = report.select([b([("a", 100), ("b", 50), ("c", 5), ("d", 4), ("e", 3)])], 2)
    keys = {c.path for c in report.to_results(few, "symbols").cells}
    assert keys == {c.path for c in report.to_results(many, "symbols").cells}
    assert "symbols/[others]/file" in keys and "symbols/c/file" not in keys


def test_size_files_compare_across_machines_but_not_with_counts() -> None:
    size_a = {"backend": "size", "icount_version": "0.1.0"}
    size_b = {"backend": "size", "icount_version": "0.1.0", "cpu_model": "other", "glibc": "9"}
    assert model.fingerprint_differences(size_a, size_b) == ()
    counts = {"backend": "callgrind", "tool_version": "valgrind-3.19.0"}
    diffs = model.fingerprint_differences(size_a, counts)
    assert "backend" in {d.field for d in diffs}


def test_compare_refuses_a_size_file_against_a_count_file(
    builds: tuple[Path, Path], tmp_path: Path
) -> None:
    base, _ = builds
    cli("size", "-o", str(tmp_path / "s.json"), str(base))
    counts = ROOT / "fixtures" / "compare"
    run_file = next(p for p in sorted(counts.glob("*.json")) if "provenance" not in p.name)
    err = cli("compare", str(tmp_path / "s.json"), str(run_file), code=2).stderr
    assert "backend: base 'size' vs new 'callgrind'" in err
