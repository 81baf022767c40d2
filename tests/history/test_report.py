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


def test_a_pull_requests_file_is_drawn_after_the_commits_against_the_band(
    tmp_path: Path, cli: Cli
) -> None:
    """`report --history DIR new.json`: new.json's median of each line's cell is a diamond
    after the last commit, coloured and worded by where it falls against the band."""
    folder = tmp_path / "history"
    for i, (commit, median) in enumerate(zip(COMMITS, NOISY, strict=True)):
        f = tmp_path / f"c{i}.json"
        results.save(f, commit_results(median, STEADY), {"commit": commit}, overwrite=False)
        assert cli("history", "add", f, "--dir", folder).code == 0
    new = tmp_path / "new.json"
    # go +0.2% of the last median (998,000): inside its noise; c +1 instruction of an exact cell
    results.save(new, commit_results(999_996, STEADY + 1), {"commit": "ff" * 20}, overwrite=False)
    done = cli("report", "--history", folder, str(new), "-o", "-")
    assert done.code == 0, done.err
    history = done.out.split("<h2")[-1]
    diamonds = re.findall(
        r'<path class="(\w+)" d="M([\d.]+) [^"]*"><title>([^<]+)</title>', history
    )
    by_cell = {tip.split(" in ")[0]: (cls, float(x), tip) for cls, x, tip in diamonds}
    assert set(by_cell) == {"go", "c"}
    cls, x, tip = by_cell["go"]
    assert cls == "same" and "inside the noise band" in tip and "+0.200%" in tip
    cls, x, tip = by_cell["c"]
    assert cls == "reg" and "+1 from the last median; this cell repeats" in tip
    # after the ten commits, at the right end of the axis
    assert x == 704
    xs = re.findall(r'<polyline class="line" points="([^"]+)"><title>go: ', done.out)[0].split()
    assert float(xs[-1].split(",")[0]) < x
    without = cli("report", "--history", folder, "-o", "-").out
    assert "<path class=" not in without.split("<h2")[-1]
