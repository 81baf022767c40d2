"""The progress bar on a terminal: its eta is the time left the measuring code tells, by
what its work costs, counted down between reports; rich's own by the units done without."""

from __future__ import annotations

import io

from rich.console import Console
from rich.progress import TimeRemainingColumn

from icount.cli.progress_bar import Bar, TimeLeftColumn
from icount.progress import Paced, tell_time_left


def test_the_bar_shows_the_time_left_it_is_told_counting_down() -> None:
    now = [50.0]
    bar = Bar(Console(file=io.StringIO(), force_terminal=True, width=120), clock=lambda: now[0])
    assert isinstance(bar, Paced)
    column = next(c for c in bar.bar.columns if isinstance(c, TimeLeftColumn))
    task = bar.bar.tasks[0]
    bar("a run 1/2", 0, 4)
    assert column.render(task).plain == "-:--:--"  # nothing done, nothing told
    tell_time_left(bar, 3725.0)
    bar("b run 1/2", 2, 4)
    assert column.render(task).plain == "1:02:05"
    now[0] += 65.0  # no report since: the time told, less the time gone by
    assert column.render(task).plain == "1:01:00"
    now[0] += 7200.0
    assert column.render(task).plain == "0:00:00"
    tell_time_left(bar, None)  # nothing to tell from: rich's pace of the units done
    bar("c run 2/2", 3, 4)
    assert column.render(task).plain == TimeRemainingColumn().render(task).plain
