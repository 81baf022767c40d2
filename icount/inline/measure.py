"""`icount inline` without the CLI: get both profiles, read both binaries, build the report.

A build argument is either a callgrind output file (used as it is) or a program,
which is run once under callgrind with the workload's arguments, in icount's fixed
environment (`icount.backends.callgrind.record_profile`). Never prints.
"""

from __future__ import annotations

import os
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
        prof_a, bin_a = _profile(arg_a, workload, store / "a.callgrind", opts, progress)
        prof_b, bin_b = _profile(arg_b, workload, store / "b.callgrind", opts, progress)
    for prof, arg in ((prof_a, arg_a), (prof_b, arg_b)):
        if opts.event not in prof.events:
            shown = " ".join(prof.events[:_EVENTS_NAMED])
            more = len(prof.events) - _EVENTS_NAMED
            raise UsageError(
                f"{arg}: the profile has no event {opts.event} "
                f"({shown}{f' and {more} more' if more > 0 else ''})",
                hint="choose one with --event",
            )
    facts_a = _facts(label_a, opts.exe_a, bin_a, "a", opts, progress)
    facts_b = _facts(label_b, opts.exe_b, bin_b, "b", opts, progress)
    aligned = align.align(align.side_of([prof_a], opts.event), align.side_of([prof_b], opts.event))
    return report.build_report(aligned, opts.event, facts_a, facts_b, opts.top, opts.min_share)


def _profile(
    arg: str, workload: Sequence[str], out: Path, opts: Options, progress: Progress
) -> tuple[Profile, Path | None]:
    """The build's profile and the binary it ran (None when not known)."""
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
        return prof, _binary_of(prof)
    from icount.backends.callgrind import record_profile
    from icount.measure_command import CommandSpec, resolve

    spec = resolve(CommandSpec(arg, (arg, *workload)), Path.cwd())
    progress(f"running {arg} under callgrind")
    # record_profile runs it in a fresh fixed-length directory, removed afterwards.
    record_profile(list(spec.argv), out.absolute(), timeout=opts.timeout)
    return parse_file(out), Path(spec.argv[0])


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
