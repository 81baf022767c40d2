"""Results files on disk: bounded reading, loading by format version, atomic writing.

Users keep baselines in CI for months, so every version of the layout stays readable:
`load` reads the file's `version` and hands the document to that version's reader
(`format_v1`, `format_v2`), which returns today's model. Files are always written in
the newest layout.

Format history (bump VERSION and add a line on every change to the layout):
  1 - first version: {format, version, fingerprint, cells[]}; see docs in README.
  2 - typed run details (`window`, `warmup_curve`, reps without stored per-request
      figures, `request` as {bytes, sha256}); cell params `request_target` and
      `http_method` (were `target` and `method`); `setup_error` (was
      `invalid_reason`); a cell's `order` in what was asked for; `shard` (optional)
      in the file of one shard of a session: its index, the total and the whole plan.
      Still 2, read by the same reader (additions that are absent where not measured,
      so files written before read and render byte-identically): a rep's `collector`,
      `compiler`, `runtime_calls` (a collected runtime's own work) and `seconds`, a
      serve detail's `runtime` and `clock_subtracted`; since 2026-12-02 a serve
      detail's `added_windows` and `window_cap`, a rep's `scheduler`, params
      `collectors`, and `spread_explained`'s `figure`, `whole_spread`, `functions_of`
      (docs/results-format.md has the whole list).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from icount.errors import OutputError, ParseError, ResultsFileError, UsageError
from icount.escapes import json_text
from icount.jsonout import dumps
from icount.results.fields import describe
from icount.results.model import Results, sort_key
from icount.text import printable

FORMAT = "icount-results"
PROVENANCE_FORMAT = "icount-provenance"
VERSION = 2
READABLE_VERSIONS = (1, 2)
# Refuse absurd files rather than exhaust memory. Parsed JSON takes ~5x its bytes for
# real results (2,000 serve cells: 7.8 MB on disk, 37 MB parsed) but ~27x for a file
# of tiny values (24 MB of `[],`: 670 MB; 256 MiB of them took 3 GB), so both the bytes
# and the values are bounded, a list or object weighing two: 64 MiB holds ~16,000
# serve cells, 4M weighed values are ~140 MB of real results (34 bytes each) and at
# most ~200 MB parsed whatever they are.
MAX_RESULTS_BYTES = 64 * 1024 * 1024
MAX_JSON_VALUES = 4_000_000
MAX_INT = 2**63  # counts beyond int64 are no measurement icount made
_OUTPUT_HINT = "choose another --output"


def to_json(results: Results) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "fingerprint": dict(results.fingerprint),
        "cells": [c.to_json() for c in sorted(results.cells, key=sort_key)],
    }
    if results.shard is not None:  # absent from whole sessions, so merged shards equal them
        doc["shard"] = results.shard.to_json()
    return doc


def results_json(results: Results) -> str:
    """The results file's text: names with control characters or bidi overrides in it
    are \\u escapes (icount.escapes), the same strings to any reader."""
    return json_text(dumps(to_json(results)))


def write_atomic(path: Path, text: str, *, overwrite: bool) -> None:
    """Write via a temporary file and rename, so a reader never sees half a file.
    OutputError names the file when it cannot be written."""
    if path.exists() and not overwrite:
        raise UsageError(f"{path} exists; refusing to overwrite it", hint="pass --force")
    _check_target(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as e:
        raise _cannot_write(path, e) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; results are meant to be shared
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise _cannot_write(path, e) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_writable(path: Path) -> None:
    """What can be known before a long measurement: `path` can be created or replaced
    (its folder made, a file created in it: a read-only or immutable folder, /proc, a
    parent that is a file all fail here), and is not a directory, FIFO or device
    (the rename would replace /dev/null itself). The folders it makes are removed
    again by `release_unused` if nothing was written into them."""
    _check_target(path)
    try:
        _make_folders(path.parent)
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise _cannot_write(path, e) from None


_MADE: list[Path] = []  # folders check_writable made, deepest last


def _make_folders(folder: Path) -> None:
    missing = []
    for p in (folder, *folder.parents):
        if p.exists():
            break
        missing.append(p)
    if missing and not _MADE:
        import atexit

        # also for the outputs nothing claims (compare, size, report -o): a command that
        # fails after this check leaves no empty folders behind
        atexit.register(_remove_made)
    for p in reversed(missing):
        p.mkdir(exist_ok=True)
        _MADE.append(p)


def _remove_made() -> None:
    """Remove the folders `check_writable` made that stayed empty."""
    while _MADE:
        with contextlib.suppress(OSError):
            _MADE[-1].rmdir()
        _MADE.pop()


def _check_target(path: Path) -> None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        raise _cannot_write(path, e) from None
    else:
        if stat.S_ISDIR(st.st_mode):
            raise OutputError(
                f"{path} is a directory", path=str(path), hint="give --output a file name"
            )
        if not stat.S_ISREG(st.st_mode):
            raise OutputError(
                f"{path} is not a regular file (a FIFO, socket or device)",
                path=str(path),
                hint="give --output a regular file",
            )


def _cannot_write(path: Path, e: OSError) -> OutputError:
    why = e.strerror or type(e).__name__
    # the folder it could not make, say; not the temporary file beside `path`
    shown = e.filename and Path(e.filename).parent != path.parent
    where = f" ({e.filename})" if shown else ""
    return OutputError(f"cannot write {path}: {why}{where}", path=str(path), hint=_OUTPUT_HINT)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def provenance_path(results_path: Path) -> Path:
    return results_path.with_name(results_path.stem + ".provenance.json")


def save(
    path: Path, results: Results, provenance: Mapping[str, Any] | None, *, overwrite: bool
) -> None:
    """Write the results file and its provenance. If `path` cannot be written (its
    folder became read-only, the disk is full), the cells are not lost: they go to a
    new file in the temporary folder, which the OutputError names."""
    try:
        write_atomic(path, results_json(results), overwrite=overwrite)
        if provenance is not None:
            write_atomic(provenance_path(path), json_text(dumps(dict(provenance))), overwrite=True)
    except OutputError as e:
        kept = _save_elsewhere(path, results, provenance)
        raise OutputError(f"{e.message}; {kept}", path=e.path, hint=e.hint) from None


def _save_elsewhere(path: Path, results: Results, provenance: Mapping[str, Any] | None) -> str:
    n = len(results.cells)
    what = f"the {n} cell{'s' if n != 1 else ''} measured so far"
    try:
        fd, name = tempfile.mkstemp(prefix=f"icount-unsaved-{path.stem}-", suffix=".json")
        os.close(fd)
        spare = Path(name)
        write_atomic(spare, results_json(results), overwrite=True)
        if provenance is not None:
            write_atomic(provenance_path(spare), json_text(dumps(dict(provenance))), overwrite=True)
    except (OSError, OutputError) as e:
        return f"{what} could not be saved elsewhere either ({e})"
    return f"{what} {'are' if n != 1 else 'is'} in {spare}"


def next_free_path(directory: Path, stem: str) -> Path:
    """icount-results/run-001.json, -002, ...: a default that never overwrites. The
    number is reserved by creating the run's artifacts folder (`run-001.artifacts`):
    mkdir is atomic, so two icount runs started together in one folder never claim the
    same file. A number whose results, provenance or artifacts exist is skipped."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _cannot_write(directory / f"{stem}-001.json", e) from None
    for i in range(1, 100000):
        candidate = directory / f"{stem}-{i:03d}.json"
        if candidate.exists() or provenance_path(candidate).exists():
            continue
        try:
            candidate.with_suffix(".artifacts").mkdir()
        except FileExistsError:
            continue
        except OSError as e:
            raise _cannot_write(candidate, e) from None
        return candidate
    raise UsageError(f"too many result files in {directory}", hint="pass --output")


