"""Stamps: the commit and session each results file measured, read from the provenance
beside it, so that a table never passes off a stale figure as current.

A page that re-measured every table in one session did so because mixed dates let a
stale comparison survive; another shows "Not measured at X yet." for a suite whose
recorded commit is older than the release. `icount table --at REF` does the second
(`at`), and every table of several files says when they mix commits or sessions
(`mixed`). The shards of one session are one session: merge.py refuses shards
measured at two commits.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from icount.errors import UsageError
from icount.results.model import Cell, Results

DIRTY = "-dirty"  # environment.git_commit: measured with uncommitted changes
_HEX = re.compile(r"^[0-9a-f]{4,40}$")


@dataclass(frozen=True)
class Stamp:
    src: str
    commit: str | None  # None: no provenance beside the file, or not measured in git
    started: str | None  # when the session began (UTC), None when not recorded
    shard: bool  # the file of one shard of a session

    @property
    def short(self) -> str:
        if self.commit is None:
            return "no commit recorded"
        sha, dirty = self.commit.removesuffix(DIRTY), self.commit.endswith(DIRTY)
        return sha[:12] + (" with uncommitted changes" if dirty else "")


def recorded(src: str) -> tuple[str | None, str | None]:
    """(commit, start of the session) from the provenance beside a results file."""
    from icount.results.files import provenance_path, read_json

    prov = provenance_path(Path(src))
    doc = read_json(prov, "provenance file") if prov.is_file() else None
    doc = doc if isinstance(doc, dict) else {}
    commit, started = doc.get("commit"), doc.get("started_utc")
    return (
        commit if isinstance(commit, str) else None,
        started if isinstance(started, str) else None,
    )


def stamp_of(src: str, results: Results) -> Stamp:
    return Stamp(src, *recorded(src), results.shard is not None)


def stamps(named: Sequence[tuple[str, Results]]) -> list[Stamp]:
    return [stamp_of(src, res) for src, res in named]


def mixed(found: Sequence[Stamp]) -> list[str]:
    """What a table of these files mixes: commits, and sessions (files that are not the
    shards of one session, each begun at its own time). Files that record neither
    cannot say, and are not counted as mixing."""
    notes = []
    commits = sorted({s.commit for s in found if s.commit is not None})
    if len(commits) > 1:
        listed = "; ".join(f"{s.src} at {s.short}" for s in found if s.commit is not None)
        notes.append(f"the files were measured at {len(commits)} commits: {listed}")
    sessions = [s for s in found if s.started is not None and not s.shard]
    if len({s.started for s in sessions}) > 1:
        listed = "; ".join(f"{s.src} began {s.started}" for s in sessions)
        notes.append(f"the cells come from {len(sessions)} sessions: {listed}")
    return notes


def resolve(ref: str, cwd: Path) -> str:
    """REF as the commit it names (git, in `cwd`), or as a hex prefix of one where git
    cannot resolve it (results copied from CI, outside the repository)."""
    from icount import procs

    if ref and not ref.startswith("-") and procs.which("git") is not None:
        done = procs.run(
            ["git", "-C", str(cwd), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
            timeout=10,
        )
        if done.ok and done.stdout.strip():
            return done.stdout.decode().strip()
    if _HEX.match(ref.lower()):
        return ref.lower()
    raise UsageError(
        f"--at {ref!r}: no commit of that name here, nor a commit's hex prefix",
        hint="give a commit, branch or tag of the repository icount runs in, or a commit hash",
    )


def measured_at(stamp: Stamp, commit: str) -> bool:
    """Whether the file measured `commit` (a full hash, or a prefix): exactly that
    commit, without uncommitted changes."""
    return (
        stamp.commit is not None
        and not stamp.commit.endswith(DIRTY)
        and stamp.commit.startswith(commit)
    )


def at(named: Sequence[tuple[str, Results]], ref: str, commit: str) -> list[tuple[str, Results]]:
    """The files with every cell of a file measured at another commit than `commit`
    replaced by a cell that says so: its figures are not REF's."""
    out = []
    for (src, res), stamp in zip(named, stamps(named), strict=True):
        if measured_at(stamp, commit):
            out.append((src, res))
            continue
        where = "no commit recorded" if stamp.commit is None else f"measured at {stamp.short}"
        why = f"not measured at {ref} yet ({where})"
        cells = tuple(_stale(c, why) for c in res.cells)
        out.append((src, dataclasses.replace(res, cells=cells)))
    return out


def _stale(cell: Cell, why: str) -> Cell:
    return dataclasses.replace(cell, runs=(), setup_error=why, extra={})
