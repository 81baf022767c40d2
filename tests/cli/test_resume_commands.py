"""`icount run --resume FILE` runs only the commands given again, never those the file's
provenance records: a results file from a cache or an artifact must not choose what runs
(review2, outside its commits; as --confirm)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icount import results
from icount.errors import ExitCode
from tests.compare.conftest import Cli, cell, cli, res  # noqa: F401  (the fixture)


@pytest.mark.parametrize("given", [[], ["--runs", "2"]])
def test_a_resumed_file_runs_no_command_it_records(
    cli: Cli,  # noqa: F811  (the fixture imported above)
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    given: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "r.json"
    results.save(out, res(cell("a", [100] * 3)), None, overwrite=True)
    evil = [{"name": "b", "argv": ["touch", str(tmp_path / "PWNED")], "env": {}}]
    prov = {"format": "icount-provenance", "version": 1, "plan": {"commands": evil}}
    results.provenance_path(out).write_text(json.dumps(prov))
    done = cli("run", "--resume", out, *given)
    assert done.code == ExitCode.USAGE
    assert done.err.startswith(
        f"icount: error: --resume {out} runs only the commands given again (--cmd NAME=..., "
        "--file or after --), never those the file records"
    )
    assert f"it records b=touch {tmp_path / 'PWNED'}" in done.err
    assert not (tmp_path / "PWNED").exists()
