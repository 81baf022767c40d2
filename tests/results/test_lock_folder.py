"""Where `run` and `serve` keep the lock on the output they write (results/files.py):
a folder of this user's alone, chosen the same way by every icount of the user, and
one another local user cannot take away by making it first."""

from __future__ import annotations

import os
import pwd
from pathlib import Path
from types import SimpleNamespace

import pytest

from icount.errors import OutputError
from icount.results import files


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """/run/user, /tmp and the home folder, each a folder of tmp_path."""
    run, tmp, home = tmp_path / "run-user", tmp_path / "tmp", tmp_path / "home"
    for folder in (run, tmp, home):
        folder.mkdir()
    monkeypatch.setattr(files, "RUN_USER", run)
    monkeypatch.setattr(files, "LOCK_ROOT", tmp)
    real = pwd.getpwuid

    def getpwuid(uid: int) -> object:
        return SimpleNamespace(pw_dir=str(home)) if uid == os.getuid() else real(uid)

    monkeypatch.setattr(pwd, "getpwuid", getpwuid)
    uid = os.getuid()
    return SimpleNamespace(
        run=run / str(uid),
        tmp=tmp / f"icount-locks-{uid}",
        home=home / ".cache" / "icount" / "locks",
    )


def test_the_users_run_folder_comes_first(places: SimpleNamespace) -> None:
    places.run.mkdir(mode=0o700)
    assert files.lock_folder() == places.run / "icount-locks"
    places.run.chmod(0o755)  # not logind's: /tmp then
    assert files.lock_folder() == places.tmp


def test_a_squatted_tmp_folder_falls_back_to_the_home_folder(
    places: SimpleNamespace, tmp_path: Path
) -> None:
    """A link another user left at /tmp/icount-locks-UID: this user cannot remove it."""
    elsewhere = tmp_path / "theirs"
    elsewhere.mkdir()
    places.tmp.symlink_to(elsewhere)
    assert files.lock_folder() == places.home
    out = tmp_path / "out" / "a.json"
    out.parent.mkdir()
    got = files.output_path(out, "run")
    try:
        assert files.claim_path(got).parent == places.home
        assert list(places.home.iterdir()) and not list(elsewhere.iterdir())
    finally:
        files.release_unused(got)
    assert not list(places.home.iterdir())


def test_no_usable_folder_is_one_line_naming_each_and_a_hint(
    places: SimpleNamespace, tmp_path: Path
) -> None:
    places.tmp.mkdir(mode=0o700)
    places.tmp.chmod(0o777)
    places.home.parent.parent.write_text("")  # ~/.cache a file
    with pytest.raises(OutputError) as e:
        files.claim_path(tmp_path / "a.json")
    text = str(e.value)
    assert text.startswith(f"cannot lock {tmp_path / 'a.json'}: no lock folder of this user's")
    assert f"{places.tmp} can be written by others (mode 777)" in text
    assert str(places.home) in text and "\n" not in text
    assert e.value.hint == f"chmod 700 {places.tmp}"


def test_release_removes_the_lock_it_took_not_what_the_path_names_now(
    places: SimpleNamespace, tmp_path: Path
) -> None:
    out = files.output_path(tmp_path / "a.json", "run")
    lock = files.claim_path(out)
    other = lock.with_name("other")
    other.write_text("")
    os.replace(other, lock)  # another icount's lock file at that name now
    files.release_unused(out)
    assert lock.exists()


def test_lock_files_of_killed_icounts_are_removed_when_another_claims(
    places: SimpleNamespace, tmp_path: Path
) -> None:
    """SIGKILL leaves a lock file no one holds; one a live icount holds stays."""
    import fcntl

    places.tmp.mkdir(mode=0o700)
    stale = places.tmp / ("0" * 32 + ".lock")
    stale.write_text("")
    held = places.tmp / ("1" * 32 + ".lock")
    fd = os.open(held, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        out = files.output_path(tmp_path / "a.json", "run")
        assert not stale.exists() and held.exists()
        files.release_unused(out)
    finally:
        os.close(fd)
    assert sorted(p.name for p in places.tmp.iterdir()) == [held.name]
