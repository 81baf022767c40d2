"""Names, reasons, build modes and environment fields from results files reach every
compare output escaped (issue 30): no control sequence reaches a terminal or a step
summary, no newline forges a line or a heading, and no backtick lets a Markdown link or
HTML through."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from icount import export
from icount.compare import model
from icount.compare.model import FieldDifference
from icount.compare.thresholds import parse_thresholds
from icount.export import Kind
from tests.compare.conftest import cell, res

HOSTILE = (
    "osc\x1b]8;;http://e\x07link\x1b]8;;\x07",  # an OSC 8 hyperlink
    "c1\x9b31mred",  # a C1 CSI
    "bidi\u202egnp.exe",  # a right-to-left override
    "tick`[a](http://e)`x",  # a backtick that would end the code span
    "nl\n## 2099-01-01 · kept · forged",  # a newline and a heading
    "<img src=x onerror=alert(1)>",
)
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def _comparison() -> model.Comparison:
    base, new = [], []
    for i, name in enumerate(HOSTILE):
        # regressed, improved, within threshold, invalid in new, then missing on a side
        values = [(1000, 2000), (2000, 1000), (1000, 1001), (1000, 1000)][i % 4]
        base.append(cell(name, [values[0]] * 3, path=f"p{i}\x1b[2J"))
        failed = "crashed\x1b[2J\n## forged reason" if i % 4 == 3 else None
        new.append(cell(name, [values[1]] * 3, path=f"p{i}\x1b[2J", failed=failed))
    base.append(cell("only-base\u202e", [5.0] * 3))
    new.append(cell("only-new\x1b[0m`<b>", [5.0] * 3))
    c = model.compare(res(*base), res(*new), parse_thresholds([], 10))
    import dataclasses

    forced = (FieldDifference("cpu_flags", ["sse2"], ["sse2", "x\x1b[31m\n## f"]),)
    builds = ("fib\n## forged: optimisation -O0 → -O2\u202e",)
    return dataclasses.replace(c, forced=forced, build_changes=builds)


@pytest.mark.parametrize("fmt", export.names(Kind.COMPARISON))
def test_hostile_names_reach_no_output_raw(fmt: str) -> None:
    out = export.render_comparison(_comparison(), fmt, 200)
    found = RAW.findall(out.replace("\n", "").replace("\t", ""))
    assert not found, f"{fmt}: raw {found!r}"
    assert not re.search(r"^\s*#+ (2099|forged)", out, re.M), f"{fmt}: a forged heading"
    assert "\n## " not in out


def test_markdown_renders_no_link_html_or_heading_from_a_name() -> None:
    text = export.render_comparison(_comparison(), "md")
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "<a " not in html
    assert "<img" not in html and "<b>" not in html
    assert not re.search(r"<h\d", html)
    # each hostile name is shown, escaped, in the bullets and the table
    assert "``tick`[a](http://e)`x/p3\\x1b[2J``" in text
    assert "| ``tick`[a](http://e)`x/p3\\x1b[2J`` | 1000 | - |" in text
    # runs that repeat to the instruction: the exact counts, in the Markdown only
    assert "| `nl\\n## 2099-01-01 · kept · forged/p4\\x1b[2J` | 1000 | 2000 | +1000 |" in text


def test_the_terminal_table_shows_names_escaped() -> None:
    out = export.render_comparison(_comparison(), "table", 200)
    assert "nl\\n## 2099-01-01 · kept · forged/p4\\x1b[2J" in out
    assert "bidi\\u202egnp.exe" in out


def test_function_names_under_a_changed_cell_render_no_link() -> None:
    import dataclasses

    from icount.compare.explain import Explanation, Move

    evil = "f`[x](http://e)`<img src=x>"
    move = Move(evil, 100.0, 300.0, 200.0, 1.0, False, clones=((), (evil + ".cold",)))
    c = model.compare(res(cell("fib", [1000] * 3)), res(cell("fib", [1200] * 3)),
                      parse_thresholds([], 10))  # fmt: skip
    row = dataclasses.replace(c.rows[0], explained=Explanation("run", (move,), None))
    text = export.render_comparison(dataclasses.replace(c, rows=(row,)), "md")
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "<a " not in html and "<img" not in html
    assert "  - ``f`[x](http://e)`<img src=x>`` 100 -> 300" in text


GFM = (
    "see https://evil.example/login and www.evil.example",  # extended autolinks
    "ping @octocat and @org/team #1",  # mentions notify, #1 links an issue
    "$\\color{red}{FAIL}$",  # math
    "[click](https://evil.example/x)",
)


def test_markdown_names_are_code_spans_for_github() -> None:
    """GitHub's Markdown links URLs and www., @mentions, #refs and renders $math$ in
    prose, never in a code span (review2 M2, M3): every name in the comparison's
    table, its notes and an interleaved cell's pairs title is one."""
    import dataclasses

    from icount.compare.rounds import Pair, Rounds

    base = res(*(cell(n, [1000] * 3) for n in GFM))
    new = res(*(cell(n, [v] * 3) for n, v in zip(GFM, [2000, 1001, 1000, 500], strict=True)))
    c = model.compare(base, new, parse_thresholds([], 10))
    rounds = Rounds((Pair(1000.0, 1010.0),))
    rows = tuple(dataclasses.replace(r, rounds=rounds) for r in c.rows)
    text = export.render_comparison(dataclasses.replace(c, rows=rows), "md")
    for name in GFM:
        assert f"| `{name}` |" in text, name
        assert f"**`{name}`: interleaved pairs (base then new)**" in text, name
    html = MarkdownIt("commonmark").enable("table").render(text)
    for name in GFM:  # outside a code span only where a bullet's prose has it escaped
        shown = name.replace("&", "&amp;").replace("<", "&lt;")
        assert f"<code>{shown}</code>" in html, name
    assert "<a " not in html
