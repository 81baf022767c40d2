"""Running the real CLI in a subprocess, as a user would."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path


def run_icount(
    args: Sequence[str],
    cwd: Path | None = None,
    timeout: float = 600,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`python -m icount ARGS` in `cwd`: its exit status, stdout and stderr."""
    return subprocess.run(
        [sys.executable, "-m", "icount", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=None if env is None else dict(env),
    )