def output_path(explicit: Path | None, stem: str, directory: Path = Path("icount-results")) -> Path:
    """The results file to write, made absolute (measured programs run elsewhere) and
    normalised (`sub/../up.json` makes no `sub/`), checked to be writable and claimed
    before anything is measured: a second icount writing the same file is refused at
    once instead of both measuring and one replacing the other's cells."""
    if explicit is not None:
        path = Path(os.path.normpath(explicit))  # as given, for the messages
        if path.suffix == ".artifacts":  # the run's outputs go to a folder of that name
            raise OutputError(
                f"{path} is the name icount gives the folder of a run's outputs",
                path=str(path),
                hint="give --output a name ending in .json",
            )
        if path.with_suffix(".artifacts").exists() and not path.with_suffix(".artifacts").is_dir():
            raise OutputError(
                f"{path.with_suffix('.artifacts')} is a file; the outputs of each run go to "
                "a folder of that name",
                path=str(path),
                hint=_OUTPUT_HINT,
            )
    else:
        path = next_free_path(directory, stem)
    check_writable(path)
    path = path.absolute()
    _claim(path)
    return path


# results file -> the descriptor holding its lock and that lock file's path
_CLAIMS: dict[Path, tuple[int, Path]] = {}


# This user's lock files, one per output being written. Not beside the output: a file
# there is an untracked file in the tree being measured (and in a CI cache or artifact).
# Not under $TMPDIR: two icounts given one output must find one lock whatever their
# environments say. The first of these that is this user's folder alone is taken:
# /run/user/UID (logind's, made 0700 for the user), then /tmp/icount-locks-UID, then,
# where another user made that one first (/tmp is sticky: its owner alone removes it),
# the user's home folder from the password database.
RUN_USER = Path("/run/user")
LOCK_ROOT = Path("/tmp")


