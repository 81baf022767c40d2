"""What a shard file records about the session it is part of: the shard record.

A sharded session (`--shard I/N`) measures only the cells assigned to shard I, but
every shard file carries the whole plan: each cell of the session, in the order it
was asked for, with what it is measured with (`identity`), its expected cost and the
shard it went to. Merging (results/merge.py) checks the files against it: shards of
one plan, none missing, none twice, each holding exactly its own cells.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from icount.jsonout import dumps
from icount.results.fields import count, free_form, int_, list_, obj, positive_int, str_
from icount.text import printable

MAX_SHARDS = 10000  # --shard I/N takes N up to this; a file claiming more is no shard's


@dataclass(frozen=True)
class PlanEntry:
    """One cell of the whole session, as planned before any shard measured it."""

    name: str
    path: str
    backend: str
    identity: Mapping[str, Any]  # what moves the cell's count, machine-independent
    cost: float  # expected work (e.g. requests sent); equal where the plan cannot tell
    shard: int  # 1-based

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.name, self.path, self.backend)

    @property
    def key_text(self) -> str:
        return "/".join(p for p in self.key if p)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "backend": self.backend,
            "identity": dict(self.identity),
            "cost": self.cost,
            "shard": self.shard,
        }


def plan_digest(command: str, entries: tuple[PlanEntry, ...]) -> str:
    """sha256 of what the plan measures (cells in order and their identity), not of how
    it was split: two shards of one session share it whatever their index."""
    doc = [command, [[e.name, e.path, e.backend, dict(e.identity)] for e in entries]]
    return hashlib.sha256(dumps(doc).encode()).hexdigest()


@dataclass(frozen=True)
class ShardRecord:
    command: str  # "run" or "serve": the icount command of the session
    index: int  # 1-based
    total: int
    plan: tuple[PlanEntry, ...]

    @functools.cached_property
    def digest(self) -> str:
        return plan_digest(self.command, self.plan)

    @functools.cached_property
    def _orders(self) -> dict[tuple[str, str, str], int]:
        return {e.key: i for i, e in enumerate(self.plan)}

    @property
    def label(self) -> str:
        return f"{self.index}/{self.total}"

    def assigned(self, index: int | None = None) -> tuple[PlanEntry, ...]:
        """The plan's cells of shard `index` (this shard's by default), in plan order."""
        want = self.index if index is None else index
        return tuple(e for e in self.plan if e.shard == want)

    def order(self, key: tuple[str, str, str]) -> int | None:
        """Where the cell stands in the whole plan (its Cell.order)."""
        return self._orders.get(key)

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "index": self.index,
            "total": self.total,
            "plan_digest": self.digest,
            "plan": [e.to_json() for e in self.plan],
        }


def shard_from_json(doc: Any) -> ShardRecord:
    """A version-2 `shard` object back into its type (TypeError/ValueError when malformed
    or when its stored digest disagrees with its plan)."""
    d = obj(doc, "shard")
    total = positive_int(d["total"], "shard.total")
    if total > MAX_SHARDS:  # merging lists the shards missing: 10**8 of them took 1.45 GB
        raise ValueError(
            f"shard.total {total} is beyond the {MAX_SHARDS} shards icount splits into"
        )
    index = positive_int(d["index"], "shard.index")
    if index > total:
        raise ValueError(f"shard.index {index} is beyond shard.total {total}")
    entries = []
    for item in list_(d["plan"], "shard.plan"):
        e = obj(item, "shard.plan entry")
        shard = int_(e["shard"], "shard.plan.shard")
        if not 1 <= shard <= total:
            raise ValueError(f"shard.plan assigns a cell to shard {shard} of {total}")
        entries.append(
            PlanEntry(
                name=str_(e["name"], "shard.plan.name"),
                path=str_(e["path"], "shard.plan.path"),
                backend=str_(e["backend"], "shard.plan.backend"),
                identity=free_form(e["identity"], "shard.plan.identity"),
                cost=count(e["cost"], "shard.plan.cost"),
                shard=shard,
            )
        )
    keys = {e.key for e in entries}
    if len(keys) < len(entries):
        twice = next(e for i, e in enumerate(entries) if e.key in {f.key for f in entries[:i]})
        raise ValueError(f"shard.plan holds the cell {printable(twice.key_text)} twice")
    command = str_(d["command"], "shard.command")
    if command not in ("run", "serve"):
        raise ValueError(f"shard.command {command!r} is not run or serve")
    record = ShardRecord(command, index, total, tuple(entries))
    stored = str_(d["plan_digest"], "shard.plan_digest")
    if stored != record.digest:
        raise ValueError("shard.plan_digest disagrees with shard.plan (an edited file?)")
    return record
