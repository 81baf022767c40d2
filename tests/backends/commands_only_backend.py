"""A backend that counts commands and no servers (a `protocol.CommandBackend` alone):
`len(argv)` instructions a command, by construction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from icount.backends.protocol import ArgvKind, Counted, Registration
from tests.support.fake_backend import checks, probe


@dataclass(frozen=True)
class NoOptions:
    """It takes no settings."""


class CommandsOnly:
    name = "commands-only"
    instrumented = False

    def __init__(self, options: NoOptions) -> None:
        self.options = options

    def version(self) -> str:
        return "commands-only 1"

    def fingerprint_argv(self, kind: ArgvKind) -> list[str]:
        return ["commands-only"]

    def count_command(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        timeout: float | None,
    ) -> Counted:
        return Counted(len(argv), 0, False, None, 1)


BACKEND = Registration(NoOptions, CommandsOnly, probe, checks)
