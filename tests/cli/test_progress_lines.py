"""Plain progress lines (stderr is not a TTY, e.g. a CI log): the whole session's ETA."""

from __future__ import annotations

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
