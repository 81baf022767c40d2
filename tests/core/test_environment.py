"""The measured environment: fixed env, fixed-length work dirs, ASLR, fingerprint."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icount import environment
from icount.errors import UsageError


def test_clean_env_is_fixed_and_minimal(tmp_path: Path) -> None:
    env = environment.clean_env(tmp_path, {"FOO": "1"})
    assert env == {
        "PATH": environment.FIXED_PATH,
        "HOME": str(tmp_path),
        "LANG": "C",
        "LC_ALL": "C",
        "PYTHONHASHSEED": "0",
        "TZ": "UTC",
        "FOO": "1",
    }
    assert environment.parse_env_assignments(["A=1", "B=x=y"]) == {"A": "1", "B": "x=y"}
    with pytest.raises(UsageError):
        environment.parse_env_assignments(["=1"])


def test_work_dirs_have_one_length() -> None:
    dirs = [environment.make_workdir() for _ in range(5)]
    try:
        assert len({len(str(d)) for d in dirs}) == 1
    finally:
        for d in dirs:
            d.rmdir()


def test_setarch_refusal_is_detected_and_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "setarch"
    fake.write_text(
        "#!/bin/sh\n"
        "echo 'setarch: failed to set personality to x86_64: Operation not permitted' >&2\n"
        "exit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    environment.aslr_wrapper.cache_clear()
    try:
        prefix, recorded = environment.aslr_wrapper()
    finally:
        environment.aslr_wrapper.cache_clear()
    assert prefix == []
    assert recorded == (
        "on (setarch -R not permitted: setarch: failed to set personality to x86_64: "
        "Operation not permitted)"
    )


def test_fingerprint_holds_what_moves_counts_and_no_host() -> None:
    fp = environment.fingerprint("callgrind", "valgrind 3.19.0", ["valgrind", "--tool=callgrind"])
    for key in environment.COUNT_MOVING_FIELDS:
        assert key in fp
    assert set(fp["cpu_flags"]) <= environment.IFUNC_FLAGS
    assert fp["cpu_flags"] == sorted(fp["cpu_flags"])
    assert "host" not in fp and "started_utc" not in fp
    other = dict(fp, glibc="glibc 2.40", backend="perf")
    assert environment.fingerprint_differences(fp, other) == ["backend", "glibc"]


def test_provenance_is_kept_apart() -> None:
    rec = environment.ProvenanceRecorder(["icount", "run"], Path.cwd())
    prov = rec.finish({"extra": 1})
    for key in ("started_utc", "host", "load1_before", "load1_after", "steal_pct", "commit"):
        assert key in prov
    assert prov["extra"] == 1


# Names as users type them: the collisions the red-team found, and the ones that climb.
NAMES = ["a b", "a_b", "x+y", "x_y", "a/b", "a%2Fb", "+", "", ".", "..", ".x", "c-O2", "é", "e"]


def _folder_checks(name: str, base: Path) -> str:
    folder = environment.safe_name(name)
    assert folder not in ("", ".", "..") and "/" not in folder and "\0" not in folder
    assert "%" not in folder  # valgrind expands %p and %q{} in --callgrind-out-file
    assert len(folder.encode()) <= 255
    assert (base / folder).resolve().parent == base.resolve()  # inside the artifacts folder
    return folder


def test_every_name_has_a_folder_of_its_own(tmp_path: Path) -> None:
    folders = {n: _folder_checks(n, tmp_path) for n in NAMES}
    assert len(set(folders.values())) == len(NAMES), folders
    assert folders["c-O2"] == "c-O2" and folders["a_b"] == "a_b"  # plain names stay readable


@settings(max_examples=150, deadline=None)  # NAMES above holds the edges for sure
@given(st.lists(st.text(max_size=300), min_size=2, max_size=6, unique=True))
def test_safe_name_is_one_to_one(names: list[str]) -> None:
    base = Path("/tmp/icount-artifacts")
    assert len({_folder_checks(n, base) for n in names}) == len(names)


def test_a_work_dir_has_the_same_name_from_run_to_run() -> None:
    """Python hashes its working directory's name (HOME, sys.path): one name for
    consecutive runs keeps its counts exact; runs at the same time get names of their own."""
    first = environment.make_workdir()
    first.rmdir()
    again = environment.make_workdir()
    meanwhile = environment.make_workdir()
    try:
        assert again == first and meanwhile != again
        assert len(str(meanwhile)) == len(str(again))
        assert again.stat().st_mode & 0o077 == 0  # not readable by others, as mkdtemp made it
    finally:
        again.rmdir()
        meanwhile.rmdir()
