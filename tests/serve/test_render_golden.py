"""The serve table (with its binary-size column) rendered from a real results file:
tests/serve/golden/bundled-callgrind.json is `icount serve --runs 3` on the bundled
targets on this project's 2-core VM (callgrind, c-epoll/nginx/node-http/python-asyncio).
Regenerate the expected outputs with ICOUNT_REGOLD=1."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from icount import report, results

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("fmt", ["table", "md", "csv"])
def test_serve_table_golden(fmt: str) -> None:
    res = results.load(GOLDEN / "bundled-callgrind.json")
    # the binary-size column comes from the cells themselves, as in `icount table`
    text = report.render_results(res, fmt, 100)
    expected = GOLDEN / f"bundled-callgrind.{fmt}"
    if os.environ.get("ICOUNT_REGOLD"):
        expected.write_text(text)
    assert text == expected.read_text()
    if fmt != "csv":
        assert "17.66 KiB" in text  # c-epoll's binary, from the cell's extra
