"""A backend added as a new one would be: this module, with one option, and its line in
`icount.backends.REGISTRY` (`test_toy_backend.py` adds it for the test's time). It counts
by construction: `per_argument` instructions for each argument of a command, and its
servers are the fake backend's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from icount.backends.protocol import ArgvKind, Counted, Registration
from icount.errors import UsageError
from tests.support.fake_backend import FakeBackend, checks, probe


@dataclass(frozen=True)
class ToyOptions:
    per_argument: int = 10  # --per-argument: instructions each argument of a command counts

    def __post_init__(self) -> None:
        if self.per_argument < 1:
            raise UsageError(f"--per-argument takes a count from 1, got {self.per_argument}")


class Toy(FakeBackend):
    name = "toy"

    def __init__(self, options: ToyOptions) -> None:
        super().__init__()
        self.options = options

    def version(self) -> str:
        return "toy 1"

    def fingerprint_argv(self, kind: ArgvKind) -> list[str]:
        return ["toy", f"--per-argument={self.options.per_argument}", kind]

    def cell_params(self) -> dict[str, object]:
        return {"thread": None, "per_argument": self.options.per_argument}

    def count_command(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        timeout: float | None,
    ) -> Counted:
        return Counted(self.options.per_argument * len(argv), 0, False, None, 1)


BACKEND = Registration(ToyOptions, Toy, probe, checks)
