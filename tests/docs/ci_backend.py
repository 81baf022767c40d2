"""`icount` for running docs/ci.md's recipes in seconds: `callgrind` is this backend,
which runs each command as it is given (its program, arguments, environment and working
directory) and counts the number the program prints. A recipe's builds are programs
that print their count, so every step (make, measure, file, compare, rerun) runs as
written and the counts are known by construction.

Run as `python -m tests.docs.ci_backend ARGS...`: icount's command line with the
backend swapped.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from icount.backends import callgrind
from icount.backends.protocol import Counted, Registration
from tests.support.fake_backend import FakeBackend, checks, probe


class PrintedCount(FakeBackend):
    def count_command(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        timeout: float | None,
    ) -> Counted:
        done = subprocess.run(
            list(argv), env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=timeout
        )
        words = done.stdout.split()
        if done.returncode != 0 or len(words) != 1 or not words[0].isdigit():
            return Counted(None, done.returncode, False, f"printed {done.stdout[:80]!r}")
        return Counted(int(words[0]), 0, False, None, 1)


def create(options: object) -> PrintedCount:
    return PrintedCount()


# callgrind's own options, so that every flag a recipe gives it is taken (and ignored)
BACKEND = Registration(callgrind.BACKEND.options, create, probe, checks)


def main() -> None:
    from icount import backends
    from icount.cli import main as icount

    # `fake` too: the name the results record, which --confirm measures with again
    backends.REGISTRY |= {"callgrind": "tests.docs.ci_backend", "fake": "tests.docs.ci_backend"}
    icount()


if __name__ == "__main__":
    main()
