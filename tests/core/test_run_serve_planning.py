"""The planning steps `icount run` and `icount serve` share (icount/session/planning.py):
the results file reserved and never replaced unasked, the recorded options a resumed
session takes, and the plans of both commands built on them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from icount import backends, results, run_plan
from icount.errors import UsageError
from icount.serve import plan as serve_plan
from icount.session import options as o
from icount.session import planning


def _reserve(output: Path | None, resume: Path | None = None, force: bool = False) -> Path:
    with planning.reserved_output(output, resume, "run", force=force) as out:
        results.release_unused(out)
        return out


@pytest.mark.parametrize("existing", ["r.json", "r.provenance.json"])
def test_neither_a_results_file_nor_its_provenance_is_replaced_unasked(
    tmp_path: Path, existing: str
) -> None:
    (tmp_path / existing).write_text("{}")
    with pytest.raises(UsageError, match=f"{existing} exists; refusing to overwrite it"):
        _reserve(tmp_path / "r.json")
    assert _reserve(tmp_path / "r.json", force=True) == tmp_path / "r.json"
    # the file resumed is the one written: no refusal
    assert _reserve(None, resume=tmp_path / "r.json") == tmp_path / "r.json"
    assert (tmp_path / existing).read_text() == "{}"


def test_a_plan_refused_gives_its_reserved_number_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with (
        pytest.raises(UsageError, match="refused inside"),
        planning.reserved_output(None, None, "serve", force=False) as out,
    ):
        assert out == tmp_path / "icount-results" / "serve-001.json"
        assert out.with_suffix(".artifacts").is_dir()
        raise UsageError("refused inside")
    assert list((tmp_path / "icount-results").iterdir()) == []
    assert _reserve(None) == tmp_path / "icount-results" / "run-001.json"


def test_resumed_options_are_the_recorded_ones_not_given_again() -> None:
    readers: dict[str, Callable[[Any], Any]] = {
        "runs": lambda v: o.int_from_json(v, 1, 9),
        "allowed_exits": list,
    }
    recorded = {"runs": 5, "allowed_exits": [0, 1], "other": 1}
    resume = Path("r.json")
    taken = planning.resumed_options(readers, recorded, frozenset(), resume)
    assert taken == {"runs": 5, "allowed_exits": [0, 1]}
    # given again by its parameter's name, which differs from the option's
    names = {"allowed_exits": "allow_exit"}
    given = frozenset({"allow_exit"})
    assert planning.resumed_options(readers, recorded, given, resume, names) == {"runs": 5}
    with pytest.raises(UsageError, match=r"^r.json: the recorded runs 50 is not valid$"):
        planning.resumed_options(readers, {"runs": 50}, frozenset(), resume)


def _provenance(path: Path, plan: dict[str, Any]) -> Path:
    results.provenance_path(path).write_text(json.dumps({"plan": plan}))
    return path


def test_run_resumes_the_recorded_exit_codes_unless_allow_exit_is_given(tmp_path: Path) -> None:
    from icount.measure_command import CommandSpec

    resume = _provenance(tmp_path / "r.json", {"allowed_exits": [0, 3], "runs": 7})
    asked = run_plan.RunRequest(commands=(CommandSpec("a", ("true",)),))
    resumed = run_plan.resume_request(asked, resume, frozenset())
    assert (resumed.allowed_exits, resumed.runs) == (frozenset({0, 3}), 7)
    given = run_plan.resume_request(asked, resume, frozenset({"allow_exit"}))
    assert (given.allowed_exits, given.runs) == (frozenset({0}), 7)


def test_serve_resumes_the_recorded_collectors_unless_collector_is_given(tmp_path: Path) -> None:
    resume = _provenance(tmp_path / "s.json", {"targets": ["a"], "collectors": ["gc_.*", "x"]})
    asked = serve_plan.ServeRequest(collectors=("mine",))
    resumed = serve_plan.resume_request(asked, resume, frozenset())
    assert resumed.collectors == ("gc_.*", "x")
    # to the backend as the tuple recorded, and to the cells' params as the list files hold
    settings = backends.settings("callgrind", resumed.backend_settings())
    assert settings.collector == ("gc_.*", "x")
    cells = backends.server_backend("callgrind", settings).cell_params()
    assert cells["collectors"] == ["gc_.*", "x"]
    given = serve_plan.resume_request(asked, resume, frozenset({"collector"}))
    assert given.collectors == ("mine",)


def test_each_command_builds_its_backend_from_the_settings_its_options_hold() -> None:
    serve = serve_plan.ServeRequest(collectors=("a", "b"), thread=2, profile_top=5)
    assert serve.backend_settings() == {
        "thread": 2,
        "processes": o.Processes.ALL,
        "keep_profiles": False,
        "warmup_instrumented": False,
        "collector": ("a", "b"),
        "profile_top": 5,
    }
    run = run_plan.RunRequest(keep_profiles=True)
    assert run.backend_settings() == {"keep_profiles": True, "profile_top": o.PROFILE_TOP}
