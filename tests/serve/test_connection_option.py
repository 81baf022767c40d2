"""--connection on the command line: what it takes, and what it needs (the built-in
client), refused in one line with exit 2 before any server starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from icount.errors import UsageError
from icount.serve.plan import ServeRequest, resume_request
from icount.session import resume as resume_mod
from tests.support.cli import run_icount_here

CMD = ["serve", "--cmd", "true {port}", "--path", "p=/", "--backend", "callgrind"]


def test_an_unknown_connection_is_one_line(tmp_path: Path) -> None:
    done = run_icount_here([*CMD, "--connection", "sometimes"], cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert (
        done.stderr
        == "icount: error: --connection takes auto, keep-alive, close, got 'sometimes'\n"
    )


@pytest.mark.parametrize("load", ["h2load", "ab"])
def test_a_forced_connection_needs_the_built_in_client(tmp_path: Path, load: str) -> None:
    """The external tools open their connections themselves; following the hint (the
    built-in client) is what every test of --connection runs."""
    done = run_icount_here([*CMD, "--connection", "close", "--load", load], cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"icount: error: --connection close needs the built-in client: {load} opens its "
        "connections itself (use --load builtin, or leave --connection out)"
    ]
    assert not list(tmp_path.glob("icount-results*"))


def test_resume_restores_the_connection_unless_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = {"targets": ["x/adapter.toml"], "connection": "close"}
    monkeypatch.setattr(resume_mod, "saved_plan", lambda path: saved)
    assert resume_request(ServeRequest(), tmp_path, frozenset()).connection == "close"
    given = ServeRequest(connection="keep-alive")
    assert resume_request(given, tmp_path, frozenset({"connection"})).connection == "keep-alive"
    saved["connection"] = "sometimes"
    with pytest.raises(UsageError, match="the recorded connection 'sometimes' is not valid"):
        resume_request(ServeRequest(), tmp_path, frozenset())
