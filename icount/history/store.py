"""The history folder: entries `NNNN-COMMIT.json`, added in order, one per commit.

A commit added again replaces its own entry where it stands (a rerun CI job measures
the same commit again), so the folder holds one results file per commit and the order
commits were first measured in. Results go in as `icount table` would write them (a
folder of shard files is merged first), so every entry is one whole session.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icount import results
from icount.errors import UsageError
from icount.results import Results
from icount.text import printable

# A commit as git names it, or any key a CI gives (a tag, a pipeline id): letters,
# digits and ._- only, so that it is a file name everywhere and needs no quoting.
COMMIT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# At least 4 digits, as many more as the number needs: a name is at most 255 bytes, so
# the number read back is bounded.
ENTRY = re.compile(r"([0-9]{4,})-(.+)\.json")  # ASCII: \d takes '٠٠٠٢', int() reads it
PROVENANCE_SUFFIX = ".provenance.json"
# `NNNN-X.provenance.json` is the provenance beside entry `NNNN-X.json`: a commit named
# so would be filed where no reader takes it for an entry.
RESERVED_END = PROVENANCE_SUFFIX.removesuffix(".json")
# More entries than a history can usefully hold; a folder beyond it is refused rather
# than read (each entry may be up to results.MAX_RESULTS_BYTES).
MAX_ENTRIES = 10_000
DIRTY_SHOWN = 5  # modified files a refusal names before counting the rest


@dataclass(frozen=True)
class Entry:
    number: int
    commit: str
    path: Path


@dataclass(frozen=True)
class Added:
    entry: Entry
    replaced: bool  # the commit was in the history already: its entry now holds these results
    removed: tuple[Entry, ...]  # the oldest entries dropped by --keep


def check_commit(commit: str) -> str:
    if not COMMIT.fullmatch(commit) or commit.endswith(RESERVED_END):
        raise UsageError(
            f"commit {printable(commit)!r} cannot key a history entry",
            hint=f"letters, digits and ._- only, at most 100, not ending in {RESERVED_END}, "
            "as git rev-parse prints",
        )
    return commit


def recorded_commit(provenance: Mapping[str, Any], source: str) -> str:
    """The commit a results file's provenance says was measured; UsageError when it
    records none, or a tree with uncommitted changes (its counts are no commit's)."""
    commit = provenance.get("commit")
    if not isinstance(commit, str) or not commit:
        raise UsageError(
            f"{source} records no commit (measured outside a git checkout, or without its "
            "provenance file)",
            hint="pass --commit SHA",
        )
    error = _status_error(provenance.get("dirty"))
    if commit.endswith("-dirty") and error:
        raise UsageError(
            f"{source} measured a tree git could not read, so it may hold uncommitted "
            f"changes ({printable(commit)}: {error})",
            hint="commit first, or pass --commit to key it anyway",
        )
    if commit.endswith("-dirty"):
        raise UsageError(
            f"{source} measured a tree with uncommitted changes "
            f"({printable(commit)}{_dirty_files(provenance.get('dirty'))})",
            hint="commit first, or pass --commit to key it anyway",
        )
    return check_commit(commit)


def _status_error(dirty: Any) -> str:
    """Why git status failed, from a provenance's `dirty` record; "" where it did not."""
    error = dirty.get("error") if isinstance(dirty, dict) else None
    return printable(error) if isinstance(error, str) else ""


def _dirty_files(dirty: Any) -> str:
    """`: a.c, b.c and 3 more` from a provenance's `dirty` record; "" where it has none
    (written by an icount that did not record them) or holds something else."""
    if not isinstance(dirty, dict):
        return ""
    files, count = dirty.get("files"), dirty.get("count")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files) or not files:
        return ""
    total = count if isinstance(count, int) and count >= len(files) else len(files)
    shown = [printable(f) for f in files[:DIRTY_SHOWN]]
    more = total - len(shown)
    return ": " + ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def entries(folder: Path) -> list[Entry]:
    """The history's entries in order; [] for a folder that does not exist yet (a CI
    cache on its first run). Files that are not entries are left alone."""
    if not folder.exists():
        return []
    if not folder.is_dir():
        raise UsageError(f"history {folder} is not a folder")
    found: list[Entry] = []
    try:
        names = sorted(p.name for p in folder.iterdir())
    except OSError as e:
        raise UsageError(f"cannot read history {folder}: {e.strerror or e}") from None
    for name in names:
        m = ENTRY.fullmatch(name)
        if m is None or name.endswith(PROVENANCE_SUFFIX) or not COMMIT.fullmatch(m.group(2)):
            continue
        found.append(Entry(int(m.group(1)), m.group(2), folder / name))
        if len(found) > MAX_ENTRIES:
            raise UsageError(f"history {folder} holds more than {MAX_ENTRIES} entries")
    found.sort(key=lambda e: (e.number, e.commit))
    seen: dict[str, Entry] = {}
    for entry in found:
        if entry.commit in seen:
            raise UsageError(
                f"history {folder} holds commit {entry.commit} twice "
                f"({seen[entry.commit].path.name} and {entry.path.name})",
                hint="remove one of them",
            )
        seen[entry.commit] = entry
    return found


def add(
    folder: Path,
    res: Results,
    provenance: Mapping[str, Any] | None,
    commit: str,
    keep: int = 0,
) -> Added:
    """Add `res` as `commit`'s entry; with `keep`, drop the oldest other entries beyond
    it (the entry just filed stays, however old its commit's place)."""
    check_commit(commit)
    current = entries(folder)
    same = next((e for e in current if e.commit == commit), None)
    if same is not None:  # its own file, whatever width its number was written with
        entry = same
    else:
        number = max((e.number for e in current), default=0) + 1
        entry = Entry(number, commit, folder / f"{number:04d}-{commit}.json")
    others = [e for e in current if e is not same]
    dropped = others[: max(len(others) + 1 - keep, 0)] if keep else []
    if len(others) + 1 - len(dropped) > MAX_ENTRIES:
        raise UsageError(
            f"history {folder} holds {MAX_ENTRIES} entries, the most it may",
            hint="pass --keep N to drop the oldest",
        )
    results.save(entry.path, res, provenance, overwrite=True)
    if provenance is None:  # an older measurement's provenance must not stay beside it
        results.provenance_path(entry.path).unlink(missing_ok=True)
    for old in dropped:
        old.path.unlink(missing_ok=True)
        results.provenance_path(old.path).unlink(missing_ok=True)
    return Added(entry, same is not None, tuple(dropped))


def load(folder: Path) -> list[tuple[Entry, Results]]:
    """Every entry with its results, in order."""
    return [(e, results.load(e.path)) for e in entries(folder)]
