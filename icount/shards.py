"""Shards: the cells of one session split over several machines (CI matrix jobs).

`--shard I/N` (or the CI engine's own variables) picks shard I of N; `assign` gives
every cell of the plan to one shard, from the plan alone, so that every machine that
plans the same session makes the same split, run after run. Each shard's results file
carries the whole plan (results/shard.py), and results/merge.py joins the files back
into the session's results, exactly as an unsharded run would have written them.

Where the shard comes from, first match wins:
  --shard I/N                                  the flag (GitHub Actions: matrix values)
  --shard none                                 no shard, whatever the environment says
  CI_NODE_INDEX / CI_NODE_TOTAL                GitLab `parallel:` (1-based)
  BUILDKITE_PARALLEL_JOB / _JOB_COUNT          Buildkite `parallelism` (0-based)
  JOB_COMPLETION_INDEX + --shard-total N       a Kubernetes Indexed Job (0-based)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icount.errors import UsageError
from icount.results.shard import MAX_SHARDS, PlanEntry, ShardRecord

NO_SHARD = ("none", "off")


@dataclass(frozen=True)
class ShardSpec:
    index: int  # 1-based
    total: int
    source: str  # where it was read from, for the user and the provenance

    @property
    def label(self) -> str:
        return f"{self.index}/{self.total}"

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "total": self.total, "source": self.source}


def parse_shard(text: str) -> tuple[int, int] | None:
    """'2/3' -> (2, 3); 'none' -> None. UsageError for anything else."""
    if text.strip().lower() in NO_SHARD:
        return None
    # ASCII digits only, as every number icount reads (icount/numparse.py): \d takes
    # Arabic-Indic digits
    m = re.fullmatch(r"\s*([0-9]{1,9})\s*/\s*([0-9]{1,9})\s*", text)
    if m is None:
        raise UsageError(f"--shard takes I/N (e.g. 2/3) or none, got {text!r}")
    index, total = int(m.group(1)), int(m.group(2))
    _check(index, total, f"--shard {text.strip()}")
    return index, total


def _check(index: int, total: int, what: str) -> None:
    if not 1 <= total <= MAX_SHARDS:
        raise UsageError(f"{what}: the number of shards must be 1 to {MAX_SHARDS}")
    if not 1 <= index <= total:
        raise UsageError(f"{what}: shard {index} is not one of 1 to {total}")


def _env_int(env: Mapping[str, str], name: str) -> int:
    text = env[name].strip()
    if not re.fullmatch(r"[0-9]{1,9}", text):
        raise UsageError(
            f"${name} is {env[name]!r}, not a number", hint="pass --shard I/N or --shard none"
        )
    return int(text)


def _from_pair(
    env: Mapping[str, str], index_var: str, total_var: str, base: int, engine: str
) -> ShardSpec:
    if total_var not in env:
        raise UsageError(
            f"${index_var} is set but ${total_var} is not", hint="pass --shard I/N or --shard none"
        )
    index, total = _env_int(env, index_var) + 1 - base, _env_int(env, total_var)
    source = f"{engine}: {index_var}={env[index_var]}, {total_var}={env[total_var]}"
    _check(index, total, source)
    return ShardSpec(index, total, source)


def resolve(flag: str | None, total_flag: int | None, env: Mapping[str, str]) -> ShardSpec | None:
    """The shard this process measures, or None for the whole session."""
    if flag is not None:
        if total_flag is not None:
            raise UsageError("--shard-total goes with $JOB_COMPLETION_INDEX, not with --shard I/N")
        parsed = parse_shard(flag)
        return None if parsed is None else ShardSpec(*parsed, f"--shard {flag.strip()}")
    found = [
        var
        for var in ("CI_NODE_INDEX", "BUILDKITE_PARALLEL_JOB", "JOB_COMPLETION_INDEX")
        if env.get(var, "").strip()
    ]
    if len(found) > 1:
        raise UsageError(
            f"{' and '.join('$' + v for v in found)} are set at once: which shard is this?",
            hint="pass --shard I/N, or --shard none",
        )
    var = found[0] if found else None
    if var != "JOB_COMPLETION_INDEX" and total_flag is not None:
        raise UsageError(
            "--shard-total gives the total of a Kubernetes Indexed Job, but "
            "$JOB_COMPLETION_INDEX is not set",
            hint="pass --shard I/N",
        )
    if var == "CI_NODE_INDEX":
        # GitLab sets CI_NODE_INDEX only for `parallel:` jobs (parallel:matrix too)
        return _from_pair(env, "CI_NODE_INDEX", "CI_NODE_TOTAL", 1, "GitLab parallel")
    if var == "BUILDKITE_PARALLEL_JOB":
        return _from_pair(
            env,
            "BUILDKITE_PARALLEL_JOB",
            "BUILDKITE_PARALLEL_JOB_COUNT",
            0,
            "Buildkite parallelism",
        )
    if var == "JOB_COMPLETION_INDEX":
        if total_flag is None:
            raise UsageError(
                "$JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job), but not how many "
                "shards there are",
                hint="pass --shard-total N (the Job's completions), or --shard none",
            )
        index = _env_int(env, "JOB_COMPLETION_INDEX") + 1
        source = (
            f"Kubernetes Indexed Job: JOB_COMPLETION_INDEX={env['JOB_COMPLETION_INDEX']}, "
            f"--shard-total {total_flag}"
        )
        _check(index, total_flag, source)
        return ShardSpec(index, total_flag, source)
    return None


def assign(costs: Sequence[float], total: int) -> tuple[int, ...]:
    """The shard (1-based) of each cell: the costliest cells first, each to the shard
    with the least work so far (ties: the lowest shard), ties between cells by their
    place in the plan. Cells of equal cost go round-robin, in plan order."""
    load = [0.0] * total
    shard_of = [0] * len(costs)
    for i in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        s = min(range(total), key=lambda s: (load[s], s))
        load[s] += costs[i]
        shard_of[i] = s + 1
    return tuple(shard_of)


@dataclass(frozen=True)
class PlannedCell:
    """A cell of the session before it is measured: its key, what it is measured with
    (no machine-specific CPU numbers or paths where avoidable) and its expected cost."""

    name: str
    path: str
    backend: str
    identity: Mapping[str, Any]
    cost: float

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.name, self.path, self.backend)


def make_record(command: str, planned: Sequence[PlannedCell], spec: ShardSpec) -> ShardRecord:
    shard_of = assign([p.cost for p in planned], spec.total)
    entries = tuple(
        PlanEntry(p.name, p.path, p.backend, p.identity, p.cost, s)
        for p, s in zip(planned, shard_of, strict=True)
    )
    return ShardRecord(command, spec.index, spec.total, entries)


def describe(record: ShardRecord, spec: ShardSpec, limit: int = 8) -> str:
    """'shard 2/3 (--shard 2/3): 2 of 5 cells: c-epoll/json/callgrind, nginx/...'"""
    mine = [e.key_text for e in record.assigned()]
    shown = ", ".join(mine[:limit]) + (
        f", ... ({len(mine) - limit} more)" if len(mine) > limit else ""
    )
    what = f"{len(mine)} of {len(record.plan)} cells" + (f": {shown}" if mine else "")
    return f"shard {spec.label} ({spec.source}): {what}"
