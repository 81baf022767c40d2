"""A serve cell's runs gathered for its cell (serve/cell_windows.py), from outcomes made
by hand: which windows explain its spread, which profile it keeps, what it notes."""

from __future__ import annotations

from icount.results.cell_profile import PER_REQUEST, PER_RUN
from icount.results.details import Rep, RequestIdentity, ServeDetail
from icount.serve.cell_windows import gather
from icount.serve.runs import RunOutcome
from icount.window_profile import FunctionCost, WindowProfile

REQUEST = RequestIdentity(44, "ab" * 32)


def _profile(name: str, self_ir: float) -> WindowProfile:
    return WindowProfile({name: FunctionCost(self_ir, self_ir, 1)}, top=5)


def _run(
    reason: str | None,
    *windows: tuple[float, WindowProfile | None],
    request: RequestIdentity | None = None,
    notes: tuple[str, ...] = (),
    connection: str | None = None,
) -> RunOutcome:
    reps = tuple(Rep(ir, 10) for ir, _ in windows)
    detail = ServeDetail("dumps", 0, reps, request)
    value = None if reason else reps[0].per_request
    functions = tuple(f for _, f in windows)
    return RunOutcome(value, reason, detail, None, (), functions, notes, connection)


def test_windows_profiles_notes_and_the_request_of_the_runs() -> None:
    said = "the server closed every connection"
    outcomes = [
        _run(None, (1000, _profile("a", 100)), (1100, None), notes=(said,)),
        _run(
            None,
            (1200, _profile("b", 120)),
            request=REQUEST,
            notes=(said, "other"),
            connection="close",
        ),
        _run("rep 1: the server exited", (5000, _profile("c", 500))),
    ]
    got = gather(outcomes, cold_start=False)
    assert [(r.valid, r.reason) for r in got.runs] == [
        (True, None), (True, None), (False, "rep 1: the server exited")
    ]  # fmt: skip
    # every window that kept its functions, the failed run's too (the spread's evidence)
    assert [w.label for w in got.windows] == ["run 1 rep 1", "run 2 rep 1", "run 3 rep 1"]
    assert got.notes == (said, "other")  # each once, in the order said
    assert (got.connection, got.request) == ("close", REQUEST)
    # the profile is the valid runs' windows only: c, of the failed run, is not in it
    assert got.profile is not None and (got.profile.per, got.profile.windows) == (PER_REQUEST, 2)
    assert sorted(f.name for f in got.profile.functions) == ["a", "b"]


def test_a_cold_start_profile_is_per_run_and_no_runs_gather_nothing() -> None:
    cold = gather([_run(None, (800, _profile("main", 800)))], cold_start=True)
    assert cold.profile is not None and cold.profile.per == PER_RUN
    none = gather([], cold_start=False)
    assert (none.runs, none.windows, none.profile, none.notes) == ((), (), None, ())
    assert (none.connection, none.request) == (None, None)
