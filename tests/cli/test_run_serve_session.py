"""What `run` and `serve` do around a planned session (icount/cli/session.py): the notes
before, the results line after, the results file's claim given back either way."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from icount import results
from icount.cli.session import measure, resume_file
from icount.results.files import claim_path


@dataclass(frozen=True)
class _Plan:
    out: Path

    @property
    def artifacts(self) -> Path:
        return self.out.with_suffix(".artifacts")

    def notes(self) -> list[str]:
        return ["backend fake: asked for"]


def _claimed(tmp_path: Path) -> _Plan:
    plan = _Plan(results.output_path(tmp_path / "r.json", "run"))
    assert claim_path(plan.out).exists()
    return plan


def test_the_notes_come_before_and_the_results_line_after(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _claimed(tmp_path)
    done = results.Results({}, ())

    def session(p: _Plan, progress: Any, recorder: Any) -> results.Results:
        assert p is plan and recorder.argv[:2] == ["icount", "serve"]
        return done

    assert measure("serve", plan, session, quiet=False, outputs="server outputs") is done
    assert capsys.readouterr().err == (
        "icount: backend fake: asked for\n"
        f"icount: results in {plan.out} (server outputs in {plan.artifacts}/)\n"
    )
    assert not claim_path(plan.out).exists()  # the claim was given back


def test_quiet_prints_nothing_and_a_failed_session_gives_its_claim_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _claimed(tmp_path)

    def session(p: _Plan, progress: Any, recorder: Any) -> results.Results:
        raise RuntimeError("stopped")

    with pytest.raises(RuntimeError, match="stopped"):
        measure("run", plan, session, quiet=True, outputs="outputs of each run")
    assert capsys.readouterr().err == ""
    assert not plan.artifacts.exists()  # nothing was written: the folder reserved is gone
    assert not claim_path(plan.out).exists()


def test_the_file_to_resume_is_named_as_the_results_file_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert resume_file(None) is None
    assert resume_file(Path("sub/../r.json")) == tmp_path / "r.json"
