"""Names no measured program should have, from a results file icount did not write,
through every export format: each output parses in its own format (JSON, CSV, XML for
SVG and JUnit, HTML with its inline SVG as XML), holds each name (escaped where the
format cannot carry it raw), and no raw control character, noncharacter or bidi
override reaches its bytes."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from icount import export, results
from icount.compare import model
from icount.compare.thresholds import DEFAULT_MIN_DELTA, parse_thresholds
from icount.errors import ResultsFileError, UsageError
from icount.export import Kind
from icount.export.documents import SizeDiffDoc, SizeDoc
from icount.results import Cell, Results, Run
from icount.results import files as files_mod
from icount.results.cell_profile import PER_RUN, CellProfile, Edge, FunctionRow, Others
from icount.results.details import CommandDetail
from icount.size.model import Breakdown, Row
from icount.text import md_text, printable
from tests.support.cli import run_icount_here, run_icount_here_bytes

# names a spreadsheet would run as formulas (OWASP's CSV injection), and the cell each is
# in CSV: a quote first, escaped as any field; one that is a number stays a number
FORMULA_CELLS = {
    '=HYPERLINK("http://x.example/?"&A1,"x")': '\'=HYPERLINK("http://x.example/?"&A1,"x")',
    "+1+cmd|' /C calc'!A0": "'+1+cmd|' /C calc'!A0",
    "-2+3": "'-2+3",
    "@SUM(1+1)": "'@SUM(1+1)",
    "\t=1+1": "'\\t=1+1",
    "\r=2+2": "'\\r=2+2",
    "\x00=3+3": "'\\x00=3+3",
    "'=quoted": "''=quoted",  # a quote of its own stays apart from the one added
    "-1.5": "-1.5",
}
FORMULAS = list(FORMULA_CELLS)
HOSTILE = [
    "esc\x1b]8;;http://x\x07osc\x1b\\",  # an OSC 8 hyperlink, ESC and BEL
    "c1\x85\x9b31m",  # NEL and CSI of the C1 set
    "bidi\u202eevil\u202c",  # a right-to-left override
    "tick`rm -rf ~`",
    "ff\x0cfeed",  # XML 1.0 cannot hold a form feed, even as &#12;
    "nonchar\ufffe\uffff",  # nor U+FFFE and U+FFFF
    "new\nline\rcr",
    "<&\"'>",
    "del\x7f nul\x00",
    "sep\u2028\u2029 nbsp\u00a0",
    "tag\U000e0041 plane16\U00100000",
    "[link](https://x.example/)",  # a link in a PR comment
    *FORMULAS,
    "back\\x1b slash",  # the four characters, beside the ESC of the first
]
NUMBER = re.compile(r"[-+]?[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?")
BAD = {chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)]} - {"\n"}
BAD |= {"\u202e", "\u202c", "\ufffe", "\uffff", "\u2028", "\u2029", "\U000e0041"}


def _profile(names: list[str], scale: float) -> CellProfile:
    rows = tuple(
        FunctionRow(n, round(scale * (100 - i), 3), round(scale * (150 - i), 3), 1.0)
        for i, n in enumerate(names)
    )
    return CellProfile(
        per=PER_RUN,
        windows=3,
        top=len(rows),
        functions=rows,
        others=Others(0, 0.0, 0.0),
        allocations=1.0,
        frees=1.0,
        edges=(Edge(names[0], names[1], 50.0 * scale),),
    )


def _results(scale: float) -> Results:
    cells = []
    for i, name in enumerate(HOSTILE):
        value = 2000.0 * scale + i
        runs = tuple(Run(value, True, None, CommandDetail(0, 1)) for _ in range(3))
        cells.append(
            Cell(
                name=name,
                path=HOSTILE[-1 - i] if i % 3 == 1 else "",
                backend="callgrind" if i % 4 else f"back\x1bend{i}",
                unit=results.UNIT_INSTRUCTIONS,
                runs=runs,
                params={"argv": [name]},
                runs_wanted=3,
                max_spread=0.01,
                order=i,
                profile=_profile(HOSTILE[i:] + HOSTILE[:i], scale),
            )
        )
    why = "build failed:\n\x1b]0;title\x07<evil>"
    invalid = Cell("failed\x1b[31m", "", "callgrind", results.UNIT_INSTRUCTIONS, (), {}, 3, 0.01,
                   setup_error=why, order=len(HOSTILE))  # fmt: skip
    return Results({"cpu_model": "cpu\u202e\x1b"}, (*cells, invalid))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The base and new files, as written and read back (loading checks the names)."""
    folder = tmp_path_factory.mktemp("hostile")
    base, new = folder / "base.json", folder / "new.json"
    results.save(base, _results(1.0), None, overwrite=True)
    results.save(new, _results(1.25), None, overwrite=True)
    return base, new


def _clean(text: str, what: str) -> None:
    text.encode("utf-8")  # no lone surrogate either
    raw = sorted({f"U+{ord(ch):04X}" for ch in text if ch in BAD})
    assert not raw, f"{what}: raw {raw}"


