"""Renderers against golden files. The numbers are constructed, not measured: these tests
check layout and byte-stability, not counting."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from icount import export, results, results_table
from icount.results import Cell, Results, Run
from icount.results.details import WINDOW_DUMPS, CommandDetail, Rep, ServeDetail
from tests.support.golden import assert_golden

GOLDEN = Path(__file__).parent / "golden"
FP = {"backend": "callgrind", "tool_version": "valgrind 3.19.0", "arch": "x86_64"}


def _cell(name: str, path: str, values: list[float], reason: str | None = None) -> Cell:
    runs = tuple(
        Run(v, reason is None, reason, ServeDetail(WINDOW_DUMPS, 100, (Rep(int(v * 1000), 1000),)))
        for v in values
    )
    return Cell(
        name, path, "callgrind", results.UNIT_PER_REQUEST, runs, {"requests": 1000}, 3, 0.01
    )


def sample() -> Results:
    return Results(
        FP,
        (
            _cell("nginx", "plaintext", [13012.4, 13012.1, 13012.9]),
            _cell("nginx", "json", [13240.0, 13241.5, 13239.2]),
            _cell("c-epoll", "plaintext", [3102.2, 3101.9, 3102.5]),
            _cell("c-epoll", "json", [3180.0], reason="status 500, expected 200"),
            _cell("python-asyncio", "plaintext", [312930.0, 318000.0, 309000.0]),
            _cell("python-asyncio", "json", [402000.0, 402100.0, 401900.0]),
        ),
    )


def single() -> Results:
    runs = tuple(Run(float(v), True, None, CommandDetail(0)) for v in (407921, 407921, 407923))
    cell = Cell(
        "loop", "", "callgrind", results.UNIT_INSTRUCTIONS, runs, {"argv": ["loop"]}, 3, 0.01
    )
    return Results(FP, (cell,))


def commands() -> Results:
    """Four commands as a user lists them (C, Go, Rust, Python; their cells in another
    order), Go's runs differing as Go's do: the figures of fib(27) measured here."""
    given = {"c": [6129542] * 3, "go": [10233032, 10244345, 10239556],
             "rust": [6320104] * 3, "python": [173584065] * 3}  # fmt: skip
    cells = [
        Cell(name, "", "callgrind", results.UNIT_INSTRUCTIONS,
             tuple(Run(float(v), True, None, CommandDetail(0)) for v in values),
             {"argv": [name]}, 3, 0.01, order=order)
        for order, (name, values) in enumerate(given.items())
    ]  # fmt: skip
    return Results(FP, tuple(reversed(cells)))


CASES = [(name, fmt) for name in ("serve", "run") for fmt in ("table", "md", "csv", "json")]


@pytest.mark.parametrize(("name", "fmt"), CASES)
def test_golden(name: str, fmt: str) -> None:
    res = sample() if name == "serve" else single()
    extra = (
        [results_table.ExtraColumn("binary size", lambda n: f"{len(n)} KiB")]
        if name == "serve"
        else []
    )
    text = export.render_results(res, fmt, 100, extra)
    assert_golden(GOLDEN / f"{name}.{fmt}", text)
    # Same input in another order renders the same bytes.
    shuffled = Results(res.fingerprint, tuple(reversed(res.cells)))
    assert export.render_results(shuffled, fmt, 100, extra) == text


def test_notes_say_what_each_figure_sums() -> None:
    from icount.results.details import ProcessShare

    def served(processes: int) -> ServeDetail:
        shares = tuple(ProcessShare(i, "root" if i == 0 else "child", 10) for i in range(processes))
        return ServeDetail(WINDOW_DUMPS, 100, (Rep(8000, 1000, shares),))

    def one(name: str, detail: ServeDetail, **params: object) -> Cell:
        runs = (Run(8.0, True, None, detail),)
        return Cell(name, "p", "callgrind", results.UNIT_PER_REQUEST, runs, params, 1, 0.01)

    res = Results(
        FP,
        (
            one("workers", served(3)),
            one("single", served(1)),
            one("root", served(1), processes="root"),
            one("thread", served(1), thread=2, processes="root"),
        ),
    )
    notes = results_table.build_table(res).notes
    assert (
        "workers/p/callgrind: 3 processes summed per window (the started process and its children)"
        in notes
    )
    assert "root/p/callgrind: the started process only (--processes root)" in notes
    assert "thread/p/callgrind: valgrind thread 2 of the started process only" in notes
    assert not any(n.startswith("single/") for n in notes)  # one process: nothing to say


@pytest.mark.parametrize("fmt", ["table", "md", "csv"])
@pytest.mark.parametrize("sort", results_table.SORTS)
def test_rows_come_in_the_order_given_or_by_name(fmt: str, sort: str) -> None:
    text = export.render_results(commands(), fmt, 100, sort=sort)
    assert_golden(GOLDEN / f"commands-by-{sort}.{fmt}", text)
    rows = [re.split(r"[\s,|]+", line.strip("| "))[0] for line in text.splitlines()]
    want = ["c", "go", "rust", "python"] if sort == "order" else ["c", "go", "python", "rust"]
    assert [r for r in rows if r in want] == want


def test_rows_of_version_1_files_keep_their_order_by_name() -> None:
    """Version-1 files have no order (0 everywhere): rows by name, as that icount printed."""
    cells = tuple(replace(c, order=0) for c in commands().cells)
    text = export.render_results(Results(FP, cells), "table", 100)
    assert text == export.render_results(commands(), "table", 100, sort="name")


def _idle_cell(name: str, idle: list[tuple[float, float | None]]) -> Cell:
    """A cell whose runs' idle windows counted these (instructions in 1 s, share)."""
    from icount.results.details import IdleCount

    runs = tuple(
        Run(
            55.0,
            True,
            None,
            ServeDetail(
                WINDOW_DUMPS,
                100,
                (Rep(55_000, 1000),),
                idle=IdleCount(count, 1.0),
                time_share=share,
            ),
        )
        for count, share in idle
    )
    return Cell(name, "p", "callgrind", results.UNIT_PER_REQUEST, runs, {}, 3, 0.01)


