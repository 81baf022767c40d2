"""Labels shortened between words, never inside a number, told apart where they would
read alike: icount.shortening, as the charts (svg.clip, distinct_clips) and the
terminal's tables (terminal.shorten) use it; and prose in a table wrapped, not cut
(`4 i…ined copies` in `icount inline`)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icount import export, shortening, terminal
from icount.charts import svg
from icount.export import InlineDoc
from icount.shortening import BOTH, ELLIPSIS, END, START, could_be, distinct, shorten
from tests.inline.common import fixture_report

SECTIONS = [
    "[section .debug_str (compressed)]",
    "[section .debug_info (compressed)]",
    "[section .debug_line (compressed)]",
]
NUMBER = re.compile(r"[0-9]+(?:[.,][0-9]+)*")


def _whole_words(short: str, text: str) -> bool:
    """Each piece of `short` between ellipses starts and ends where `text` may be cut
    between words (or at its own ends)."""
    at = 0
    for k, piece in enumerate(p for p in short.split(ELLIPSIS)):
        if not piece:
            continue
        at = text.find(piece, at)
        assert at >= 0
        end = at + len(piece)
        if k and at > 0 and text[at - 1].isalnum() and text[at].isalnum():
            return False
        if end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
            return False
        at = end
    return True


@pytest.mark.parametrize(
    ("text", "room", "keep", "shown"),
    [
        ("-b1 -e lz4/silesia/mozilla [callgrind]", 24, START, "-b1 -e lz4/silesia/…"),
        ("4 inlined copies of foo", 10, START, "4 inlined…"),
        ("value 1,234,567.25 done", 12, START, "value…"),  # never 'value 1,234…'
        ("geo::Square::~Square()", 10, BOTH, "…~Square()"),
        ("std::vector<int>::push_back", 16, END, "…int>::push_back"),
        ("llvm::SelectionDAGISel::Select(int)", 14, START, "llvm::…"),  # never between '::'
        ("abcdefghijklmnopqrstuvwxyz", 8, START, "abcdefg…"),  # one word: cut as it must
        ("short", 5, START, "short"),
    ],
)
def test_cut_between_words(text: str, room: int, keep: str, shown: str) -> None:
    assert shorten(text, room, keep) == shown


def test_three_sections_that_share_a_start_and_an_end_stay_apart() -> None:
    """`[section…mpressed)]` three times was the report's legend; each now keeps the part
    that differs, at every width from 14 characters."""
    for room in range(14, 34):
        shown = distinct(SECTIONS, room)
        assert len(set(shown)) == 3, (room, shown)
        for short, name in zip(shown, SECTIONS, strict=True):
            assert len(short) <= room
            assert not any(could_be(short, o) for o in SECTIONS if o != name), (room, short)
        assert all(name in s for s, name in zip(shown, ("str", "info", "line"), strict=True))


def test_three_builds_of_one_program_stay_apart() -> None:
    builds = [f"build/{b}/lzbench/-b1 -e {c}/silesia/mozilla" for b in ("O2", "O3")
              for c in ("lz4", "lz4hc,1,9")]  # fmt: skip
    for room in (26, 30, 36):
        shown = svg.distinct_clips(builds, room * 7.0)
        for short, name in zip(shown, builds, strict=True):
            assert not any(could_be(short, o) for o in builds if o != name), (room, short)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["std", "::", "vector", "<", ">", "_", "1.25", "1234", " ", "/", "Ab"]),
        min_size=1,
        max_size=24,
    ).map("".join),
    st.integers(min_value=1, max_value=40),
    st.sampled_from([START, END, BOTH]),
)
def test_never_wider_than_the_room_and_never_inside_a_number(
    text: str, room: int, keep: str
) -> None:
    short = shorten(text, room, keep)
    assert len(short) <= room
    if short == text:
        return
    assert could_be(short, text)
    kept = short.replace(ELLIPSIS, " ")
    for m in NUMBER.finditer(kept):  # a number shown is one of the text's, whole
        assert any(m.group(0) == n.group(0) for n in NUMBER.finditer(text)), (text, short)


def test_wide_characters_take_two_cells() -> None:
    text = "表示/表示/表示/表示/表示/表示"
    short = terminal.shorten(text, 12)
    assert terminal.cell_len(short) <= 12 and _whole_words(short, text)


def test_the_terminal_shortens_labels_between_words_and_apart() -> None:
    from icount.tables import Column, Table, render_terminal

    t = Table([Column("section", "left"), Column("bytes"), Column("VM"), Column("share")])
    for name in SECTIONS:
        t.add_row([name, "123,456,789", "123,456,789", "12.5%"])
    out = render_terminal(t, 60)
    rows = [line.split("   ")[0] for line in out.splitlines()[2:5]]
    assert len(set(rows)) == 3 and all("…" in r for r in rows), rows
    for short, name in zip(rows, SECTIONS, strict=True):
        assert _whole_words(short.strip(), name), short
    assert out.count("123,456,789") == 6  # no number cut


def test_inline_decisions_wrap_instead_of_being_cut() -> None:
    """The sites table is prose: at 60 columns its rows wrap ('4 i…ined copies' was a
    row cut in its middle)."""
    text = export.render(InlineDoc(fixture_report(pair="inline")), "table", 60)
    part = text.split("Inlining decisions that differ")[1]
    assert "…" not in part
    assert "8 inlined copies of fib" in part
    assert max(terminal.cell_len(line) for line in part.splitlines()) <= 60


def test_module_is_used_by_both() -> None:
    """One algorithm: the charts' and the terminal's shortening agree on plain text."""
    name = "llvm::SelectionDAGISel::SelectCodeCommon(llvm::SDNode*, unsigned int)"
    assert terminal.shorten(name, 30) == shortening.shorten(name, 30, BOTH)


def test_a_long_title_breaks_where_a_phrase_ends() -> None:
    title = (
        "build/O2/lzbench to build/O2lto/lzbench: file bytes +50.64 KiB; "
        "8 sections changed, 3 more not shown"
    )
    assert shortening.lines(title, 60, 3) == [  # after the clause, not after 'bytes'
        "build/O2/lzbench to build/O2lto/lzbench:",
        "file bytes +50.64 KiB; 8 sections changed, 3 more not shown",
    ]
    rows = shortening.lines(title, 40, 2)
    assert len(rows) == 2 and rows[-1].endswith(ELLIPSIS) and all(len(r) <= 40 for r in rows)


def test_a_chart_under_a_long_title_moves_down() -> None:
    """A title too long for one line takes a second, and the chart moves down by it."""
    from icount.charts import diverging
    from icount.compare.drawn import CompareRow, DrawnComparison, Side

    def chart(backend: str) -> tuple[float, str]:
        row = CompareRow("fib", "", backend, "instructions", Side(1, 1, 1, 1),
                         Side(2, 2, 2, 1), 1, 1.0, 0.01, "regressed", "")  # fmt: skip
        fig = diverging.comparison_figure(DrawnComparison("v", (), (row,), (), None, None), "p")
        return fig.height, fig.body

    short_h, short_body = chart("callgrind")
    long_h, long_body = chart("callgrind-with-a-backend-name-" + "very-" * 12 + "long")
    assert long_h == short_h + svg.TITLE_LINE
    assert 'transform="translate(0,16)"' in long_body and "transform" not in short_body
    head, dy = svg.heading(8, 15, "a title; " * 60, 760)
    assert dy == 2 * svg.TITLE_LINE and head.count("<text") == 3 and "<title>" in head
