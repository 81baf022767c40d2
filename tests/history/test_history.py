"""A history of 10 commits, written as the results model writes them: `icount history add`
files them by commit, `show` prints them, and `compare --history` takes each cell's
threshold from its own noise (a Go-like cell that moves ~1% between commits passes a 1%
gate within its noise and fails a real 5% regression; a C-like cell that repeats to the
instruction fails at +1 instruction)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from icount import results
from icount.history import noise, store
from icount.results import Results
from tests.compare.conftest import Cli, cell, res

# The noisy cell's medians over 10 commits: consecutive changes of 0.7-1.4%, as a Go
# server's count moves with its GC from one measurement to the next.
NOISY = [1_000_000, 1_008_000, 996_000, 1_010_000, 999_000, 1_012_000, 1_001_000, 994_000,
         1_006_000, 998_000]  # fmt: skip
STEADY = 500_000
COMMITS = [f"{i:02d}" * 20 for i in range(10)]  # 40 hex digits, as git names a commit


def runs_around(median: float) -> list[float]:
    """Three runs 0.1% apart around `median`: a cell whose runs differ."""
    return [median * 0.999, median, median * 1.001]


def commit_results(noisy: float, steady: float) -> Results:
    return res(cell("go", runs_around(noisy)), cell("c", [steady] * 3))


@pytest.fixture
def history(tmp_path: Path, cli: Cli) -> Path:
    folder = tmp_path / "history"
    for i, (commit, median) in enumerate(zip(COMMITS, NOISY, strict=True)):
        f = tmp_path / f"commit-{i}.json"
        results.save(f, commit_results(median, STEADY), {"commit": commit}, overwrite=False)
        done = cli("history", "add", f, "--dir", folder)
        assert done.code == 0, done.err
        assert f"added {folder / f'{i + 1:04d}-{commit}.json'}" in done.err
    return folder


@pytest.fixture
def put(tmp_path: Path) -> Callable[[str, float, float], Path]:
    def write(name: str, noisy: float, steady: float) -> Path:
        p = tmp_path / name
        results.save(p, commit_results(noisy, steady), None, overwrite=True)
        return p

    return write


def test_the_folder_holds_one_entry_per_commit_in_order(history: Path, tmp_path: Path,
                                                        cli: Cli) -> None:  # fmt: skip
    names = sorted(p.name for p in history.iterdir())
    assert names[:2] == [f"0001-{COMMITS[0]}.json", f"0001-{COMMITS[0]}.provenance.json"]
    entries = store.entries(history)
    assert [e.commit for e in entries] == COMMITS
    assert [e.number for e in entries] == list(range(1, 11))
    # a commit measured again replaces its entry where it stands
    again = tmp_path / "again.json"
    results.save(again, commit_results(1_234_567, STEADY), {"commit": COMMITS[3]}, overwrite=True)
    done = cli("history", "add", again, "--dir", history, "--keep", "8")
    assert done.code == 0, done.err
    assert f"replaced {history / f'0004-{COMMITS[3]}.json'}; dropped the 2 oldest" in done.err
    kept = store.entries(history)
    assert [e.commit for e in kept] == COMMITS[2:]
    assert results.load(kept[1].path).cells[1].summary.median == 1_234_567  # type: ignore[union-attr]
    assert not (history / f"0001-{COMMITS[0]}.provenance.json").exists()


def test_add_needs_a_commit_and_refuses_a_dirty_tree(tmp_path: Path, cli: Cli) -> None:
    bare = tmp_path / "bare.json"
    results.save(bare, commit_results(1, 1), None, overwrite=False)
    done = cli("history", "add", bare, "--dir", tmp_path / "h")
    assert done.code == 2
    assert "records no commit" in done.err and "--commit" in done.err
    dirty = tmp_path / "dirty.json"
    results.save(dirty, commit_results(1, 1), {"commit": "abc123-dirty"}, overwrite=False)
    done = cli("history", "add", dirty, "--dir", tmp_path / "h")
    assert done.code == 2 and "uncommitted changes (abc123-dirty)" in done.err
    done = cli("history", "add", bare, "--dir", tmp_path / "h", "--commit", "../etc")
    assert done.code == 2 and "cannot key a history entry" in done.err
    assert cli("history", "add", bare, "--dir", tmp_path / "h", "--commit", "v1.2").code == 0
    assert [e.commit for e in store.entries(tmp_path / "h")] == ["v1.2"]
    assert not (tmp_path / "h" / "0001-v1.2.provenance.json").exists()


def test_show_prints_every_commit_and_each_cells_noise(history: Path, cli: Cli) -> None:
    done = cli("history", "show", history)
    assert done.code == 0, done.err
    lines = done.out.splitlines()
    first = next(line for line in lines if line.startswith("0001 "))
    assert first.split() == ["0001", COMMITS[0][:10], "500000", "1000000"]  # c, then go
    assert sum(1 for line in lines if line[:4].isdigit()) == 10
    go = next(line for line in lines if line.startswith("go "))
    c = next(line for line in lines if line.startswith("c "))
    fence = noise.of_cells([commit_results(m, STEADY).cells[0] for m in NOISY]).fence
    assert fence is not None and 0.02 < fence < 0.035  # well above the 1.4% largest change
    assert go.split()[-1] == f"{fence * 100:.3f}%" == "2.430%"
    assert c.split()[2:] == ["10", "500000", "500000", "500000", "exact"]
    doc = json.loads(cli("history", "show", history, "-f", "json").out)
    assert doc["format"] == "icount-history"
    assert [x["commit"] for x in doc["commits"]] == COMMITS
    by_name = {x["name"]: x for x in doc["cells"]}
    assert by_name["go"]["medians"] == NOISY
    assert by_name["c"]["noise"] == {"commits": 10, "changes": 9, "fence": 0.0, "exact": True}
    assert (
        cli("history", "show", history, "-f", "json").out
        == cli("history", "show", "--dir", history, "-f", "json").out
    )
    md = cli("history", "show", history, "-f", "md").out
    assert f"| 0010 {COMMITS[9][:10]} | 500000 | 998000 |" in md


def test_a_noisy_cell_within_its_history_passes(history: Path, put: Callable[..., Path],
                                                cli: Cli) -> None:  # fmt: skip
    base = put("base.json", NOISY[-1], STEADY)
    new = put("new.json", NOISY[-1] * 1.013, STEADY)  # +1.3%: above 1%, within its noise
    assert cli("compare", base, new, "-t", "1%").code == 3  # the given 1% alone fails it
    done = cli("compare", base, new, "-t", "1%", "--history", history, "-f", "json")
    assert done.code == 0, done.out + done.err
    doc = json.loads(done.out)
    go = next(r for r in doc["cells"] if r["name"] == "go")
    assert go["verdict"] == "unchanged"
    assert 0.02 < go["threshold"] < 0.035
    assert go["threshold_basis"].startswith("history: Q3 + 3 x IQR of 9 changes between commits")
    assert "above the given 1%" in go["threshold_basis"]
    assert "thresholds from the history of 10 commits" in doc["verdict_line"]


def test_a_deterministic_cell_moved_by_one_instruction_fails(
    history: Path, put: Callable[..., Path], cli: Cli
) -> None:
    base = put("base.json", NOISY[-1], STEADY)
    new = put("new.json", NOISY[-1], STEADY + 1)
    assert cli("compare", base, new).code == 0  # 1% and --min-delta 10 let it through
    done = cli("compare", base, new, "--history", history)
    assert done.code == 3, done.out + done.err
    row = next(line for line in done.out.splitlines() if line.startswith("c "))
    assert row.split()[-4:] == ["0.00%", "0%", "regressed", "[1]"]
    assert "history repeats to the instruction over 10 commits: exact" in done.out


def test_a_real_regression_of_the_noisy_cell_fails(history: Path, put: Callable[..., Path],
                                                   cli: Cli) -> None:  # fmt: skip
    base = put("base.json", NOISY[-1], STEADY)
    new = put("new.json", NOISY[-1] * 1.05, STEADY)
    done = cli("compare", base, new, "--history", history, "-f", "md")
    assert done.code == 3
    assert "- **regressed**: `go` +5.00% (threshold 2." in done.out
    assert "Q3 + 3 x IQR of 9 changes" in done.out


def test_the_given_threshold_wins_when_it_is_larger(history: Path, put: Callable[..., Path],
                                                    cli: Cli) -> None:  # fmt: skip
    base = put("base.json", NOISY[-1], STEADY)
    new = put("new.json", NOISY[-1] * 1.05, STEADY)
    done = cli("compare", base, new, "--history", history, "-t", "go=6%", "-f", "csv")
    assert done.code == 0
    go = next(line for line in done.out.splitlines() if line.startswith("go,"))
    assert ",6,unchanged," in go and "the given 6% is larger" in go


def test_history_of_another_environment_sets_no_threshold(
    history: Path, put: Callable[..., Path], tmp_path: Path, cli: Cli
) -> None:
    base = put("base.json", NOISY[-1], STEADY)
    elsewhere = Results({**res().fingerprint, "cpu_model": "Other CPU"},
                        commit_results(NOISY[-1] * 1.013, STEADY).cells)  # fmt: skip
    new = tmp_path / "elsewhere.json"
    base_other = tmp_path / "base-other.json"
    results.save(new, elsewhere, None, overwrite=False)
    results.save(base_other, Results(elsewhere.fingerprint, results.load(base).cells), None,
                 overwrite=False)  # fmt: skip
    done = cli("compare", base_other, new, "--history", history, "-f", "json")
    assert done.code == 3
    doc = json.loads(done.out)
    assert (
        "history of 0 commits (10 measured in another environment left out)" in doc["verdict_line"]
    )
    assert {r["threshold_basis"] for r in doc["cells"]} == {
        "no commit in the history holds this cell; given applies"
    }


def test_a_short_history_keeps_the_given_threshold(tmp_path: Path, put: Callable[..., Path],
                                                   cli: Cli) -> None:  # fmt: skip
    folder = tmp_path / "short"
    for i in range(3):
        f = put(f"c{i}.json", NOISY[i], STEADY)
        assert cli("history", "add", f, "--dir", folder, "--commit", COMMITS[i]).code == 0
    base = put("base.json", NOISY[-1], STEADY)
    new = put("new.json", NOISY[-1] * 1.013, STEADY + 1)
    done = cli("compare", base, new, "--history", folder, "-f", "json")
    assert done.code == 3
    bases = {r["name"]: r["threshold_basis"] for r in json.loads(done.out)["cells"]}
    assert bases["go"] == "history too short (3 commits, 5 needed); given 1% applies"


def test_history_usage_errors(tmp_path: Path, put: Callable[..., Path], cli: Cli) -> None:
    f = put("r.json", 1, 1)
    assert "unknown history action 'list'" in cli("history", "list", f).err
    assert "history add takes RESULTS --dir DIR" in cli("history", "add", f).err
    assert "no history folder" in cli("history", "show", tmp_path / "none").err
    (tmp_path / "empty").mkdir()
    assert "holds no entry" in cli("history", "show", tmp_path / "empty").err
    assert "unknown format 'csv'" in cli("history", "show", tmp_path / "empty", "-f", "csv").err
    assert cli("compare", f, f, "--history", tmp_path / "none").code == 0  # no history yet
    assert (
        "--history and --confirm compare results files"
        in cli("compare", "--interleave", "--base-cmd", "a", "--new-cmd", "b", "--confirm", "2").err
    )