def test_the_clock_note_is_a_share_of_each_window_only_when_most_runs_measured_one() -> None:
    """Values from the quick start of 2026-12-01: uvicorn's idle windows agree (~590k
    instructions/s, 0.56-0.63% of a window); Node's collector fell into one idle second
    of three, which once printed as "~0.5% of each window ... (414 instructions/s)"."""
    res = Results(
        FP,
        (
            _idle_cell("uvicorn", [(589_855, 0.0056), (592_245, 0.0061), (590_455, 0.0063)]),
            _idle_cell("node", [(277_242, 0.005), (414, None), (414, None)]),
            _idle_cell("quiet", [(414, None), (420, None), (13_000, None)]),
            _idle_cell("two", [(50_000, 0.002), (600, None)]),
            # the largest share and the largest rate, each (not one window's pair)
            _idle_cell(
                "many", [(900_000, 0.002), (50_000, 0.004), (10, None), (20, None), (20, None)]
            ),
        ),
    )
    notes = [n for n in results_table.build_table(res).notes if "idle" in n]
    assert notes == [
        "many/p/callgrind: 2 of 5 idle windows counted up to 900.0k instructions/s (~0.4% "
        "of a window), the others 10-20 instructions/s: work that runs now and then, not "
        "every second (a collector, a timer)",
        "node/p/callgrind: 1 of 3 idle windows counted 277.2k instructions/s (~0.5% of a "
        "window), the others 414 instructions/s: work that runs now and then, not every "
        "second (a collector, a timer)",
        "two/p/callgrind: 1 of 2 idle windows counted 50.00k instructions/s (~0.2% of a "
        "window), the others 600 instructions/s: work that runs now and then, not every "
        "second (a collector, a timer)",
        "uvicorn/p/callgrind: ~0.61% of each window is work driven by the clock (590.5k "
        "instructions/s while idle)",
    ]
