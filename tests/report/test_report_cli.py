"""`icount report` and `--format svg` through the real CLI: the page as a user gets it
(golden, byte-identical on reruns, self-contained), inputs made by icount's own
commands on real files, and one-line errors for bad input."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from icount import charts, results
from tests.support.cli import run_icount

from .conftest import (
    COMPARE_FIXTURES,
    FIXTURES,
    FP,
    cell,
    constructed_results,
    golden,
    many_cells,
    mixed_comparison_json,
    run_cli,
    write_results,
)

SIZES = ["size-sections.json", "size-symbols.json", "size-diff.json", "size-diff-symbols.json"]


def report_inputs(tmp: Path) -> list[str]:
    """Every kind of input, as files: real recordings and constructed ones."""
    write_results(tmp / "constructed.json", constructed_results())
    (tmp / "mixed.json").write_text(results.dumps(mixed_comparison_json()))
    return [
        str(FIXTURES / "serve.json"),
        str(FIXTURES / "node-warmup.json"),
        str(tmp / "constructed.json"),
        str(tmp / "mixed.json"),
        *(str(FIXTURES / n) for n in SIZES),
        "--compare",
        str(COMPARE_FIXTURES / "loop-base.json"),
        str(COMPARE_FIXTURES / "loop-new.json"),
    ]


def page_xml(text: str) -> ET.Element:
    """The page is well-formed XML too (after its doctype): parse it to check it."""
    assert text.startswith("<!DOCTYPE html>\n")
    return ET.fromstring(text.split("\n", 1)[1])


def test_report_golden_and_byte_identical_on_rerun(tmp_path: Path) -> None:
    args = report_inputs(tmp_path)
    one, two = tmp_path / "one.html", tmp_path / "two.html"
    p = run_icount(["report", *args, "-o", str(one)])  # in its own process, as a user runs it
    assert p.returncode == 0, p.stderr
    assert re.fullmatch(r"icount: report in \S+ \(9 sections, \d+ KiB\)\n", p.stderr)
    assert run_cli("report", *args, "-o", str(two), "-q").returncode == 0
    text = one.read_text()
    assert two.read_bytes() == one.read_bytes()
    golden("report.html", text)


def test_report_is_self_contained(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert run_cli("report", *report_inputs(tmp_path), "-o", str(out)).returncode == 0
    text = out.read_text()
    root = page_xml(text)
    assert "<script" not in text.lower()
    assert not re.search(r"https?://", text)  # no xmlns either: HTML needs none
    assert not re.search(r"\s(src|srcset|action|data)=", text)
    hrefs = {h for e in root.iter() if (h := e.get("href")) is not None}
    assert hrefs and all(h.startswith("#s") for h in hrefs)  # the contents links only
    ids = [e.get("id") for e in root.iter() if e.get("id")]
    assert len(ids) == len(set(ids))  # inline SVGs share one document: no id twice
    for url in re.findall(r"url\(#([\w-]+)\)", text):
        assert url in ids
    csp = next(e for e in root.iter("meta") if e.get("http-equiv"))
    assert csp.get("content") == "default-src 'none'; style-src 'unsafe-inline'"
    assert tmp_path.name not in text  # no input path, only base names


def test_provenance_is_folded_and_can_be_left_out(tmp_path: Path) -> None:
    src = FIXTURES / "serve.json"
    with_prov = tmp_path / "with.html"
    without = tmp_path / "without.html"
    assert run_cli("report", str(src), "-o", str(with_prov)).returncode == 0
    assert run_cli("report", str(src), "-o", str(without), "--no-provenance").returncode == 0
    prov = json.loads((FIXTURES / "serve.provenance.json").read_text())
    text = with_prov.read_text()
    assert "<summary>Provenance</summary>" in text
    assert prov["started_utc"] in text and prov["host"] in text
    plain = without.read_text()
    assert "Provenance" not in plain and prov["started_utc"] not in plain
    # A repeated measurement has other provenance; without it the page is the same.
    copy = tmp_path / "serve.json"
    shutil.copy(src, copy)
    (tmp_path / "serve.provenance.json").write_text('{"started_utc": "another day"}')
    again = tmp_path / "again.html"
    assert run_cli("report", str(copy), "-o", str(again), "--no-provenance").returncode == 0
    assert again.read_bytes() == without.read_bytes()


def test_broken_provenance_is_a_warning(tmp_path: Path) -> None:
    res = write_results(tmp_path / "r.json", constructed_results())
    (tmp_path / "r.provenance.json").write_text("{not json")
    p = run_cli("report", str(res), "-o", str(tmp_path / "x.html"))
    assert p.returncode == 0
    assert "r.provenance.json: unreadable" in p.stderr and "leaves it out" in p.stderr


def test_inputs_made_by_icount_on_real_files(tmp_path: Path) -> None:
    """compare --format json and size --format json as a user runs them, on binaries
    nobody wrote for this test, then the report of them."""
    cmp_json = tmp_path / "cmp.json"
    p = run_cli(
        "compare",
        str(COMPARE_FIXTURES / "loop-base.json"),
        str(COMPARE_FIXTURES / "loop-new.json"),
        "-f",
        "json",
        "-o",
        str(cmp_json),
    )
    assert p.returncode == 3  # the fixtures regress by 1.42%
    true = shutil.which("true") or "/usr/bin/true"
    size = run_cli("size", "-f", "json", true, "/bin/sh")
    assert size.returncode == 0, size.stderr
    (tmp_path / "size.json").write_text(size.stdout)
    out = tmp_path / "r.html"
    p = run_cli("report", str(cmp_json), str(tmp_path / "size.json"), "-o", str(out))
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    assert "1 regression (threshold 1%, min delta 10)" in text
    doc = json.loads(size.stdout)
    for img in doc["images"]:
        assert f"{img['file_bytes']:,} bytes in the file" in text  # the total's title


def test_compare_option_matches_compare_json(tmp_path: Path) -> None:
    base, new = COMPARE_FIXTURES / "loop-base.json", COMPARE_FIXTURES / "loop-new.json"
    cmp_json = tmp_path / "cmp.json"
    run_cli("compare", str(base), str(new), "-t", "2%", "-f", "json", "-o", str(cmp_json))
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    assert (
        run_cli("report", "--compare", str(base), str(new), "-t", "2%", "-o", str(a)).returncode
        == 0
    )
    assert run_cli("report", str(cmp_json), "-o", str(b)).returncode == 0
    chart = re.compile(r'<div class="chart">.*?</div>', re.S)
    assert chart.findall(a.read_text()) == chart.findall(b.read_text())
    assert "unchanged" in a.read_text()  # +1.42% is within 2%


def _fib_results(tmp: Path, name: str, scale: float) -> Path:
    """fib-1, fib-2, fib-10 asked for in that order: a text sort gives fib-1, fib-10."""
    cells = [
        dataclasses.replace(cell(n, [scale * (1000 + k)] * 2), order=k)
        for k, n in enumerate(["fib-1", "fib-2", "fib-10", "alpha"])
    ]
    return write_results(tmp / name, results.Results(FP, tuple(cells)))


def _order_in(page: str, names: list[str]) -> list[str]:
    """The names as the page's first chart lists them (its row labels)."""
    chart = page[page.index('<div class="chart">') :]
    chart = chart[: chart.index("</svg>")]
    return sorted(names, key=lambda n: chart.index(f">{n}<"))


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        ("order", ["fib-1", "fib-2", "fib-10", "alpha"]),
        ("name", ["alpha", "fib-1", "fib-2", "fib-10"]),
    ],
)
def test_rows_in_one_order_in_every_section(tmp_path: Path, sort: str, expected: list[str]) -> None:
    base = _fib_results(tmp_path, "base.json", 1.0)
    new = _fib_results(tmp_path, "new.json", 1.5)
    cmp_json = tmp_path / "cmp.json"
    args = ["compare", str(base), str(new), "-f", "json", "-o", str(cmp_json), "--sort", sort]
    assert run_cli(*args).returncode == 3  # +50% regressed
    for inputs in (
        [str(base)],
        ["--compare", str(base), str(new)],
        [str(cmp_json)],  # ordered by compare: --sort name of the report orders it too
    ):
        p = run_cli("report", *inputs, "--sort", sort, "-o", "-")
        assert p.returncode == 0, p.stderr
        assert _order_in(p.stdout, expected) == expected, inputs
    numbers = run_cli("report", str(base), "--sort", sort, "-o", "-").stdout
    numbers = numbers[numbers.index("<summary>Numbers</summary>") :]
    assert sorted(expected, key=lambda n: numbers.index(f">{n}<")) == expected


