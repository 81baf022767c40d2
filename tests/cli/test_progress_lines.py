"""Plain progress lines (stderr is not a TTY, e.g. a CI log): the whole session's ETA,
by the pace of the runs done or by the cost the measuring code estimates."""

from __future__ import annotations

import pytest

from icount.cli.progress import plain_line


def test_no_estimate_before_any_work_is_done() -> None:
    assert plain_line("c-epoll/json run 1/3", 0, 6, 12.0) == "icount: [0/6] c-epoll/json run 1/3"


def test_the_session_eta_follows_the_pace_of_the_runs_done() -> None:
    # 2 of 6 runs in 60 s: 4 left at 30 s each
    line = plain_line("c-epoll/json run 3/3", 2, 6, 60.0)
    assert line == "icount: [2/6] c-epoll/json run 3/3 [session 60 s in, ~2 min left]"
    assert plain_line("x", 1, 4, 600.0).endswith("[session 10 min in, ~30 min left]")


def test_lines_without_a_count_and_the_last_run_have_no_estimate() -> None:
    assert plain_line("building c-epoll", 0, 0, 5.0) == "icount: building c-epoll"
    assert plain_line("x", 6, 6, 100.0) == "icount: [6/6] x"


def test_an_estimate_by_cost_replaces_the_pace_of_the_runs() -> None:
    # 2 of 6 runs in 60 s, but the runs left cost 20 times those done
    line = plain_line("big/json run 1/3", 2, 6, 60.0, left=2400.0)
    assert line == "icount: [2/6] big/json run 1/3 [session 60 s in, ~40 min left]"
    assert plain_line("x", 0, 6, 60.0, left=2400.0) == "icount: [0/6] x"


def test_plain_lines_show_the_time_left_the_measuring_code_tells(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from icount.cli.progress import PlainLines
    from icount.progress import Paced, tell_time_left

    now = [10.0]
    lines = PlainLines(clock=lambda: now[0])
    assert isinstance(lines, Paced)
    now[0] += 30.0
    lines("a run 2/2", 1, 4)  # nothing told: the pace of the runs
    tell_time_left(lines, 600.0)
    lines("b run 1/2", 2, 4)
    tell_time_left(lines, None)  # nothing measured to tell from: the pace again
    lines("c run 1/2", 2, 4)
    lines("done", 4, 4)
    assert capsys.readouterr().err.splitlines() == [
        "icount: [1/4] a run 2/2 [session 30 s in, ~90 s left]",
        "icount: [2/4] b run 1/2 [session 30 s in, ~10 min left]",
        "icount: [2/4] c run 1/2 [session 30 s in, ~30 s left]",
    ]
    # a progress that shows no estimate has no use for one
    said: list[str] = []
    tell_time_left(lambda text, done, total: said.append(text), 5.0)
    assert said == []