def _alone(folder: Path, make: bool) -> str | None:
    """None when `folder` is a folder (not a link) of this user's that no one else can
    write, made if `make`; else why not."""
    try:
        if make:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(folder)
    except OSError as e:
        return f"{folder}: {e.strerror or e}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{folder} is not a folder"
    if st.st_uid != os.getuid():
        return f"{folder} belongs to {_user(st.st_uid)}"
    if st.st_mode & 0o077 if folder.parent == RUN_USER else st.st_mode & 0o022:
        return f"{folder} can be written by others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _user(uid: int) -> str:
    import pwd

    try:
        return f"user {pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def lock_folder() -> Path:
    """The folder of this user's lock files (the first of /run/user/UID/icount-locks,
    /tmp/icount-locks-UID, ~/.cache/icount/locks that is this user's alone); UsageError
    naming each one's problem when none is."""
    import pwd

    uid = os.getuid()
    run = RUN_USER / str(uid)
    if run.is_dir() and _alone(run, make=False) is None:
        why = _alone(run / "icount-locks", make=True)
        if why is None:
            return run / "icount-locks"
    tmp = LOCK_ROOT / f"icount-locks-{uid}"
    why_tmp = _alone(tmp, make=True)
    if why_tmp is None:
        return tmp
    try:
        home = Path(pwd.getpwuid(uid).pw_dir) / ".cache" / "icount" / "locks"
    except KeyError:
        raise UsageError(
            f"no lock folder of this user's alone: {why_tmp}; uid {uid} has no home folder",
            hint=f"ask its owner to remove {tmp}",
        ) from None
    why_home = _alone(home, make=True)
    if why_home is None:
        return home
    raise UsageError(
        f"no lock folder of this user's alone: {why_tmp}; {why_home}",
        hint=f"chmod 700 {tmp}" if "by others" in why_tmp else f"make {home} this user's",
    )


def claim_path(path: Path) -> Path:
    """The file whose lock says that an icount is writing `path`: named by a digest of
    `path` resolved, so that every name of one output (`a.json`, the same through a link
    to its folder) has one lock, in this user's lock folder (lock_folder). The lock is
    per user: two users writing one output do not exclude each other."""
    import hashlib

    try:
        folder = lock_folder()
    except UsageError as e:
        raise OutputError(f"cannot lock {path}: {e.message}", path=str(path), hint=e.hint) from None
    # the folder resolved, not the file: a link at `path` is what the rename replaces
    digest = hashlib.sha256(os.fsencode(path.parent.resolve() / path.name)).hexdigest()[:32]
    return folder / f"{digest}.lock"


