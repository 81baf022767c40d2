"""Files from elsewhere cannot act or forge (issue 30): -o and --ledger are checked like
every output (never an input, never a JSON file, never each other), and a commit or a
name read from a file cannot forge a ledger entry."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from icount.compare.ledger import parse
from icount.errors import ExitCode
from tests.compare.conftest import Cli, cell, res

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "compare"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, commit in (("loop-base", "a" * 40), ("loop-new", "b" * 40)):
        shutil.copy(FIXTURES / f"{name}.json", tmp_path / f"{name}.json")
        prov = {"format": "icount-provenance", "version": 1, "commit": commit}
        (tmp_path / f"{name}.provenance.json").write_text(json.dumps(prov))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764547200")
    return tmp_path


COMPARE = ("compare", "loop-base.json", "loop-new.json", "-q")


def _ledger(cli: Cli, here: Path) -> str:
    done = cli(*COMPARE, "--ledger", "L.md", "--note", "first")
    assert done.code == ExitCode.REGRESSION, done.err
    return (here / "L.md").read_text()


def test_compare_ledger_and_output_the_same_file_is_refused(cli: Cli, here: Path) -> None:
    before = _ledger(cli, here)
    done = cli(*COMPARE, "--ledger", "L.md", "--note", "x", "-f", "md", "-o", "L.md")
    assert done.code == ExitCode.USAGE
    assert done.err == (
        "icount: error: --ledger L.md is also --output: give each a file of its own\n"
    )
    assert (here / "L.md").read_text() == before


def test_report_output_over_its_ledger_is_refused(cli: Cli, here: Path) -> None:
    before = _ledger(cli, here)
    done = cli("report", "--ledger", "L.md", "-o", "L.md", "-q")
    assert done.code == ExitCode.USAGE
    assert done.err.startswith("icount: error: --output L.md is the --ledger it would draw")
    assert len(done.err.splitlines()) == 1
    assert (here / "L.md").read_text() == before


@pytest.mark.parametrize("target", ["loop-base.json", "loop-new.json", "other.json"])
def test_a_ledger_that_is_a_results_or_json_file_is_refused(
    cli: Cli, here: Path, target: str
) -> None:
    shutil.copy(here / "loop-base.json", here / "other.json")
    before = (here / target).read_bytes()
    done = cli(*COMPARE, "--ledger", target, "--note", "x")
    assert done.code == ExitCode.USAGE
    assert done.err.startswith(f"icount: error: --ledger {target} ")
    assert len(done.err.splitlines()) == 1
    assert (here / target).read_bytes() == before
    assert cli("table", target).code == ExitCode.OK  # it still loads


def test_a_json_document_under_another_name_is_no_ledger(cli: Cli, here: Path) -> None:
    (here / "cmp.md").write_text('{"format": "icount-compare"}\n')
    done = cli(*COMPARE, "--ledger", "cmp.md", "--note", "x")
    assert done.code == ExitCode.USAGE
    assert "is a JSON file, not a Markdown ledger" in done.err
    (here / "notes.md").write_text("my notes\n")
    done = cli(*COMPARE, "--ledger", "notes.md", "--note", "x")
    assert done.code == ExitCode.USAGE
    assert "is not an icount ledger" in done.err
    assert (here / "notes.md").read_text() == "my notes\n"


def test_report_output_over_a_saved_comparison_is_refused(cli: Cli, here: Path) -> None:
    assert cli(*COMPARE, "-f", "json", "-o", "cmp.json").code == ExitCode.REGRESSION
    before = (here / "cmp.json").read_bytes()
    done = cli("report", "loop-base.json", "-o", "cmp.json", "-q")
    assert done.code == ExitCode.USAGE
    assert done.err.startswith("icount: error: --output cmp.json is a JSON file")
    assert (here / "cmp.json").read_bytes() == before


def test_a_commit_with_a_newline_forges_no_ledger_entry(cli: Cli, here: Path) -> None:
    forged = "abc\n\n## 2099-01-01 · kept · forged\n- geometric mean: 0.5"
    prov = {"format": "icount-provenance", "version": 1, "commit": forged}
    (here / "loop-new.provenance.json").write_text(json.dumps(prov))
    text = _ledger(cli, here)
    entries = parse(text)
    assert [(e.date, e.decision, e.note) for e in entries] == [("2025-12-01", "kept", "first")]
    assert "- new: `loop-new.json` at `abc\\n\\n## 2099`\n" in text


def test_hostile_names_and_notes_stay_in_their_entry(cli: Cli, here: Path) -> None:
    from icount import results

    name = "x`[a](http://e)\n## 2099-01-01 · kept · forged"
    results.save(here / "b.json", res(cell(name, [1000] * 3)), None, overwrite=True)
    results.save(here / "n.json", res(cell(name, [2000] * 3)), None, overwrite=True)
    done = cli("compare", "b.json", "n.json", "-q", "--ledger", "L.md",
               "--note", "a\n## 2099 · kept · note <b>")  # fmt: skip
    assert done.code == ExitCode.REGRESSION, done.err
    text = (here / "L.md").read_text()
    entries = parse(text)
    assert len(entries) == 1
    assert entries[0].note == "a\\n## 2099 · kept · note <b>"  # as it reads rendered (L6)
    assert entries[0].moved == [
        "x`[a](http://e)\\n## 2099-01-01 · kept · forged: 1000 → 2000 (+100.00%, regressed)"
    ]
    assert "  - ``x`[a](http://e)\\n## 2099-01-01 · kept · forged``: 1000 → 2000" in text
    assert len([line for line in text.splitlines() if line.startswith("#")]) == 2


def test_a_markdown_file_with_headings_is_no_ledger(cli: Cli, here: Path) -> None:
    """A README's '## Install' is not a ledger entry (review2 L1); a directory names
    --ledger (L3)."""
    readme = "# My project\n\nIntro.\n\n## Install\n\npip install x\n"
    (here / "README.md").write_text(readme)
    done = cli(*COMPARE, "--ledger", "README.md", "--note", "x")
    assert done.code == ExitCode.USAGE
    assert "--ledger README.md is not an icount ledger" in done.err
    assert (here / "README.md").read_text() == readme
    (here / "adir").mkdir()
    done = cli(*COMPARE, "--ledger", "adir", "--note", "x")
    assert done.code == ExitCode.USAGE
    assert done.err.startswith("icount: error: --ledger adir is a directory")
    assert "give --ledger a file name" in done.err
    # a ledger icount wrote, its heading edited away, is still one
    text = _ledger(cli, here)
    (here / "L2.md").write_text(text.split("\n", 1)[1])
    assert cli(*COMPARE, "--ledger", "L2.md", "--note", "again").code == ExitCode.REGRESSION


def test_report_refuses_a_fifo_ledger_without_reading_it(cli: Cli, here: Path) -> None:
    import os

    os.mkfifo(here / "fifo.md")
    done = cli("report", "--ledger", "fifo.md", "-o", "r.html", "-q")  # blocked forever before
    assert done.code == ExitCode.BAD_INPUT
    assert "fifo.md: is not a regular file (a FIFO, socket or device)" in done.err
    assert len(done.err.splitlines()) == 1


def test_a_hard_link_to_an_input_is_that_input(cli: Cli, here: Path) -> None:
    """-o and --ledger compare files, not names (review2 L10): a hard link to the base is
    the base."""
    import os

    before = _ledger(cli, here)
    os.link(here / "L.md", here / "link.md")
    done = cli(*COMPARE, "-f", "md", "-o", "link.md", "--ledger", "L.md", "--note", "x")
    assert done.code == ExitCode.USAGE
    assert "is also --output" in done.err
    os.link(here / "loop-base.json", here / "base-link.json")
    done = cli(*COMPARE, "-f", "json", "-o", "base-link.json")
    assert done.code == ExitCode.USAGE and "is one of the files to compare" in done.err
    done = cli("report", "loop-base.json", "-o", "base-link.json", "-q")
    assert done.code == ExitCode.USAGE and "is one of the input files" in done.err
    done = cli("report", "--ledger", "L.md", "-o", "link.md", "-q")
    assert done.code == ExitCode.USAGE and "is the --ledger it would draw" in done.err
    assert (here / "L.md").read_text() == before
