"""`icount inline` without the CLI: get both profiles, read both binaries, build the report.

A build argument is either a callgrind output file (used as it is) or a program,
which is run once under callgrind with the workload's arguments, in icount's fixed
environment, every process it starts counted as `icount run` counts them
(`icount.backends.callgrind.record_profiles`): a build that forks is the sum of its
processes' profiles. Never prints.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from icount.callgrind.model import Profile
from icount.errors import UsageError
from icount.inline.report import DEFAULT_MIN_SHARE

if TYPE_CHECKING:
    from icount.inline.report import BuildFacts

Progress = Callable[[str], None]
# An error names at most this many of a profile's events (callgrind writes up to ~25).
_EVENTS_NAMED = 30


@dataclass(frozen=True)
class Options:
    event: str = "Ir"
    top: int = 20
    min_share: float = DEFAULT_MIN_SHARE
    timeout: float | None = None
    keep_dir: Path | None = None  # where to keep the recorded profiles
    exe_a: Path | None = None
    exe_b: Path | None = None
    dwarf: bool = True


def is_callgrind_file(path: Path) -> bool:
    from icount.callgrind.parser import looks_like_callgrind

    try:
        with open(path, "rb") as f:
            return looks_like_callgrind(f.read(4096))
    except OSError:
        return False


def labels(arg_a: str, arg_b: str) -> tuple[str, str]:
    """Base names, or the last two path parts when the base names are equal."""
    a, b = Path(arg_a), Path(arg_b)
    if a.name != b.name:
        return a.name, b.name
    return str(Path(a.parent.name, a.name)), str(Path(b.parent.name, b.name))


def compare_builds(
    arg_a: str,
    arg_b: str,
    workload: Sequence[str],
    opts: Options,
    progress: Progress = lambda _msg: None,
) -> dict[str, Any]:
    from icount.inline import align, report

    label_a, label_b = labels(arg_a, arg_b)
    if label_a == label_b:
        label_a, label_b = f"A: {label_a}", f"B: {label_b}"
    with tempfile.TemporaryDirectory(prefix="icount-inline-") as tmp:
        store = opts.keep_dir or Path(tmp)
        profs_a, bin_a = _profiles(arg_a, workload, store, "a", opts, progress)
        profs_b, bin_b = _profiles(arg_b, workload, store, "b", opts, progress)
    for profs, arg in ((profs_a, arg_a), (profs_b, arg_b)):
        for prof in profs:
            _check_event(prof, arg, opts.event)
    facts_a = _facts(label_a, opts.exe_a, bin_a, "a", opts, progress)
    facts_b = _facts(label_b, opts.exe_b, bin_b, "b", opts, progress)
    for facts, profs in ((facts_a, profs_a), (facts_b, profs_b)):
        processes = len({prof.pid for prof in profs})
        if processes > 1:  # otherwise one process's work could pass for the build's
            facts.notes.insert(0, f"{processes} processes ran: their profiles are summed")
    aligned = align.align(align.side_of(profs_a, opts.event), align.side_of(profs_b, opts.event))
    return report.build_report(aligned, opts.event, facts_a, facts_b, opts.top, opts.min_share)


def _check_event(prof: Profile, arg: str, event: str) -> None:
    if event not in prof.events:
        shown = " ".join(prof.events[:_EVENTS_NAMED])
        more = len(prof.events) - _EVENTS_NAMED
        raise UsageError(
            f"{arg}: the profile has no event {event} "
            f"({shown}{f' and {more} more' if more > 0 else ''})",
            hint="choose one with --event",
        )


def _profiles(
    arg: str, workload: Sequence[str], store: Path, side: str, opts: Options, progress: Progress
) -> tuple[list[Profile], Path | None]:
    """The build's profiles (one per process and fork) and the binary it ran (None when
    not known). A recorded build's are kept in `store` as SIDE.callgrind when it left
    one, else SIDE.callgrind.1, .2, ... (by pid, each process's dumps in order)."""
    from icount.callgrind.parser import parse_file

    path = Path(arg)
    # A file that cannot be run is read as a profile, so a damaged one is reported as
    # such (ParseError) rather than as a command that was not found.
    if path.is_file() and (is_callgrind_file(path) or not os.access(path, os.X_OK)):
        if workload:
            raise UsageError(
                f"{arg} is a callgrind profile: the arguments after -- apply to programs only"
            )
        prof = parse_file(path)
        return [prof], _binary_of(prof)
    from icount.backends.callgrind import record_profiles
    from icount.measure_command import CommandSpec, resolve

    spec = resolve(CommandSpec(arg, (arg, *workload)), Path.cwd())
    progress(f"running {arg} under callgrind")
    for stale in store.glob(f"{side}.callgrind*"):  # an earlier run's would read as this one's
        if re.fullmatch(rf"{side}\.callgrind(\.[0-9]+)?", stale.name):
            stale.unlink()
    with tempfile.TemporaryDirectory(prefix="icount-inline-", dir=store) as scratch:
        # record_profiles runs it in a fresh fixed-length directory, removed afterwards.
        recorded = record_profiles(list(spec.argv), Path(scratch), timeout=opts.timeout)
        numbers = [""] if len(recorded) == 1 else [f".{i}" for i in range(1, len(recorded) + 1)]
        kept = [store / f"{side}.callgrind{n}" for n in numbers]
        for src, dst in zip(recorded, kept, strict=True):
            shutil.move(src, dst)
    return [parse_file(p) for p in kept], Path(spec.argv[0])


def _binary_of(prof: Profile) -> Path | None:
    """The program a saved profile ran, when its cmd: names an existing absolute path."""
    if not prof.command:
        return None
    exe = Path(prof.command.split()[0])
    return exe if exe.is_absolute() and exe.is_file() else None


def _facts(
    label: str,
    explicit: Path | None,
    implicit: Path | None,
    side: str,
    opts: Options,
    progress: Progress,
) -> BuildFacts:
    """Sizes and inline sites of one build. A binary the user named must be readable;
    one only guessed (the program run, a profile's cmd:) may be a script: a note."""
    from icount.errors import ParseError
    from icount.inline.report import BuildFacts

    exe = explicit or implicit
    if exe is None:
        return BuildFacts(
            label, notes=[f"binary unknown: no sizes or inline sites (pass --exe-{side})"]
        )
    try:
        return _read_facts(label, exe, opts, progress)
    except (ParseError, UsageError) as e:
        if explicit is not None:
            raise
        return BuildFacts(label, notes=[f"no sizes or inline sites: {e}"])


def _read_facts(label: str, exe: Path, opts: Options, progress: Progress) -> BuildFacts:
    from icount.inline.binary import read_binary
    from icount.inline.dwarf import read_inline_sites
    from icount.inline.report import BuildFacts

    binary = read_binary(exe)
    inlines = None
    if opts.dwarf:
        progress(f"reading DWARF of {exe.name}")
        inlines = read_inline_sites(exe, binary.names_at)
    return BuildFacts(label, binary, inlines)
