"""CPU lists and the server/load split."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from icount import cpus
from icount.errors import UsageError


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


def _jobs(base: cpus.CpuSplit, jobs: int, **kw: bool) -> cpus.JobCpus:
    opts = {"explicit": False, "load_independent": True, **kw}
    return cpus.split_jobs(base, jobs, backend="callgrind", **opts)


def test_jobs_get_their_own_server_and_load_cpus_where_there_are_enough() -> None:
    eight = cpus.split(None, None, allowed=tuple(range(8)))
    got = _jobs(eight, 2, load_independent=False)  # clean: allowed under perf too
    assert [(s.server, s.load) for s in got.splits] == [((0, 1), (4, 5)), ((2, 3), (6, 7))]
    assert not got.shared
    three = _jobs(eight, 3)
    assert [(s.server, s.load) for s in three.splits] == [
        ((0, 1), (4, 5)), ((2,), (6,)), ((3,), (7,))
    ]  # fmt: skip
    one = _jobs(eight, 1)
    assert one.splits == (eight,) and not one.shared


def test_jobs_share_cpus_under_callgrind_spreading_the_servers() -> None:
    two = cpus.split(None, None, allowed=(0, 1))
    got = _jobs(two, 2)
    # each server on a CPU of its own, each load beside the other job's server
    assert [(s.server, s.load) for s in got.splits] == [((0,), (1,)), ((1,), (0,))]
    assert got.shared
    assert got.why.startswith("2 jobs need 2 server and 2 load CPUs to have their own, and "
                              "there are server CPU 0 and load CPU 1: jobs share CPUs")  # fmt: skip
    assert "grows with the longer wall time" in got.why
    # sets given on the command line are kept: servers on server CPUs, loads on load CPUs
    given = cpus.split((0,), (1,), allowed=(0, 1))
    kept = _jobs(given, 2, explicit=True)
    assert [(s.server, s.load) for s in kept.splits] == [((0,), (1,)), ((0,), (1,))]
    only = _jobs(cpus.split(None, None, allowed=(5,)), 3)
    assert {(s.server, s.load) for s in only.splits} == {((5,), (5,))}


def test_jobs_that_would_share_cpus_are_refused_under_perf() -> None:
    two = cpus.split(None, None, allowed=(0, 1, 2))
    with pytest.raises(UsageError) as e:
        cpus.split_jobs(two, 2, explicit=False, load_independent=False, backend="perf")
    assert str(e.value).startswith(
        "--jobs 2 under perf: 2 jobs need 2 server and 2 load CPUs to have their own, and "
        "there are server CPU 0 and load CPUs 1-2; perf counts on the real CPU"
    )
    assert "lower --jobs" in str(e.value)


def test_commands_at_once_split_the_allowed_cpus() -> None:
    assert cpus.command_cpus((0, 1, 2, 3), 2, load_independent=False, backend="perf") == (
        (0, 1),
        (2, 3),
    )
    assert cpus.command_cpus((0, 1), 3, load_independent=True, backend="callgrind") == (
        (0,),
        (1,),
        (0,),
    )
    with pytest.raises(UsageError, match="--jobs 3 under perf: 3 commands at once need 3 CPUs"):
        cpus.command_cpus((0, 1), 3, load_independent=False, backend="perf")
