"""A serve cell measured with idle arrival is not compared with one measured closed (or
before arrival was recorded): a request's count follows when it arrives, and Go's total
holds its scheduler only with idle arrival. The advice, followed, compares them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from icount import results
from icount.results import Results

from .conftest import Cli, cell, res


def _serve(values: list[float], arrival: str | None) -> results.Cell:
    c = cell("nginx", values, "json", unit=results.UNIT_PER_REQUEST)
    return dataclasses.replace(c, params={} if arrival is None else {"arrival": arrival})


def test_an_old_baseline_and_an_idle_arrival_cell_are_not_compared(
    cli: Cli, write: Callable[[str, Results], Path]
) -> None:
    base = write("base.json", res(_serve([7815.0] * 3, None)))  # before arrival was recorded
    new = write("new.json", res(_serve([7815.0] * 3, "idle")))
    done = cli("compare", base, new, "-f", "json")
    assert done.code == 0, done.err
    assert '"verdict": "invalid in new"' in done.out
    assert "measured with --arrival idle, base with --arrival closed" in done.out
    assert "measure the new side with --arrival closed" in done.out
    # following it: the new side measured closed compares
    again = write("again.json", res(_serve([7815.0] * 3, "closed")))
    followed = cli("compare", base, again, "-f", "json")
    assert followed.code == 0 and '"verdict": "unchanged"' in followed.out
    assert cli("compare", base, new, "--fail-on-invalid").code == 5


def test_commands_have_no_arrival_to_differ() -> None:
    from icount.compare.model import _unusable

    a, b = cell("fib", [100.0] * 3), cell("fib", [100.0] * 3)
    assert _unusable(a, dataclasses.replace(b, params={"arrival": "idle"})) is None
