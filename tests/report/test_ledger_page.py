"""icount report --ledger: the ledger of icount compare --ledger as a page section."""

from __future__ import annotations

from pathlib import Path

from icount.charts import ledger
from icount.compare.ledger import parse
from icount.errors import ExitCode
from tests.support.cli import run_icount_here

LEDGER = Path(__file__).resolve().parents[1] / "compare" / "golden" / "ledger.md"


def test_each_entry_is_a_row() -> None:
    item = ledger.load(LEDGER, "LEDGER.md")
    kept, rejected = item.entries
    assert (kept.date, kept.decision, kept.note) == ("2025-12-01", "kept", "unroll the loop by 4")
    assert kept.geomean == "1.0142 (+1.42%)"
    assert kept.moved == ["loop: 2107284 → 2137284 (+1.42%, regressed)"]
    assert (rejected.decision, rejected.moved) == ("rejected", [])
    html = ledger.ledger_section(item, "s1")
    assert "2 changes tried, 1 kept, 1 rejected." in html
    assert "<td>loop: 2107284 → 2137284 (+1.42%, regressed)</td>" in html


def test_a_note_with_markup_is_text() -> None:
    (entry,) = parse("## 2025-12-01 · kept · <script>x</script>\n")
    assert "<script>" not in ledger.ledger_section(ledger.LedgerInput("L", (entry,)), "s1")


def test_the_report_has_a_ledger_page(tmp_path: Path) -> None:
    done = run_icount_here(["report", "--ledger", str(LEDGER), "-o", "r.html"], tmp_path)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "r.html").read_text()
    assert f"Ledger: {LEDGER}" in page and "unroll the loop by 4" in page


def test_a_file_that_is_no_ledger_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# notes\n\nnothing here\n")
    done = run_icount_here(["report", "--ledger", "notes.md", "-o", "r.html"], tmp_path)
    assert done.returncode == ExitCode.BAD_INPUT
    assert done.stderr == (
        "icount: error: notes.md: no entry (## DATE · DECISION · NOTE): not a ledger\n"
    )
