"""A CI workspace: a git checkout holding untracked files (icount's own checkout, a
restored history cache, the results being written). Untracked files are in no commit
and move no count, so they do not make a measurement `-dirty`; a modified tracked file
does, and `history add` names it when it refuses."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from icount import results
from icount.environment import ProvenanceRecorder, git_state
from icount.errors import UsageError
from icount.history import store
from icount.results import Results, files
from tests.compare.conftest import Cli, cell, res


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "ws"
    r.mkdir()
    git(r, "init", "-q")
    for i in range(8):
        (r / f"f{i}.c").write_text(f"int f{i};\n")
    git(r, "add", ".")
    git(r, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    return r


def measured(repo: Path) -> dict[str, object]:
    return ProvenanceRecorder(["icount"], repo).finish()


def one() -> Results:
    return res(cell("c", [100.0] * 3))


def test_untracked_files_leave_the_commit_clean(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    (repo / ".icount").mkdir()
    (repo / ".icount" / "setup.py").write_text("")
    (repo / "icount-history").mkdir()
    (repo / "icount-history" / "0001-x.json").write_text("{}")
    (repo / "head.json").write_text("{}")
    prov = measured(repo)
    assert prov["commit"] == head and "dirty" not in prov
    assert git_state(repo / "icount-history") == {"commit": head}


def test_a_modified_tracked_file_is_dirty_and_named(repo: Path, cli: Cli) -> None:
    head = git(repo, "rev-parse", "HEAD")
    (repo / "f3.c").write_text("int changed;\n")
    git(repo, "mv", "f5.c", "g5.c")  # staged rename: the new name, the old one not twice
    (repo / "untracked.c").write_text("")
    prov = measured(repo)
    assert prov["commit"] == f"{head}-dirty"
    assert prov["dirty"] == {"count": 2, "files": ["f3.c", "g5.c"]}
    f = repo / "r.json"
    results.save(f, one(), prov, overwrite=False)
    done = cli("history", "add", f, "--dir", repo / "h")
    assert done.code == 2
    assert done.err == (
        f"icount: error: {f} measured a tree with uncommitted changes ({head}-dirty: "
        "f3.c, g5.c) (commit first, or pass --commit to key it anyway)\n"
    )


def test_a_refusal_names_a_few_files_then_counts_the_rest(repo: Path, cli: Cli) -> None:
    for i in range(8):
        (repo / f"f{i}.c").write_text("int changed;\n")
    prov = measured(repo)
    assert prov["dirty"] == {"count": 8, "files": [f"f{i}.c" for i in range(8)]}
    f = repo / "r.json"
    results.save(f, one(), prov, overwrite=False)
    err = cli("history", "add", f, "--dir", repo / "h").err
    assert "-dirty: f0.c, f1.c, f2.c, f3.c, f4.c and 3 more)" in err
    assert not (repo / "h").exists()


def test_a_provenance_of_an_older_icount_is_refused_without_names(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"uncommitted changes \(abc-dirty\)"):
        store.recorded_commit({"commit": "abc-dirty"}, "old.json")


def test_the_lock_on_an_output_stays_out_of_the_tree(repo: Path, tmp_path: Path) -> None:
    """`-o sub/a.json` held `sub/.a.json.icount-lock` in the checkout while it measured:
    an untracked file in the workspace (and in any cache or artifact of the folder)."""
    out = results.output_path(repo / "sub" / "a.json", "run")
    try:
        assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
        assert measured(repo)["commit"] == git(repo, "rev-parse", "HEAD")
        lock = files.claim_path(out)
        assert lock.exists() and repo not in lock.parents
        alias = tmp_path / "alias"
        alias.symlink_to(repo)  # the same file by another name: one lock
        with pytest.raises(UsageError, match="another icount is writing"):
            results.output_path(alias / "sub" / "a.json", "run")
    finally:
        results.release_unused(out)
    assert not lock.exists()
    again = results.output_path(alias / "sub" / "a.json", "run")
    results.release_unused(again)


def test_a_tree_git_status_cannot_read_is_not_the_clean_commit(repo: Path, cli: Cli) -> None:
    """A corrupt index: `rev-parse HEAD` answers, `git status` exits 128. The tree may
    hold changes (here f3.c), so the commit is `-dirty`, with git's reason."""
    head = git(repo, "rev-parse", "HEAD")
    (repo / "f3.c").write_text("int changed;\n")
    (repo / ".git" / "index").write_bytes(b"DIRC garbage")
    state = git_state(repo)
    assert state["commit"] == f"{head}-dirty"
    assert state["dirty"]["count"] is None
    assert state["dirty"]["error"].startswith("git status exited 128: ")
    f = repo / "r.json"
    results.save(f, one(), measured(repo), overwrite=False)
    done = cli("history", "add", f, "--dir", repo / "h")
    assert done.code == 2
    assert "measured a tree git could not read" in done.err
    assert "git status exited 128" in done.err and done.err.count("\n") == 1


def test_renames_in_either_status_column_count_once() -> None:
    from icount.environment import _porcelain_paths

    # staged rename (X = R) and a worktree-side one (Y = R): each source path follows
    out = b"R  new.c\0old.c\0 R moved.c\0was.c\0 M f.c\0"
    assert _porcelain_paths(out) == ["new.c", "moved.c", "f.c"]
