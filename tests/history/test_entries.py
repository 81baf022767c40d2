"""Every entry `history add` files is one every reader reads back: whatever the commit's
name, however many entries came before, and whatever `--keep` drops. Each of these was
an entry the tool said it 'added' or 'replaced' and no reader ever listed again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icount import results
from icount.history import store
from icount.results import Results
from tests.compare.conftest import Cli, cell, res


def one(median: float) -> Results:
    return res(cell("c", [median] * 3))


def file_as(folder: Path, name: str, median: float) -> None:
    """An entry as another tool (or an older icount) left it in the folder."""
    results.save(folder / name, one(median), None, overwrite=False)


def add(cli: Cli, tmp_path: Path, folder: Path, commit: str, median: float, *more: str) -> str:
    f = tmp_path / "r.json"
    results.save(f, one(median), None, overwrite=True)
    done = cli("history", "add", f, "--dir", folder, "--commit", commit, *more)
    assert done.code == 0, done.err
    return done.err


def shown(cli: Cli, folder: Path) -> list[tuple[str, float]]:
    doc = json.loads(cli("history", "show", folder, "-f", "json").out)
    return list(zip([c["commit"] for c in doc["commits"]], doc["cells"][0]["medians"], strict=True))


@pytest.mark.parametrize(
    "commit",
    ["x.provenance.json", "1234-5678", "0001-a", "a.json", "a..b", "v1.2-rc.3", "9" * 100],
)
def test_a_commit_of_any_allowed_name_is_read_back(tmp_path: Path, cli: Cli, commit: str) -> None:
    folder = tmp_path / "h"
    add(cli, tmp_path, folder, "base", 1)
    add(cli, tmp_path, folder, commit, 2)
    assert shown(cli, folder) == [("base", 1), (commit, 2)]


def test_a_commit_named_like_a_provenance_file_is_refused(tmp_path: Path, cli: Cli) -> None:
    """`0001-v1.provenance.json` is where the provenance of commit `v1` goes, and every
    reader skips it: such a commit was 'added' and never seen again."""
    f = tmp_path / "r.json"
    results.save(f, one(1), {"commit": "v1.provenance"}, overwrite=False)
    for args in (["--commit", "v1.provenance"], []):
        done = cli("history", "add", f, "--dir", tmp_path / "h", *args)
        assert done.code == 2
        assert "commit 'v1.provenance' cannot key a history entry" in done.err
        assert "not ending in .provenance" in done.err
    assert not (tmp_path / "h").exists()


def test_numbers_past_nine_digits_are_read_back(tmp_path: Path, cli: Cli) -> None:
    """The entry after 999999999 was written as 1000000000-COMMIT.json, which the
    reader's 4-9 digits did not match."""
    folder = tmp_path / "h"
    folder.mkdir()
    file_as(folder, "999999999-old.json", 1)
    err = add(cli, tmp_path, folder, "new", 2)
    assert f"added {folder / '1000000000-new.json'}" in err
    assert shown(cli, folder) == [("old", 1), ("new", 2)]
    assert [e.number for e in store.entries(folder)] == [999_999_999, 1_000_000_000]
    add(cli, tmp_path, folder, "newer", 3)
    assert shown(cli, folder)[-1] == ("newer", 3)


def test_a_commit_added_again_replaces_its_file_whatever_its_width(
    tmp_path: Path, cli: Cli
) -> None:
    """An entry named with five digits, re-added, got a second file of four: the folder
    then held the commit twice and every reader refused it."""
    folder = tmp_path / "h"
    folder.mkdir()
    file_as(folder, "00007-abc.json", 1)
    err = add(cli, tmp_path, folder, "abc", 2)
    assert f"replaced {folder / '00007-abc.json'}" in err
    assert sorted(p.name for p in folder.iterdir()) == ["00007-abc.json"]
    assert shown(cli, folder) == [("abc", 2)]


def test_keep_never_drops_the_entry_just_filed(tmp_path: Path, cli: Cli) -> None:
    """Re-adding the oldest commit with --keep wrote its results, then dropped them as
    the oldest entry, while saying 'replaced'."""
    folder = tmp_path / "h"
    for i, c in enumerate(["c1", "c2", "c3", "c4", "c5"], 1):
        add(cli, tmp_path, folder, c, i)
    err = add(cli, tmp_path, folder, "c1", 10, "--keep", "3")
    assert f"replaced {folder / '0001-c1.json'}; dropped the 2 oldest" in err
    assert shown(cli, folder) == [("c1", 10), ("c4", 4), ("c5", 5)]
    err = add(cli, tmp_path, folder, "c6", 6, "--keep", "1")
    assert shown(cli, folder) == [("c6", 6)]
    assert sorted(p.name for p in folder.iterdir()) == ["0006-c6.json"]


def test_a_full_history_refuses_before_writing(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One entry past the most a folder may hold was written, and then the folder could
    not be read at all."""
    monkeypatch.setattr(store, "MAX_ENTRIES", 3)
    folder = tmp_path / "h"
    for i, c in enumerate(["c1", "c2", "c3"], 1):
        add(cli, tmp_path, folder, c, i)
    f = tmp_path / "r.json"
    done = cli("history", "add", f, "--dir", folder, "--commit", "c4")
    assert done.code == 2 and "holds 3 entries, the most it may (pass --keep N" in done.err
    assert [e.commit for e in store.entries(folder)] == ["c1", "c2", "c3"]
    add(cli, tmp_path, folder, "c3", 30)  # a commit of the history replaced: no more entries
    add(cli, tmp_path, folder, "c4", 4, "--keep", "3")
    assert shown(cli, folder) == [("c2", 2), ("c3", 30), ("c4", 4)]


def test_only_ascii_digits_number_an_entry(tmp_path: Path) -> None:
    """'٠٠٠٢' (Arabic-Indic) matched \\d and int() read it as 2: not an entry's number."""
    folder = tmp_path / "h"
    folder.mkdir()
    file_as(folder, "0001-aaa.json", 100)
    file_as(folder, "\u0660\u0660\u0660\u0662-bbb.json", 200)
    assert [(e.number, e.commit) for e in store.entries(folder)] == [(1, "aaa")]


def test_show_and_add_name_a_file_given_as_the_folder_alike(tmp_path: Path, cli: Cli) -> None:
    f = tmp_path / "h"
    results.save(f, one(100), None, overwrite=False)
    shown = cli("history", "show", f)
    added = cli("history", "add", f, "--dir", f, "--commit", "abc")
    assert shown.code == added.code == 2
    assert shown.err.startswith(f"icount: error: history {f} is not a folder")
    assert added.err.startswith(f"icount: error: history {f} is not a folder")
