"""A baseline recorded before callgrind/functions.py named the start-up code apart
(fixtures/startup_names/old_icount_a.json: `_start` and `__libc_start_call_main` one
`(below main)`, the loader's entry in the code without a symbol) compared with a file of
today's names (new_icount_b.json, the same program with `mix` not inlined: +6
instructions): the explanation and the differential flame graph show the program's
change, not the renaming's (icount/startup.py), and the old file drawn alone has `main`
under its start-up code, not beside a cycle."""

from __future__ import annotations

import html
import re
from pathlib import Path

from icount.charts.figure import inline
from icount.charts.flame import OLD_START_UP, flame_figure
from icount.compare.model import compare
from icount.compare.thresholds import Thresholds
from icount.results.cell_profile import CellProfile
from icount.results.files import load
from icount.window_profile import UNNAMED

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "startup_names"
OLD, NEW = load(FIXTURES / "old_icount_a.json"), load(FIXTURES / "new_icount_b.json")
START_UP = {"(below main)", "_start", "[program entry]", UNNAMED}


def _profile(which: str) -> CellProfile:
    p = (OLD if which == "old" else NEW).cells[0].profile
    assert p is not None
    return p


def _titles(body: str) -> dict[str, tuple[str, str]]:
    found = re.findall(r'<title>([^<]*)</title><rect class="(\w+)"', html.unescape(body))
    return {t.partition(":")[0]: (t, cls) for t, cls in reversed(found)}


def test_the_explanation_names_no_start_up_move() -> None:
    c = compare(OLD, NEW, Thresholds(0.0, (), 0))
    assert c.rows[0].delta == 6
    explained = c.rows[0].explained
    assert explained is not None
    names = [m.name for m in explained.moves]
    assert names[:2] == ["mix", "main"] and not START_UP & set(names)


def test_the_differential_flame_graph_moves_only_the_program() -> None:
    body = inline(flame_figure(_profile("new"), "prog", "d", _profile("old")))  # type: ignore[arg-type]
    titles = _titles(body)
    assert "[program entry]" not in titles and "_start" not in titles
    # the start-up chain and main moved by the program's +6, each said in its title
    for name in ("(below main)", "main"):
        title, cls = titles[name]
        assert cls == "same" and "(+6)" in title and "base 0" not in title
    assert OLD_START_UP in titles["(below main)"][0]
    assert titles["mix"][1] == "reg"
    assert {n for n, (_, cls) in titles.items() if cls != "same"} == {"mix"}


def test_an_old_file_drawn_alone_has_main_under_its_start_up_code() -> None:
    body = inline(flame_figure(_profile("old"), "prog", "f"))  # type: ignore[arg-type]
    title = _titles(body)["main"][0]
    drawn = float(re.search(r": ([\d,.]+) instructions", title).group(1).replace(",", ""))  # type: ignore[union-attr]
    # callgrind_annotate's main: 256,664; the old pool of the code without a symbol
    # spreads 0.5% of it over that pool's other caller
    assert 0.99 * 256_664 < drawn <= 256_664