def _claim(path: Path) -> None:
    """Hold an exclusive lock on `path`'s claim file until this icount exits (the kernel
    drops it however icount ends); UsageError when another icount holds it."""
    import fcntl

    if path in _CLAIMS:  # this icount's own (a resumed plan prepared again)
        return
    lock = claim_path(path)
    for _ in range(3):
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as e:
            raise _cannot_write(path, e) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise UsageError(
                f"another icount is writing {path} now",
                hint="wait for it to finish or choose another --output",
            ) from None
        try:  # the lock file of an icount that finished meanwhile was removed: retry
            same = os.path.samestat(os.fstat(fd), os.stat(lock))
        except FileNotFoundError:
            same = False
        if same:
            if not _CLAIMS:
                import atexit

                atexit.register(_release_claims)  # an icount refused or failing later
            _CLAIMS[path] = (fd, lock)
            _sweep(lock)
            return
        os.close(fd)
    raise UsageError(f"another icount is writing {path} now", hint=_OUTPUT_HINT)


def _sweep(mine: Path) -> None:
    """Remove the lock files beside `mine` that no icount holds: those of an icount
    killed (SIGKILL, a CI job cancelled) before it could, which would otherwise pile
    up. One locked here is unlinked while locked, as release_unused does, so an icount
    that opened it meanwhile finds it gone and makes another."""
    import fcntl

    try:
        names = [n for n in os.listdir(mine.parent) if n.endswith(".lock") and n != mine.name]
    except OSError:
        return
    for name in names:
        stale = mine.parent / name
        try:
            fd = os.open(stale, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.path.samestat(os.fstat(fd), os.lstat(stale)):
                stale.unlink()
        except OSError:
            pass  # held by a live icount, or gone already
        finally:
            os.close(fd)


def refuse_to_replace(path: Path) -> None:
    """UsageError when the results file or the provenance beside it exists (without
    --force neither is replaced)."""
    for existing in (path, provenance_path(path)):
        if existing.exists():
            raise UsageError(f"{existing} exists; refusing to overwrite it", hint="pass --force")


def holds_measurements(path: Path) -> bool:
    """Whether `path` is an icount results or provenance file: what the -o of a command
    that writes something else (a comparison, a report) must not replace unasked."""
    try:
        doc = read_json(path)
    except ParseError:
        return False
    return isinstance(doc, dict) and doc.get("format") in (FORMAT, PROVENANCE_FORMAT)


def _release_claims() -> None:
    for path in list(_CLAIMS):
        release_unused(path)


def release_unused(path: Path) -> None:
    """Remove the artifacts folder `next_free_path` reserved for `path` if nothing was
    written into it (icount stopped before measuring), so the number is free again,
    the folders `check_writable` made that stayed empty, and the claim on `path`."""
    with contextlib.suppress(OSError):
        path.with_suffix(".artifacts").rmdir()
    claim = _CLAIMS.pop(path, None)
    if claim is not None:
        fd, lock = claim
        # unlinked while still locked, so no icount starting now can lock the old file;
        # the file this icount locked, not whatever the path names now
        with contextlib.suppress(OSError):
            if os.path.samestat(os.fstat(fd), os.lstat(lock)):
                lock.unlink()
        os.close(fd)
    _remove_made()


# ---------------------------------------------------------------- loading


def read_bounded(
    path: Path,
    limit: int,
    error: type[ParseError] = ResultsFileError,
    what: str = "an icount results file",
) -> bytes:
    """The bytes of a regular file of at most `limit` bytes. A FIFO, a device or a
    directory is refused before anything is read from it (a FIFO would block, a
    device never ends)."""
    src = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise error("no such file", source=src) from None
    except IsADirectoryError:
        raise error(f"is a directory, not {what}", source=src) from None
    except OSError as e:
        raise error(f"cannot read: {e.strerror}", source=src) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise error(f"is a directory, not {what}", source=src)
        if not stat.S_ISREG(st.st_mode):
            raise error("is not a regular file (a FIFO, socket or device)", source=src)
        if st.st_size > limit:
            raise error(f"{st.st_size} bytes is too large for {what}", source=src)
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew while being read
        raise error(f"more than {limit} bytes", source=src)
    return data


def load(path: Path) -> Results:
    return from_json(read_json(path), str(path))


def read_json(path: Path, what: str = "results file") -> Any:
    """The JSON document in `path`, read as a results file is: a regular file of at most
    MAX_RESULTS_BYTES, UTF-8, no NaN or infinities, integers within 64 bits, nesting
    Python can parse, no lone surrogate (`\\ud800`) in any text; ResultsFileError naming
    the file otherwise."""
    src = str(path)
    data = read_bounded(path, MAX_RESULTS_BYTES, what=f"an icount {what}")
    # Every value but the first follows a comma, and lists and objects (the costly
    # values) also open with a bracket: counted at memchr speed before parsing, commas
    # inside strings included, so it errs on the safe side.
    values = data.count(b",") + data.count(b"[") + data.count(b"{")
    if values > MAX_JSON_VALUES:
        raise ResultsFileError(
            f"holds more than {MAX_JSON_VALUES:,} values, too many for an icount {what}",
            source=src,
        )
    try:
        doc = json.loads(
            data.decode("utf-8"),
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
        )
    except UnicodeDecodeError:
        raise ResultsFileError(f"not UTF-8 text; not an icount {what}", source=src) from None
    except json.JSONDecodeError as e:
        raise ResultsFileError(
            f"not valid JSON (line {e.lineno} column {e.colno}: {e.msg}); truncated or corrupt?",
            source=src,
        ) from None
    except RecursionError:
        raise ResultsFileError(f"nested too deeply to be an icount {what}", source=src) from None
    except ValueError as e:  # NaN, infinities, integers beyond int64
        raise ResultsFileError(f"not a valid {what}: {e}", source=src) from None
    if _SURROGATE_ESCAPE.search(data):  # the only way a lone surrogate gets in: \ud800
        bad = unencodable(doc)
        if bad is not None:
            raise ResultsFileError(
                f"holds text that is not Unicode (a lone surrogate in {printable(bad)[:80]}); "
                f"not an icount {what}",
                source=src,
            )
    return doc


# UTF-8 cannot carry a surrogate, but a JSON escape can: text holding one (alone, not
# as half of a pair) can be written back in no encoding, so no output of it could be
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")


def unencodable(doc: Any) -> str | None:
    """A string of `doc` (keys included) that UTF-8 cannot encode, or None."""
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += item.keys()
            stack += item.values()
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return item
    return None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number icount writes")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 19:  # before int() parses thousands of digits
        raise ValueError(f"integer {text[:24]}... is beyond 64 bits")
    value = int(text)
    if not -MAX_INT <= value < MAX_INT:
        raise ValueError(f"integer {value} is beyond 64 bits")
    return value


def from_json(doc: Any, src: str) -> Results:
    from icount.results import format_v1, format_v2

    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ResultsFileError(f'not an icount results file (no "format": "{FORMAT}")', source=src)
    version = doc.get("version")
    readers = {1: format_v1.from_json, 2: format_v2.from_json}
    if isinstance(version, bool) or not isinstance(version, int) or version not in readers:
        raise ResultsFileError(
            f"results format version {repr(version)[:40]}; this icount reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))} (a newer icount wrote it?)",
            source=src,
        )
    try:
        results = readers[version](doc)
    except (KeyError, TypeError, ValueError) as e:
        raise ResultsFileError(f"malformed results file: {describe(e)}", source=src) from None
    seen: set[tuple[str, str, str]] = set()
    for cell in results.cells:
        if cell.key in seen:
            raise ResultsFileError(f"cell {printable(cell.key_text)} appears twice", source=src)
        seen.add(cell.key)
    return results


def append_text(path: Path, text: str) -> None:
    """Append `text` to `path` (a CI job's step summary) without ever blocking: a FIFO
    nobody reads, a socket or a device is refused before anything is written (opened
    non-blocking, so a FIFO without a reader fails at once); OutputError naming the
    file when it cannot be appended to (a full disk: /dev/full)."""
    not_regular = OutputError(
        f"cannot append to {path}: not a regular file (a FIFO, socket or device)", path=str(path)
    )
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise not_regular
    try:
        fd = os.open(
            path,
            os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0),
            0o666,
        )
    except OSError as e:
        raise OutputError(f"cannot append to {path}: {e.strerror or e}", path=str(path)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise not_regular
        data = text.encode("utf-8")
        while data:
            written = os.write(fd, data)
            data = data[written:]
    except OSError as e:
        raise OutputError(f"cannot append to {path}: {e.strerror or e}", path=str(path)) from None
    finally:
        os.close(fd)