def test_stdout_output(tmp_path: Path) -> None:
    res = write_results(tmp_path / "r.json", constructed_results())
    p = run_cli("report", str(res), "-o", "-")
    assert p.returncode == 0 and p.stdout.startswith("<!DOCTYPE html>") and p.stderr == ""


def test_500_cells_page_is_under_a_megabyte(tmp_path: Path) -> None:
    res = write_results(tmp_path / "many.json", many_cells(500))
    out = tmp_path / "many.html"
    assert run_cli("report", str(res), "-o", str(out)).returncode == 0
    size = out.stat().st_size
    assert size < 1_000_000, size
    assert out.read_text().count('<rect class="bar"') == 490 + 1  # valid cells + legend


@pytest.mark.parametrize(
    ("make", "message", "code"),
    [
        (lambda d: [str(d / "missing.json")], "missing.json: no such file", 6),
        (lambda d: [_write(d / "x.json", "{")], "x.json: not valid JSON (line 1", 6),
        (lambda d: [_write(d / "x.json", "[1]")], "not an icount results, compare or size", 6),
        (
            lambda d: [_write(d / "x.json", '{"format": "icount-results", "version": 99}')],
            "results format version 99",
            6,
        ),
        (
            lambda d: [_write(d / "x.json", '{"format": "icount-compare", "version": 1}')],
            "x.json: the comparison: 'cells' is missing or not a list",
            6,
        ),
        (
            lambda d: [_write(d / "x.json", '{"format": "icount-size", "view": "sections"}')],
            "x.json: the size document: 'images' is missing or not a list",
            6,
        ),
        (lambda d: [], "report takes results, compare or size JSON files", 2),
        (lambda d: [str(FIXTURES / "serve.json"), "--sort", "size"], "unknown sort 'size'", 2),
        (lambda d: [str(FIXTURES / "serve.json"), "-t", "2%"], "need --compare BASE NEW", 2),
        (
            lambda d: [str(FIXTURES / "serve.json"), "-o", str(FIXTURES / "serve.json")],
            "is one of the input files",
            2,
        ),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, make: object, message: str, code: int) -> None:
    args = make(tmp_path)  # type: ignore[operator]
    if "-o" not in args:
        args += ["-o", str(tmp_path / "out.html")]
    p = run_cli("report", *args)
    assert p.returncode == code, p.stderr
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert message in p.stderr
    assert not (tmp_path / "out.html").exists()


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_compare_refuses_other_environments(tmp_path: Path) -> None:
    base = results.load(COMPARE_FIXTURES / "loop-base.json")
    other = results.Results({**base.fingerprint, "cpu_vendor": "GenuineIntel"}, base.cells)
    other_path = write_results(tmp_path / "other.json", other)
    args = ["report", "--compare", str(COMPARE_FIXTURES / "loop-base.json"), str(other_path)]
    p = run_cli(*args, "-o", str(tmp_path / "r.html"))
    assert p.returncode == 2 and "cpu_vendor" in p.stderr and "--force" in p.stderr
    p = run_cli(*args, "--force", "-o", str(tmp_path / "r.html"))
    assert p.returncode == 0
    assert (
        "Compared with --force although the environments differ"
        in (tmp_path / "r.html").read_text()
    )


# ---------------------------------------------------------------- --format svg


def test_table_format_svg(tmp_path: Path) -> None:
    p = run_cli("table", str(FIXTURES / "serve.json"), "-f", "svg")
    assert p.returncode == 0, p.stderr
    assert p.stdout == charts.results_svg(results.load(FIXTURES / "serve.json"))
    ET.fromstring(p.stdout.split("\n", 1)[1])


def test_compare_format_svg_keeps_the_gate(tmp_path: Path) -> None:
    out = tmp_path / "c.svg"
    base, new = COMPARE_FIXTURES / "loop-base.json", COMPARE_FIXTURES / "loop-new.json"
    p = run_cli("compare", str(base), str(new), "-f", "svg", "-o", str(out))
    assert p.returncode == 3  # still the regression gate
    assert "regressed" in p.stdout  # the table on stdout, the chart in the file
    text = out.read_text()
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns=')
    assert "loop, base median 2,107,284, new median 2,137,284, delta +30,000" in text


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--by", "symbols"],
        ["--by", "segments"],
        ["--diff"],
    ],
)
def test_size_format_svg(args: list[str]) -> None:
    true = shutil.which("true") or "/usr/bin/true"
    files = [true, "/bin/sh"]
    as_json = run_cli("size", "-f", "json", *args, *files)
    p = run_cli("size", "-f", "svg", *args, *files)
    assert p.returncode == 0, p.stderr
    doc = charts.sizes_from_json(json.loads(as_json.stdout), "size")
    assert p.stdout == charts.sizes_svg(doc)
    root = ET.fromstring(p.stdout.split("\n", 1)[1])
    assert root.tag == "{http://www.w3.org/2000/svg}svg"


def test_size_svg_of_a_built_binary(tmp_path: Path) -> None:
    """A program compiled here, sections then symbols: the sections' segments add up
    to the file's size as `stat` tells it."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed (scripts/setup.sh installs it)")
    src = tmp_path / "hello.c"
    src.write_text('#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n')
    exe = tmp_path / "hello"
    subprocess.run([gcc, "-O2", "-o", str(exe), str(src)], check=True)
    p = run_cli("size", "-f", "svg", str(exe))
    assert p.returncode == 0, p.stderr
    segs = re.findall(r"hello: [^<]*?: ([\d,]+) bytes in the file", p.stdout)
    assert sum(int(s.replace(",", "")) for s in segs) == exe.stat().st_size
