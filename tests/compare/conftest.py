"""Helpers for the compare tests: results built from icount.results objects, and the
CLI run in-process (through icount.cli.main, so errors and exit codes are the user's).

The numbers in built results are fabricated on purpose: those tests check matching,
verdicts and rendering, not measuring. Measured numbers come from the slow tests.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from icount import results
from icount.results import Cell, Results, Run
from icount.results.details import CommandDetail

FP: dict[str, Any] = {
    "backend": "callgrind",
    "tool_version": "valgrind 3.19.0",
    "arch": "x86_64",
    "cpu_vendor": "GenuineIntel",
    "cpu_model": "Example CPU family 6 model 85",
    "cpu_flags": ["avx2", "erms", "sse2"],
    "glibc": "glibc 2.36",
}


def cell(
    name: str,
    values: Sequence[float],
    path: str = "",
    *,
    backend: str = "callgrind",
    unit: str = results.UNIT_INSTRUCTIONS,
    failed: str | None = None,
) -> Cell:
    """A cell of valid runs with these values; `failed` makes its last run fail."""
    runs = [Run(float(v), True, None, CommandDetail(0)) for v in values]
    if failed is not None:
        runs[-1] = Run(None, False, failed, CommandDetail(1))
    return Cell(name, path, backend, unit, tuple(runs), {}, len(runs), 0.05)


def res(*cells: Cell, **fingerprint: Any) -> Results:
    return Results({**FP, **fingerprint}, cells)


@dataclass(frozen=True)
class Done:
    code: int
    out: str
    err: str


Cli = Callable[..., Done]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    """icount(*args) in-process: the exit code, stdout and stderr a user would see."""
    from icount.cli import main

    def run(*args: str | Path) -> Done:
        monkeypatch.setattr(sys, "argv", ["icount", *map(str, args)])
        capsys.readouterr()
        try:
            main()
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        out, err = capsys.readouterr()
        return Done(code, out, err)

    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return run


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, Results], Path]:
    def put(name: str, r: Results) -> Path:
        p = tmp_path / name
        results.save(p, r, None, overwrite=True)
        return p

    return put
