"""Running valgrind's callgrind: where valgrind is, its version, the options icount runs
it with, and reading what it leaves (profiles, and its own complaints in its logs).

Shared by the callgrind backend (whole commands, `callgrind.py`) and its servers
(`callgrind_server.py`), which must not import each other.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING

from icount import procs
from icount.errors import ParseError
from icount.text import printable

if TYPE_CHECKING:
    from icount.callgrind.model import Profile

INSTALL_HINT = "run scripts/setup.sh or apt-get install valgrind"
# what callgrind's assertion on a Go program's preemption signals asks for
GO_REMEDY = (
    "Go programs need GODEBUG=asyncpreemptoff=1 under valgrind: add it to the "
    "adapter's [env] or pass --env GODEBUG=asyncpreemptoff=1"
)


def valgrind_path() -> str | None:
    return procs.which("valgrind")


def require_valgrind() -> str:
    return procs.require("valgrind", INSTALL_HINT)


@functools.cache
def valgrind_version() -> str:
    out = procs.capture([require_valgrind(), "--version"]) or ""
    match = re.search(r"valgrind-([\w.\-]+)", out)
    return f"valgrind {match.group(1)}" if match else "valgrind (unknown version)"


# A forked child inherits the profile its parent gathered since its last dump (callgrind's
# manual, "Forking Programs"): summed with the parent's, those instructions would count
# twice. A dump when the parent enters fork() leaves nothing to inherit, and the dump
# is one more file of the parent's. glibc >= 2.34's fork() calls _Fork(); older ones
# name it __libc_fork.
FORK_FUNCTIONS = ("fork", "_Fork", "__libc_fork")


def valgrind_options(
    out_file: Path,
    log_file: Path,
    *,
    trace_children: bool,
    vgdb_prefix: Path | None = None,
    separate_threads: bool = False,
    instrumented_at_start: bool = True,
) -> list[str]:
    """The valgrind options icount runs callgrind with (and records in the fingerprint).

    `out_file` and `log_file` take `%p` for one file per process when `trace_children`;
    `vgdb_prefix` enables vgdb (servers), with its FIFOs under that prefix rather than
    in /tmp; without it vgdb is off, and a killed process leaves no FIFOs behind.
    """
    return [
        "--tool=callgrind",
        *(["--trace-children=yes"] if trace_children else []),
        *([f"--dump-before={f}" for f in FORK_FUNCTIONS] if trace_children else []),
        f"--callgrind-out-file={out_file}",
        f"--log-file={log_file}",
        *([f"--vgdb-prefix={vgdb_prefix}", "--vgdb=yes"] if vgdb_prefix else ["--vgdb=no"]),
        *(["--separate-threads=yes"] if separate_threads else []),
        # off until the first window: vgdb `instrumentation on` switches it (warm-up
        # requests run ~5x faster; the guest executes the same instructions either way)
        *([] if instrumented_at_start else ["--instr-atstart=no"]),
    ]


def read_ir(path: Path) -> int:
    """Total `Ir` of one callgrind file (ParseError when it is not a profile)."""
    return read_functions(path)[0]


def read_functions(path: Path) -> tuple[int, dict[str, int]]:
    """(total `Ir`, self `Ir` by function name) of one callgrind file."""
    from icount.callgrind.parser import parse_file

    return functions_of(parse_file(path))


def functions_of(prof: Profile) -> tuple[int, dict[str, int]]:
    """(total `Ir`, self `Ir` by function name) of a parsed profile."""
    if "Ir" not in prof.totals:
        raise ParseError("callgrind profile has no Ir event", source=prof.source)
    column = prof.self_cost[:, prof.event_index("Ir")]
    by_name: dict[str, int] = {}
    for fn, cost in zip(prof.functions, column.tolist(), strict=True):
        if cost:
            by_name[fn.name] = by_name.get(fn.name, 0) + int(cost)
    return prof.totals["Ir"], by_name


# valgrind's own failures, from its log: (what it says, what is wrong, the remedy or
# None). Matched as valgrind writes them: a tool's assertion starts with the tool's name
# as valgrind prints it ("Callgrind: threads.c:247 (vgCallgrind_post_signal): Assertion
# ... failed.", fixtures/valgrind-logs/go-preempt-assertion.log), valgrind's own with
# "valgrind:".
_PROBLEMS = (
    (
        re.compile(r"Callgrind: threads\.c:\d+ \(vgCallgrind_post_signal\): Assertion .* failed"),
        "callgrind asserted while handling a signal",
        GO_REMEDY,
    ),
    (re.compile(r"Assertion .* failed"), "valgrind asserted", None),
    (re.compile(r"the 'impossible' happened"), "valgrind crashed", None),
    (
        re.compile(r"can ?not open cache simulation output file"),
        "a process could not write its callgrind profile",
        "a process that changed its user cannot write into the run folder",
    ),
    (re.compile(r"out of memory", re.IGNORECASE), "valgrind ran out of memory", None),
    (re.compile(r"Fatal error at startup"), "valgrind could not start the program", None),
)
# The guest's own crash: valgrind names the signal, then where (fixtures/valgrind-logs/
# guest-sigsegv.log). Not valgrind's failure: the program crashed under it.
_GUEST_CRASH = re.compile(r"Process terminating with default action of signal \d+ \((SIG\w+)\)")
_PREFIX = re.compile(r"^==\d+==\s?")
CRASH_LINES = 5  # quoted after valgrind's "Process terminating" line: the cause and frames
QUOTE_CHARS = 160  # of each quoted line


def _quote(line: str) -> str:
    line = printable(line)
    return line if len(line) <= QUOTE_CHARS else line[: QUOTE_CHARS - 3] + "..."


def _read_log(log: Path) -> list[str] | None:
    try:
        with open(log, "rb") as f:
            text = f.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return None
    return text.splitlines()


def valgrind_problem(log: Path) -> str | None:
    """An assertion, a crash or a tool error of valgrind's in one valgrind log, quoted,
    with the remedy where one is known; None when the log shows none (the program's own
    crash is `guest_crash`'s)."""
    lines = _read_log(log)
    if lines is None:
        return None
    for line in lines:
        said = _PREFIX.sub("", line).strip()
        for pattern, what, remedy in _PROBLEMS:
            if pattern.search(said):
                tail = f"; {remedy}" if remedy else ""
                return f"{what} ({log.name}: {_quote(said)!r}){tail}"
    return None


def guest_crash(log: Path) -> str | None:
    """The program's own crash under valgrind (a signal it did not handle), with the
    log's lines that say where, or None."""
    lines = _read_log(log)
    return None if lines is None else _guest_crash(log.name, lines)


def _guest_crash(name: str, lines: list[str]) -> str | None:
    for i, line in enumerate(lines):
        said = _PREFIX.sub("", line).strip()
        match = _GUEST_CRASH.search(said)
        if match is None:
            continue
        after = []
        for more in lines[i + 1 : i + 1 + CRASH_LINES]:
            text = _PREFIX.sub("", more).strip()
            if not text or text.startswith("If you believe"):
                break
            after.append(_quote(text))
        quoted = " | ".join([_quote(said), *after])
        return (
            f"the program crashed under valgrind ({match.group(1)}; {name}: {quoted!r}): "
            "the crash is the program's, not valgrind's complaint"
        )
    return None


def valgrind_failure(log: Path) -> str | None:
    """valgrind's own complaint (e.g. a missing command), from its log."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        text = re.sub(r"^==\d+==\s*", "", line).strip()
        if text.startswith("valgrind:") or "cannot execute" in text or "No such file" in text:
            return text
    return None