def _names_in(text: str, fmt: str) -> None:
    """Every hostile name is in the output, in the form the format gives it: whole in
    JSON, escaped by `printable` in the others (its start: charts shorten names)."""
    if fmt in ("bmf", "benchmark-json"):
        doc = json.loads(text)
        names = doc.keys() if fmt == "bmf" else {e["name"] for e in doc}
        for name in HOSTILE:
            assert any(n.startswith(name) for n in names), (fmt, name)
        return
    for name in HOSTILE[:-1]:
        shown = md_text(name) if fmt == "md" else printable(name)
        if fmt in ("svg", "junit"):
            shown = shown.replace("&", "&amp;").replace("<", "&lt;")
        key = shown[:4]  # enough to find it however the format shortens it
        quoted = (key.replace("'", q) for q in ("&#x27;", "&apos;"))  # in an attribute
        assert key in text or any(k in text for k in quoted), (fmt, name)


def _parses(text: str, fmt: str) -> None:
    if fmt in ("json", "bmf", "benchmark-json"):
        json.loads(text)
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(text, newline="")))
        assert len(rows) == text.count("\n")  # one record a line: no newline in a field
        assert len({len(r) for r in rows}) == 1
    elif fmt in ("svg", "junit"):
        ET.fromstring(text.encode("utf-8"))


@pytest.mark.parametrize("fmt", export.names(Kind.RESULTS))
def test_every_results_format_escapes_hostile_names(files: tuple[Path, Path], fmt: str) -> None:
    res = results.load(files[0])
    text = export.render_results(res, fmt, 100)
    _clean(text, fmt)
    _parses(text, fmt)
    if fmt == "json":
        assert [c.name for c in files_mod.from_json(json.loads(text), "x").cells] == [
            *HOSTILE, "failed\x1b[31m"
        ]  # fmt: skip
    elif fmt == "csv":
        names = [r[0] for r in csv.reader(io.StringIO(text, newline=""))][1:]
        assert len(set(names)) == len(names) == len(HOSTILE) + 1
        _no_formula(text, FORMULA_CELLS)
    else:
        _names_in(text, fmt)
    if fmt == "md":  # no name is a link or HTML in a PR comment
        assert "[link](" not in text and "<&" not in text


def _comparison(files: tuple[Path, Path]) -> model.Comparison:
    base, new = (results.load(f) for f in files)
    return model.compare(base, new, parse_thresholds([], DEFAULT_MIN_DELTA), [])


# Markdown of a comparison is compare/render.py's (its bullets), tested with compare's
# outputs in tests/compare; its table is the terminal's
@pytest.mark.parametrize("fmt", [f for f in export.names(Kind.COMPARISON) if f != "md"])
def test_every_comparison_format_escapes_hostile_names(files: tuple[Path, Path], fmt: str) -> None:
    c = _comparison(files)
    assert any(r.explained is not None for r in c.rows)  # function names are printed too
    text = export.render_comparison(c, fmt, 100)
    _clean(text, fmt)
    _parses(text, fmt)
    if fmt == "json":
        rows = json.loads(text)["cells"]
        assert {r["name"] for r in rows} == {*HOSTILE, "failed\x1b[31m"}
    elif fmt == "csv":
        _no_formula(text, FORMULA_CELLS)
    else:
        _names_in(text, fmt)


def _no_formula(text: str, cells: dict[str, str]) -> list[dict[str, str]]:
    """The CSV parsed back: no cell a spreadsheet would run (one starting with = + - @,
    a tab, CR or NUL is a number), and each formula name's cell as `cells` says."""
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    for row in rows:
        for column, cell in row.items():
            if cell[:1] in ("=", "+", "-", "@", "\t", "\r", "\0"):
                assert NUMBER.fullmatch(cell), (column, cell)
    first = next(iter(rows[0]))  # name, or size's file
    shown = {row[first] for row in rows}
    for name, cell in cells.items():
        assert cell in shown, (name, cell)
    return rows


def test_a_comparison_csv_keeps_a_negative_delta_a_number(files: tuple[Path, Path]) -> None:
    """The new side smaller: every delta negative, written as a plain number, while the
    names beside it that start with `-` are quoted."""
    c = _comparison((files[1], files[0]))
    rows = _no_formula(export.render_comparison(c, "csv", 100), FORMULA_CELLS)
    deltas = [float(r["delta"]) for r in rows if r["delta"]]
    assert len(deltas) == len(HOSTILE) and all(d < 0 for d in deltas)
    assert all(r["delta_pct"].startswith("-") for r in rows if r["delta"])


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_the_report_page_escapes_hostile_names(files: tuple[Path, Path], tmp_path: Path) -> None:
    """`icount report` of the files and their comparison: the page's text holds the names
    escaped, no name made a tag, and each inline SVG is XML."""
    page = tmp_path / "page.html"
    base, new = files
    done = run_icount_here(["report", str(base), "--compare", str(base), str(new), "-o", str(page)])
    assert done.returncode == 0, done.stderr
    html = page.read_text(encoding="utf-8")
    assert "<summary>Flame graph" in html  # the summaries hold the names too
    _clean(html, "report")
    parser = _Page()
    parser.feed(html)
    text = "".join(parser.text)
    assert "<&\"'>" in text and "rm -rf" in text and "ff\\x0cfeed" in text
    assert "evil" not in parser.tags and "<evil>" in text  # the setup error's tag is text
    start = 0
    while (at := html.find("<svg", start)) >= 0:
        end = html.index("</svg>", at) + len("</svg>")
        ET.fromstring(html[at:end])
        start = end


