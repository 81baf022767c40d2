"""Which shard a process measures (--shard, the CI engines' variables) and how a
plan's cells are split between shards."""

from __future__ import annotations

import pytest

from icount import shards
from icount.errors import UsageError
from icount.shards import PlannedCell, ShardSpec, assign, resolve


def test_the_flag_wins_over_every_engine() -> None:
    env = {"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "4", "BUILDKITE_PARALLEL_JOB": "0"}
    assert resolve("2/3", None, env) == ShardSpec(2, 3, "--shard 2/3")
    assert resolve(" 3 / 3 ", None, {}) == ShardSpec(3, 3, "--shard 3 / 3")
    assert resolve("none", None, env) is None  # the whole session, whatever CI says
    assert resolve(None, None, {}) is None


def test_gitlab_is_one_based_and_buildkite_and_kubernetes_zero_based() -> None:
    gitlab = resolve(None, None, {"CI_NODE_INDEX": "3", "CI_NODE_TOTAL": "3"})
    assert gitlab == ShardSpec(3, 3, "GitLab parallel: CI_NODE_INDEX=3, CI_NODE_TOTAL=3")
    buildkite = {"BUILDKITE_PARALLEL_JOB": "0", "BUILDKITE_PARALLEL_JOB_COUNT": "2"}
    assert resolve(None, None, buildkite) == ShardSpec(
        1, 2, "Buildkite parallelism: BUILDKITE_PARALLEL_JOB=0, BUILDKITE_PARALLEL_JOB_COUNT=2"
    )
    k8s = resolve(None, 4, {"JOB_COMPLETION_INDEX": "3"})
    assert k8s == ShardSpec(4, 4, "Kubernetes Indexed Job: JOB_COMPLETION_INDEX=3, --shard-total 4")
    # GitLab sets CI_NODE_TOTAL=1 in every job, CI_NODE_INDEX only in parallel ones
    assert resolve(None, None, {"CI_NODE_TOTAL": "1"}) is None


@pytest.mark.parametrize(
    ("flag", "total", "env", "message"),
    [
        ("2", None, {}, "--shard takes I/N"),
        ("0/3", None, {}, "shard 0 is not one of 1 to 3"),
        ("4/3", None, {}, "shard 4 is not one of 1 to 3"),
        ("1/0", None, {}, "the number of shards must be 1 to"),
        ("1/2", 2, {}, "--shard-total goes with $JOB_COMPLETION_INDEX"),
        (None, 3, {}, "$JOB_COMPLETION_INDEX is not set"),
        (None, None, {"JOB_COMPLETION_INDEX": "0"}, "pass --shard-total N"),
        (None, 2, {"JOB_COMPLETION_INDEX": "2"}, "shard 3 is not one of 1 to 2"),
        (None, None, {"CI_NODE_INDEX": "1"}, "$CI_NODE_TOTAL is not"),
        (None, None, {"CI_NODE_INDEX": "x", "CI_NODE_TOTAL": "2"}, "$CI_NODE_INDEX is 'x'"),
        (None, None, {"CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "2"}, "shard 0 is not one of"),
        (
            None,
            None,
            {"BUILDKITE_PARALLEL_JOB": "2", "BUILDKITE_PARALLEL_JOB_COUNT": "2"},
            "shard 3 is not one of 1 to 2",
        ),
        (
            None,
            None,
            {"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "2", "BUILDKITE_PARALLEL_JOB": "0"},
            "$CI_NODE_INDEX and $BUILDKITE_PARALLEL_JOB are set at once",
        ),
    ],
)
def test_bad_shards_are_refused_naming_the_source(
    flag: str | None, total: int | None, env: dict[str, str], message: str
) -> None:
    with pytest.raises(UsageError) as e:
        resolve(flag, total, env)
    assert message in str(e.value)


def test_equal_cells_go_round_robin_in_plan_order() -> None:
    assert assign([1.0] * 7, 3) == (1, 2, 3, 1, 2, 3, 1)
    assert assign([1.0] * 2, 3) == (1, 2)  # shard 3 gets nothing, and still exists
    assert assign([], 2) == ()


def test_costly_cells_are_spread_first_and_the_split_is_balanced() -> None:
    # Node's 10,000-request warm-up against 100 for the others (3 runs x 3 reps x 1000)
    costs = [3 * (100 + 3000)] * 6 + [3 * (10000 + 3000)] * 2
    got = assign(costs, 3)
    assert got == (3, 3, 3, 3, 3, 1, 1, 2)
    loads = [sum(c for c, s in zip(costs, got, strict=True) if s == k) for k in (1, 2, 3)]
    # longest-first greedy: no shard exceeds the best possible by more than one small cell
    assert max(loads) - min(loads) <= 3 * 3100
    assert assign(costs, 3) == got  # a pure function of the plan: every machine agrees


def test_a_record_describes_the_shard_and_holds_the_whole_plan() -> None:
    planned = [PlannedCell(f"c{i}", "p", "callgrind", {"requests": i}, 1.0) for i in range(10)]
    record = shards.make_record("serve", planned, ShardSpec(2, 3, "--shard 2/3"))
    assert [e.name for e in record.assigned()] == ["c1", "c4", "c7"]
    assert len(record.plan) == 10 and record.label == "2/3"
    assert record.order(("c4", "p", "callgrind")) == 4
    text = shards.describe(record, ShardSpec(2, 3, "--shard 2/3"), limit=2)
    assert (
        text
        == "shard 2/3 (--shard 2/3): 3 of 10 cells: c1/p/callgrind, c4/p/callgrind, ... (1 more)"
    )
    # the digest is of what is measured, the same for every shard of the session
    other = shards.make_record("serve", planned, ShardSpec(3, 3, "x"))
    assert other.digest == record.digest
    changed = shards.make_record(
        "serve", [*planned[:9], PlannedCell("c9", "p", "callgrind", {"requests": 0}, 1.0)],
        ShardSpec(2, 3, "x"),
    )  # fmt: skip
    assert changed.digest != record.digest
    assert shards.make_record("run", planned, ShardSpec(2, 3, "x")).digest != record.digest
