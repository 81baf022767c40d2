"""What a cell's windows cannot name, on recorded profiles of one program
(fixtures/serve/unsymbolized/record.sh): stripped, as distributions ship it, and the
same stripped binary with its symbols beside it, as a -dbgsym package installs them.
The remedy the note gives is what turns the first into the second."""

from __future__ import annotations

from pathlib import Path

import pytest

from icount.backends.valgrind import read_functions
from icount.results.details import Rep
from icount.serve import spread
from icount.serve.adapter import load_adapter
from icount.serve.server import Target
from tests.serve.test_auto_windows import cell, run
from tests.serve.test_runs import ADAPTER
from tests.support.fake_backend import FakeConfig

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "serve" / "unsymbolized"


def _windows(name: str, count: int = 2) -> list[spread.Window]:
    total, functions = read_functions(RECORDED / f"{name}.callgrind")
    return [
        spread.Window(
            f"run 1 rep {i + 1}", Rep(total, 1), {k: float(v) for k, v in functions.items()}
        )
        for i in range(count)
    ]


def test_a_stripped_programs_share_is_noted_with_the_remedy() -> None:
    stripped = _windows("stripped")
    share = spread.unsymbolized_share(stripped)
    assert share is not None and round(share, 3) == 0.936  # 1,844,283 of 1,970,880
    (note,) = spread.naming_notes(stripped, ())
    assert note == (
        "94% of the instructions ran in code without a symbol (a stripped binary or "
        "library, or a JIT's compiled code), which the notes that name functions and "
        "--collector patterns cannot see: installing the debug symbols of the server and "
        "its libraries names it (Debian: their -dbgsym packages, from the debian-debug "
        "archive, or debuginfod); a JIT's code has none; no collected runtime was "
        "recognised in it, so a collector's or a JIT compiler's work, if the server has "
        "one, is in the figure, not apart"
    )
    # where a runtime was recognised (its collector counted apart), the note stops there
    seen = [
        spread.Window(w.label, Rep(w.rep.instructions, 1, collector=0.0), w.functions)
        for w in stripped
    ]
    (note,) = spread.naming_notes(seen, ())
    assert note.endswith("a JIT's code has none")


def test_with_its_debug_symbols_installed_nothing_is_noted() -> None:
    named = _windows("debug-symbols")
    share = spread.unsymbolized_share(named)
    assert share is not None and share < 0.0001  # 96 instructions of the loader's
    assert spread.naming_notes(named, ()) == []


def test_a_collector_pattern_that_matched_nothing_is_a_warning() -> None:
    """`collect` has no name in the stripped build: the pattern matches nothing, which
    is said, not shown as a collector that cost 0; with the symbols it matches."""
    notes = spread.naming_notes(_windows("stripped"), ("collect", "handle|collect"))
    assert notes[1:] == [
        "warning: --collector 'collect' matched no function in any window: nothing was "
        "counted apart for it (a stripped library names none of its own functions: see its "
        "debug symbols)",
        "warning: --collector 'handle|collect' matched no function in any window: nothing "
        "was counted apart for it (a stripped library names none of its own functions: see "
        "its debug symbols)",
    ]
    assert spread.naming_notes(_windows("debug-symbols"), ("collect", "handle|collect")) == []


@pytest.mark.parametrize("pattern", ["colle", "ollect", "collect'2"])
def test_a_pattern_matches_a_whole_name_as_the_collector_does(pattern: str) -> None:
    """runtimes.runtime_work matches whole names, recursion levels (`'2`) taken as their
    function: so does the warning, so that it never contradicts a counted collector."""
    notes = spread.naming_notes(_windows("debug-symbols"), (pattern,))
    assert len(notes) == 1 and notes[0].startswith(f"warning: --collector {pattern!r}")


def test_no_windows_say_nothing() -> None:
    assert spread.naming_notes([], ("collect",)) == []
    assert spread.unsymbolized_share([]) is None


def test_a_collector_pattern_that_counted_nothing_shows_no_collector_of_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--collector alone (runtimes.USER), and nothing it names ran in any window: the
    run carries no runtime's figures (the table would show 'collector 0 ±0'), where a
    pattern that counted something keeps them. Through the fake backend, whose
    runtime stands for USER here."""
    from icount import runtimes

    monkeypatch.setattr(runtimes, "USER", "fake-gc")
    (tmp_path / "adapter.toml").write_text(ADAPTER)
    t = Target(load_adapter(tmp_path / "adapter.toml"), tmp_path / "build")
    nothing = run(t, tmp_path, FakeConfig(collector=lambda i: 0.0))
    d = nothing.detail
    assert nothing.reason is None and d is not None and d.runtime is None
    assert all(r.collector is None and r.runtime_calls is None for r in d.reps)
    assert cell([nothing]).runtime is None
    some = run(t, tmp_path, FakeConfig(collector=lambda i: 500.0 if i % 50 == 0 else 0.0), i=1)
    assert some.detail is not None and some.detail.runtime == "fake-gc"
    assert cell([some]).runtime is not None