def test_a_lone_surrogate_is_refused_on_loading(files: tuple[Path, Path], tmp_path: Path) -> None:
    doc = json.loads(files[0].read_text())
    doc["cells"][3]["name"] = "half\ud800"
    path = tmp_path / "surrogate.json"
    path.write_text(json.dumps(doc))  # ASCII: the surrogate as the escape \ud800
    with pytest.raises(ResultsFileError) as info:
        results.load(path)
    assert str(info.value) == (
        f"{path}: holds text that is not Unicode (a lone surrogate in half\\ud800); not an "
        "icount results file"
    )
    doc["cells"][3]["name"] = "pair\ud83d\ude00"  # a pair is a character: it loads
    path.write_text(json.dumps(doc))
    assert results.load(path).cells[3].name == "pair\U0001f600"


def _collide(files: tuple[Path, Path], tmp_path: Path) -> tuple[Results, Results]:
    sides = []
    for f in files:
        res = results.load(f)
        a, b = res.cells[2], res.cells[5]
        import dataclasses

        cells = list(res.cells)
        cells[2] = dataclasses.replace(a, name="a/b", path="", backend="callgrind")
        cells[5] = dataclasses.replace(b, name="a", path="b", backend="callgrind")
        sides.append(Results(res.fingerprint, tuple(cells)))
    return sides[0], sides[1]


@pytest.mark.parametrize("fmt", ["bmf", "benchmark-json", "junit"])
def test_two_cells_of_one_label_are_refused_in_a_keyed_format(
    files: tuple[Path, Path], tmp_path: Path, fmt: str
) -> None:
    """`a/b`, and `a` with path `b`: one Bencher benchmark, one figure silently lost."""
    base, new = _collide(files, tmp_path)
    c = model.compare(base, new, parse_thresholds([], DEFAULT_MIN_DELTA), [])
    with pytest.raises(UsageError) as info:
        export.render_comparison(c, fmt, 100)
    text = str(info.value)
    assert (
        'name "a/b", backend callgrind' in text and 'name "a", path "b", backend callgrind' in text
    )
    assert text.startswith(f"--format {fmt}: two cells would be one ")
    if fmt == "bmf":
        with pytest.raises(UsageError, match="two cells would be one benchmark"):
            export.render_results(new, fmt, 100)
    for other in ("csv", "json", "table"):  # formats that keep name and path apart
        export.render_comparison(c, other, 100)


def test_icount_table_writes_each_format_as_utf_8_and_refuses_a_surrogate(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    """The bytes `icount table -f FORMAT` writes: UTF-8 with no raw control character; a
    lone surrogate in a name was an internal error in csv, json, bmf and svg."""
    for fmt in ("csv", "json", "bmf", "svg"):  # the formats a surrogate broke
        done = run_icount_here_bytes(["table", str(files[0]), "-f", fmt])
        assert done.returncode == 0, done.stderr
        _clean(done.stdout.decode("utf-8"), fmt)
    doc = json.loads(files[0].read_text())
    doc["cells"][0]["path"] = "\udc80"  # what surrogateescape makes of a byte 0x80
    bad = tmp_path / "surrogate.json"
    bad.write_text(json.dumps(doc))
    refused = run_icount_here(["table", str(bad), "-f", "csv"])
    assert (refused.returncode, refused.stdout) == (6, "")
    assert refused.stderr == (
        f"icount: error: {bad}: holds text that is not Unicode (a lone surrogate in \\udc80); "
        "not an icount results file\n"
    )


def _breakdown(path: str, scale: int) -> Breakdown:
    rows = [Row(name, 100 * scale + i, 90 * scale + i) for i, name in enumerate(HOSTILE)]
    return Breakdown(path, "x86_64", "ELF64", "executable", sum(r.file for r in rows), rows,
                     symbols="-3 symbols from .symtab")  # fmt: skip


def test_size_csvs_quote_formula_names() -> None:
    """`icount size -f csv` and `--diff -f csv`: symbols and paths read from a binary are
    names like any other; the byte counts, a shrinking delta's included, stay numbers."""
    old, new = _breakdown("=old", 2), _breakdown("@new", 1)
    for doc in (SizeDoc([old], [old], "symbols"), SizeDiffDoc([(old, new)], "symbols")):
        text = export.render(doc, "csv")
        _clean(text, "size csv")
        _parses(text, "csv")
        rows = _no_formula(text, {"=old": "'=old"})
        assert {r["label"] for r in rows} >= set(FORMULA_CELLS.values())
        if isinstance(doc, SizeDoc):
            assert {r["symbols"] for r in rows} == {"'-3 symbols from .symtab"}
        else:
            assert {r["new"] for r in rows} == {"'@new"}
            assert all(int(r["delta_file_bytes"]) < 0 for r in rows)
