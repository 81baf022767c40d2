"""The backend registry: each backend declares its own options and doctor checks, the
registry checks a command's settings against them, and a new backend is its module
plus its line in REGISTRY (the fake backend, registered here as a new one would be)."""

from __future__ import annotations

import dataclasses

import pytest

from icount import backends, doctor
from icount.backends import callgrind, perf
from icount.errors import UsageError
from icount.results import details
from icount.session.options import Processes

# every setting `icount serve` passes, at its default
SERVE_DEFAULTS: dict[str, object] = {
    "thread": None,
    "processes": "all",
    "keep_profiles": False,
    "warmup_instrumented": False,
}


def _create(name: str, given: dict[str, object]) -> backends.Backend:
    """The backend as a command builds it: its settings from the command's options."""
    return backends.create(name, backends.settings(name, given))


def test_every_registered_backend_declares_frozen_typed_options() -> None:
    for name in backends.REGISTRY:
        reg = backends.registration(name)
        assert dataclasses.is_dataclass(reg.options)
        assert reg.options.__dataclass_params__.frozen  # type: ignore[attr-defined]
        built = _create(name, SERVE_DEFAULTS)
        assert built.name == name


def test_settings_reach_the_backend_typed() -> None:
    cg = _create("callgrind", {**SERVE_DEFAULTS, "thread": 2, "keep_profiles": True})
    assert isinstance(cg, callgrind.CallgrindBackend)
    assert (cg.options.thread, cg.options.root_only, cg.options.keep_profiles) == (2, True, True)
    pf = _create("perf", {"processes": "root", "event": "task-clock"})
    assert isinstance(pf, perf.PerfBackend)
    assert (pf.event, pf.inherit, pf.instruction_floor) == ("task-clock", False, None)
    # the commands' typed --processes (a StrEnum) is one of the declared literals
    rooted = _create("callgrind", {"processes": Processes.ROOT})
    assert isinstance(rooted, callgrind.CallgrindBackend) and rooted.options.root_only


@pytest.mark.parametrize(
    ("name", "settings", "message"),
    [
        ("perf", {"thread": 1}, "--thread needs the callgrind backend, not perf"),
        ("perf", {"keep_profiles": True}, "--keep-profiles needs the callgrind backend, not perf"),
        (
            "perf",
            {**SERVE_DEFAULTS, "warmup_instrumented": True},
            "--warmup-instrumented needs the callgrind backend, not perf",
        ),
        ("callgrind", {"event": "task-clock"}, "--event needs the perf backend, not callgrind"),
        ("callgrind", {"thread": "1"}, "--thread takes int or none, got '1'"),
        ("callgrind", {"thread": True}, "--thread takes int or none, got True"),
        ("callgrind", {"thread": 0}, "--thread takes a valgrind thread number from 1, got 0"),
        ("perf", {"processes": "some"}, "--processes takes all or root, got 'some'"),
        ("callgrind", {"keep_profiles": "yes"}, "--keep-profiles takes bool, got 'yes'"),
    ],
)
def test_a_setting_the_backend_does_not_take_is_refused_naming_the_flag(
    name: str, settings: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageError) as e:
        _create(name, settings)
    assert e.value.message == message


def test_a_setting_no_backend_takes_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="no registered backend takes the setting 'colour'"):
        _create("perf", {"colour": "blue"})


def test_window_names_are_those_results_files_record() -> None:
    assert callgrind.SERVE_DEFAULTS.window == details.WINDOW_DUMPS
    assert perf.SERVE_DEFAULTS.window == details.WINDOW_FIFO


def test_doctor_reads_every_backend_from_the_registry() -> None:
    names = [c.name for c in doctor.checks()]
    for name in backends.REGISTRY:
        for check in backends.registration(name).checks():
            assert check.name in names
    assert "valgrind" in names and "perf stat instructions:u" in names
    assert names[-5:] == [
        "setarch -R (ASLR off)",
        "CPUs icount may pin to",
        "load average",
        "glibc",
        "CPU",
    ]


def test_a_new_backend_is_its_module_and_its_registry_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(backends.REGISTRY, "fake", "tests.support.fake_backend")
    assert "fake" in backends.names()
    assert backends.choose("fake").backend == "fake"
    # serve's settings at their defaults pass; one the fake does not take is refused
    assert _create("fake", SERVE_DEFAULTS).name == "fake"
    with pytest.raises(UsageError, match="--thread needs the callgrind backend, not fake"):
        _create("fake", {"thread": 3})
    assert "fake backend" in [c.name for c in doctor.checks()]


def test_collector_patterns_are_a_tuple_from_the_command_to_the_cells_params() -> None:
    settings = backends.settings("callgrind", {"collector": ["my_gc", r"Sweep\w*"]})
    assert settings.collector == ("my_gc", r"Sweep\w*")
    cg = backends.create("callgrind", settings)
    assert cg.cell_params()["collectors"] == ["my_gc", r"Sweep\w*"]  # as files record them
    assert "collectors" not in _create("callgrind", {"collector": ()}).cell_params()
    # patterns joined in one string are no list of patterns; a mapping is no settings
    with pytest.raises(UsageError) as e:
        backends.settings("callgrind", {"collector": "my_gc\nSweep"})
    assert e.value.message == "--collector takes a list of str, got 'my_gc\\nSweep'"
    with pytest.raises(TypeError, match="dict are not the callgrind backend's settings"):
        backends.create("callgrind", {"collector": ("my_gc",)})
    # another backend takes the flag at its default only
    assert _create("perf", {"collector": []}).name == "perf"
    assert _create("perf", {"collector": ()}).name == "perf"


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"collector": [3]}, "--collector takes a list of str, got [3]"),
        ({"collector": "gc"}, "--collector takes a list of str, got 'gc'"),
        ({"collector": ["("]}, "--collector '(' is not a regular expression"),
    ],
)
def test_collector_patterns_are_checked_once(given: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError) as e:
        backends.settings("callgrind", given)
    assert e.value.message.startswith(message)
