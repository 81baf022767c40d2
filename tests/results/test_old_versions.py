"""Results files written by earlier icount versions stay readable: each real file under
fixtures/results/v*/ loads with today's icount and renders the same table, Markdown
and CSV bytes that the icount which wrote it rendered (fixtures/results/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from icount import export, results
from icount.results.details import WINDOW_DUMPS, CommandDetail, ServeDetail

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "results"
OLD = sorted(FIXTURES.glob("v*/*.json"))


def test_there_are_old_files_to_read() -> None:
    assert {p.parent.name for p in OLD} >= {"v1"}
    assert len(OLD) >= 5


@pytest.mark.parametrize("fmt", ["table", "md", "csv"])
@pytest.mark.parametrize("path", OLD, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_old_files_render_as_they_did(path: Path, fmt: str) -> None:
    res = results.load(path)
    assert export.render_results(res, fmt, 100) == path.with_suffix(f".{fmt}").read_text()


def test_the_bundled_session_keeps_its_binary_sizes() -> None:
    text = export.render_results(results.load(FIXTURES / "v1" / "serve-bundled.json"), "table", 100)
    assert "17.66 KiB" in text  # c-epoll's binary, from the cell's extra


def test_v1_details_become_typed_details() -> None:
    run = results.load(FIXTURES / "v1" / "run.json")
    loop = next(c for c in run.cells if c.name == "loop-1k")
    assert loop.runs[0].detail == CommandDetail(exit=0, processes=1)
    failed = next(c for c in run.cells if c.name == "fails")
    assert isinstance(failed.runs[0].detail, CommandDetail) and failed.runs[0].detail.exit == 1

    serve = results.load(FIXTURES / "v1" / "serve.json")
    cell = next(c for c in serve.cells if c.path == "plaintext")
    detail = cell.runs[0].detail
    assert isinstance(detail, ServeDetail)
    assert detail.window == WINDOW_DUMPS and detail.warmup == 100
    assert [r.requests for r in detail.reps] == [300, 300]
    assert detail.request is not None and detail.request.bytes == cell.params["request_bytes"]
    assert cell.params["request_target"] == "/plaintext" and cell.params["http_method"] == "GET"

    auto = results.load(FIXTURES / "v1" / "serve-warmup-auto.json")
    curve = auto.cells[0].runs[0].detail
    assert isinstance(curve, ServeDetail) and len(curve.warmup_curve) >= 2
    # v1 recorded per-request figures of consecutive windows of params.requests each
    assert [n for n, _ in curve.warmup_curve] == [
        300 * (i + 1) for i in range(len(curve.warmup_curve))
    ]
    assert curve.warmup == 300 * len(curve.warmup_curve)

    wrong = results.load(FIXTURES / "v1" / "serve-wrong-answer.json")
    assert wrong.cells[0].runs[0].detail is None
    assert "status 500, expected 200" in str(wrong.cells[0].reason)


@pytest.mark.parametrize("path", OLD, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_old_files_are_rewritten_in_the_new_layout_without_loss(path: Path, tmp_path: Path) -> None:
    """Saved again, an old file is the newest version and reads back to the same cells."""
    old = results.load(path)
    out = tmp_path / "again.json"
    results.save(out, old, None, overwrite=False)
    again = results.load(out)
    assert results.to_json(again)["version"] == results.VERSION
    assert again.sorted() == old.sorted()
    for fmt in ("table", "md", "csv"):
        assert export.render_results(again, fmt, 100) == export.render_results(old, fmt, 100)
