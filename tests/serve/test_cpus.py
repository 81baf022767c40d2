"""CPU lists and the server/load split."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from icount.errors import UsageError
from icount.serve import cpus


def test_parse_and_format_cpu_lists() -> None:
    assert cpus.parse_cpu_list("0", "--x") == (0,)
    assert cpus.parse_cpu_list("3,0-2, 6", "--x") == (0, 1, 2, 3, 6)
    assert cpus.format_cpu_list((0, 1, 2, 5, 7, 8)) == "0-2,5,7-8"
    for bad in ("", "a", "3-1", "-1", "0-99999"):
        with pytest.raises(UsageError, match="--x"):
            cpus.parse_cpu_list(bad, "--x")


def test_default_split_gives_each_side_its_own_cpus() -> None:
    assert cpus.split(None, None, allowed=(0, 1)) == cpus.CpuSplit(
        (0,), (1,), "allowed CPUs split in two halves"
    )
    four = cpus.split(None, None, allowed=(0, 1, 2, 3))
    assert (four.server, four.load) == ((0, 1), (2, 3))
    one = cpus.split(None, None, allowed=(3,))
    assert (one.server, one.load) == ((3,), (3,)) and "share" in one.why


def test_one_side_given_takes_the_rest_for_the_other() -> None:
    s = cpus.split((2,), None, allowed=(0, 1, 2, 3))
    assert (s.server, s.load) == ((2,), (0, 1, 3))
    s = cpus.split(None, (0,), allowed=(0, 1))
    assert (s.server, s.load) == ((1,), (0,))


def test_bad_splits_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="share CPU 1"):
        cpus.split((0, 1), (1,), allowed=(0, 1, 2))
    with pytest.raises(UsageError, match="CPU 7 is not available"):
        cpus.split((7,), None, allowed=(0, 1))
    with pytest.raises(UsageError, match="takes every allowed CPU"):
        cpus.split((0, 1), None, allowed=(0, 1))


def test_pinned_self_restores_the_affinity() -> None:
    before = os.sched_getaffinity(0)
    one = min(before)
    with cpus.pinned_self([one]):
        assert os.sched_getaffinity(0) == {one}
    assert os.sched_getaffinity(0) == before


def test_isolated_and_governor_read_from_sysfs(tmp_path: Path) -> None:
    (tmp_path / "isolated").write_text("2-3\n")
    (tmp_path / "cpu1" / "cpufreq").mkdir(parents=True)
    (tmp_path / "cpu1" / "cpufreq" / "scaling_governor").write_text("performance\n")
    assert cpus.isolated_cpus(tmp_path) == "2-3"
    assert cpus.governors([0, 1], tmp_path) == {"1": "performance"}
    assert cpus.isolated_cpus(tmp_path / "missing") is None
