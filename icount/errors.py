"""The one error family icount raises, and the exit code each kind maps to.

Core code raises these; only the CLI layer turns them into a message and an exit
status. The split follows what a user can do about it: fix the command line (usage),
install something or fix the program's path (launch), look at the measured program
(run failed), or look at the input file (parse). Each kind carries the facts a caller
or a test can act on (the program, the exit status, the log, the file), so that code
and tests branch on kinds and fields, never on wording.
"""

from __future__ import annotations

import os
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    INTERNAL = 1  # a bug in icount
    USAGE = 2  # bad flags or arguments (typer/click use 2 as well)
    REGRESSION = 3  # `icount compare` found a regression
    MISSING_TOOL = 4  # valgrind/perf/compiler missing, or the command cannot be launched
    INVALID = 5  # the measurement ran but at least one cell is invalid
    BAD_INPUT = 6  # an input file (results, callgrind, ELF, Mach-O) is corrupt or unsupported
    INTERRUPTED = 130  # Ctrl-C


class IcountError(Exception):
    """Base of every error icount reports to the user as one line."""

    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message} ({self.hint})"
        return self.message


class UsageError(IcountError):
    """The command line asks for something that cannot be done as given."""

    exit_code = ExitCode.USAGE


class OutputError(UsageError):
    """A file icount was asked to write cannot be written: `path` names it."""

    def __init__(self, message: str, *, path: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.path = path


class LaunchError(IcountError):
    """A program could not be started at all: not found, not executable, refused by
    the kernel. `program` is what was asked for."""

    exit_code = ExitCode.MISSING_TOOL

    def __init__(self, message: str, *, program: str | None = None, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.program = program


class ToolMissingError(LaunchError):
    """A tool icount needs (valgrind, perf, a compiler, a load generator) is not
    installed or cannot count here; the hint says how to get it."""


class RunFailedError(IcountError):
    """A program ran but failed, so nothing could be measured. `returncode` is its exit
    status (negative: killed by that signal) when it exited; `log` a file with its words."""

    exit_code = ExitCode.INVALID

    def __init__(
        self,
        message: str,
        *,
        returncode: int | None = None,
        log: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.returncode = returncode
        self.log = log


class ParseError(IcountError):
    """An input file could not be parsed. `source` names the file when known."""

    exit_code = ExitCode.BAD_INPUT

    def __init__(self, message: str, *, source: str | None = None, hint: str | None = None):
        # 'base/../base.json' is named as base.json: the file, not the way to it
        shown = os.path.normpath(source) if source else source
        super().__init__(f"{shown}: {message}" if shown else message, hint=hint)
        self.source = source


class ResultsFileError(ParseError):
    """A results JSON file is missing, corrupt, of another version or not icount's."""
