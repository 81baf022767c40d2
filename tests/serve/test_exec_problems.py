"""What exec cannot be given (a NUL byte in an argument or the environment, '=' in an
environment name) raised ValueError inside the session and stopped it: from an adapter,
that target's cells are invalid with the reason and the others are measured; from the
command line or a --file list, one usage line before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from icount.session.options import Warmup
from tests.serve.test_session import FAKE_ADAPTER, _session, fake  # noqa: F401
from tests.support.cli import run_icount_here


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        ('start = ["true", "--port", "{port}", "a\\u0000b"]',
         "argument 3 'a\\x00b' holds a NUL byte"),
        ('start = ["true", "--port", "{port}"]\n[env]\n"A=B" = "1"',
         "environment name 'A=B' is empty or holds '=' or a NUL byte"),
        ('start = ["true", "--port", "{port}"]\n[env]\nA = "x\\u0000"',
         "environment variable 'A' has a value holding a NUL byte"),
    ],
)  # fmt: skip
def test_an_adapter_exec_cannot_take_invalidates_only_its_cells_fake(
    fake: Path,  # noqa: F811
    tmp_path: Path,
    edit: str,
    reason: str,
) -> None:
    from icount.serve.plan import ServeRequest

    broken = tmp_path / "broken"
    broken.mkdir()
    start = 'start = ["true", "--port", "{port}"]'
    text = FAKE_ADAPTER.replace('name = "fake"', 'name = "broken"')
    (broken / "adapter.toml").write_text(text.replace(start, edit))
    request = ServeRequest(
        targets=(str(broken / "adapter.toml"), str(fake)),
        backend="fake", runs=1, reps=1, requests=20, warmup=Warmup(0),
        idle_seconds=0,  # the idle window sleeps, and these cells are about their start
    )  # fmt: skip
    res = _session(request, tmp_path / "r.json")
    reasons = {c.key_text: c.reason for c in res.cells}
    assert reasons["fake/plaintext/fake"] is None and reasons["fake/json/fake"] is None
    for path in ("plaintext", "json"):
        assert reasons[f"broken/{path}/fake"] == f"run 1 of 1: cannot start the server: {reason}"


def test_a_build_step_exec_cannot_take_invalidates_only_its_cells_fake(
    fake: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    from icount.serve.plan import ServeRequest

    broken = tmp_path / "broken"
    broken.mkdir()
    text = FAKE_ADAPTER.replace('name = "fake"', 'name = "broken"\nbuild = [["true", "a\\u0000"]]')
    (broken / "adapter.toml").write_text(text)
    request = ServeRequest(
        targets=(str(broken / "adapter.toml"), str(fake)),
        backend="fake", runs=1, reps=1, requests=20, warmup=Warmup(0),
        idle_seconds=0,  # the idle window sleeps, and these cells are about their start
    )  # fmt: skip
    res = _session(request, tmp_path / "r.json")
    reasons = {c.key_text: c.reason for c in res.cells}
    assert reasons["fake/plaintext/fake"] is None
    assert "broken: build step: argument 1 'a\\x00' holds a NUL byte" in str(
        reasons["broken/plaintext/fake"]
    )


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[[command]]\nname = "a"\nargv = ["true", "x\\u0000y"]\n',
         "command a: argument 1 'x\\x00y' holds a NUL byte"),
        ('[[command]]\nname = "b"\nargv = ["true"]\nenv = { "A=B" = "1" }\n',
         "command b: environment name 'A=B' is empty or holds '=' or a NUL byte"),
    ],
)  # fmt: skip
def test_a_commands_file_exec_cannot_take_is_one_usage_line(
    tmp_path: Path, toml: str, message: str
) -> None:
    (tmp_path / "c.toml").write_text(toml)
    done = run_icount_here(["run", "--file", "c.toml"], tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"icount: error: {message}\n"
