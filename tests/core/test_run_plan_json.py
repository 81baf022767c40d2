"""`icount run`'s plan as its provenance records it (RunRequest.to_json) is what
`--resume` reads back: every option of run_plan.RESUMED_OPTIONS is written, so one added
there cannot be silently left out of the file (planning.resumed_options skips a key
the file does not hold)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from icount import run_plan
from icount.measure_command import CommandSpec
from icount.run_plan import RESUMED_OPTIONS, RunRequest
from icount.session import options as o
from icount.session import resume as resume_mod

COMMANDS = (CommandSpec("a", ("/bin/true",), {"K": "v"}),)
# a value other than its default for every resumed option: a new option fails the test
# until it is given one here
NOT_DEFAULT: dict[str, Any] = {
    "backend": "perf",
    "runs": 7,
    "max_spread": 0.025,
    "allowed_exits": frozenset({0, 3}),
    "timeout": 12.5,
    "memory": True,
    "floor": "auto",
    "cache_sim": True,
}


def resumed(saved: RunRequest, monkeypatch: pytest.MonkeyPatch) -> RunRequest:
    """A request of COMMANDS alone completed from `saved`'s recorded plan, as JSON."""
    plan = json.loads(json.dumps(saved.to_json()))
    monkeypatch.setattr(resume_mod, "saved_plan", lambda resume: plan)
    return run_plan.resume_request(RunRequest(COMMANDS), Path("r.json"), frozenset())


def test_every_resumed_option_is_recorded_and_read_back(monkeypatch: pytest.MonkeyPatch) -> None:
    assert set(NOT_DEFAULT) == set(RESUMED_OPTIONS)
    defaults = RunRequest()
    for option, value in NOT_DEFAULT.items():
        assert getattr(defaults, option) != value, option
    saved = RunRequest(COMMANDS, **NOT_DEFAULT)
    assert resumed(saved, monkeypatch) == saved


def test_any_exit_is_recorded_and_read_back(monkeypatch: pytest.MonkeyPatch) -> None:
    saved = RunRequest(COMMANDS, allowed_exits=None)
    assert resumed(saved, monkeypatch) == saved


def test_options_off_are_not_recorded_so_a_plan_reads_as_before_they_existed() -> None:
    plan = RunRequest(COMMANDS).to_json()
    assert list(plan) == ["commands", "backend", "runs", "max_spread", "allowed_exits", "timeout"]
    assert plan["commands"] == [{"name": "a", "argv": ["/bin/true"], "env": {"K": "v"}}]
    assert (plan["max_spread"], plan["allowed_exits"]) == ("1%", [0])


def test_an_option_added_to_the_resumed_ones_is_recorded_without_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """keep_profiles stands for a setting added later: its entry in RESUMED_OPTIONS is
    all it takes (a plan written field by field left it out, and --resume dropped it)."""
    monkeypatch.setitem(RESUMED_OPTIONS, "keep_profiles", o.bool_from_json)
    saved = RunRequest(COMMANDS, keep_profiles=True)
    assert saved.to_json()["keep_profiles"] is True
    assert resumed(saved, monkeypatch) == saved
