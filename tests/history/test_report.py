"""`icount report --history DIR`: a line per cell over the commits, a point per commit
holding the cell, each point's title its exact median, the same bytes every time."""

from __future__ import annotations

import re
from pathlib import Path

from icount import results
from tests.compare.conftest import Cli

from .test_history import COMMITS, NOISY, STEADY, commit_results


def test_report_draws_each_cell_over_the_commits(tmp_path: Path, cli: Cli) -> None:
    folder = tmp_path / "history"
    for i, (commit, median) in enumerate(zip(COMMITS, NOISY, strict=True)):
        f = tmp_path / f"c{i}.json"
        # the noisy cell is missing from the fourth commit: its line skips it
        res = commit_results(median, STEADY)
        if i == 3:
            res = results.Results(res.fingerprint, tuple(c for c in res.cells if c.name != "go"))
        results.save(f, res, {"commit": commit}, overwrite=False)
        assert cli("history", "add", f, "--dir", folder).code == 0
    done = cli("report", "--history", folder, "-o", "-")
    assert done.code == 0, done.err
    page = done.out
    assert f'<h2 id="s1">History: {folder}</h2>' in page
    lines = re.findall(r'<polyline class="line" points="([^"]+)"><title>([^<]+)</title>', page)
    assert [t for _, t in lines] == ["c: 10 commits", "go: 9 commits"]
    xs = [p.split(",")[0] for p in lines[0][0].split()]
    assert xs[0] == "76" and xs[-1] == "704" and len(set(xs)) == 10  # oldest left, evenly
    tips = re.findall(r"<title>go at (\d{4}) (\w+): median ([\d,]+) instructions</title>", page)
    assert [(int(n), c) for n, c, _ in tips] == [(i + 1, COMMITS[i]) for i in range(10) if i != 3]
    assert [m for _, _, m in tips] == [f"{m:,}" for i, m in enumerate(NOISY) if i != 3]
    assert "band: the last median ± its noise" in page
    assert "repeats to the instruction: compare --history gates it exactly" in page
    assert cli("report", "--history", folder, "-o", "-").out == page
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = cli("report", "--history", empty, "-o", "-")
    assert refused.code == 2 and "holds no entry" in refused.err
