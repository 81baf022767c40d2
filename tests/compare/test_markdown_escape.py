"""text.md_code and text.md_text: names from files in Markdown read as written and
render as nothing else (no link, no HTML, no heading, no code span closed early)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icount.text import md_code, md_text


def _code_content(span: str) -> str:
    """What CommonMark shows for one code span: the text between the fences, one space
    stripped from each side where both are spaces."""
    m = re.fullmatch(r"(`+)(.*?)\1", span, re.S)
    assert m is not None, span
    body = m.group(2)
    if len(body) >= 2 and body[0] == body[-1] == " " and body.strip():
        body = body[1:-1]
    assert not re.search(rf"(?<!`){m.group(1)}(?!`)", body), "the fence closes inside"
    return body


@pytest.mark.parametrize(
    "name",
    ["fib", "a`b", "`[x](http://e)`", "a``b`", " x ", "x`", "```"],
)
def test_a_code_span_holds_backticks_and_shows_them(name: str) -> None:
    assert _code_content(md_code(name)) == name


def test_a_code_span_shows_controls_escaped_on_one_line() -> None:
    span = md_code("x\n## 2099-01-01 · kept · forged\x1b[31m\u202e")
    assert "\n" not in span and "\x1b" not in span and "\u202e" not in span
    assert _code_content(span) == "x\\n## 2099-01-01 · kept · forged\\x1b[31m\\u202e"


def test_prose_escapes_every_character_that_starts_markdown() -> None:
    shown = md_text("see [here](http://e) <img src=x> `a` *b* _c_ ~d~ &amp; |e| !f \\g a_b")
    # every active character is preceded by a backslash that is not itself escaped
    for m in re.finditer(r"[`*~\[\]<&]|(?<![a-z])_|_(?![a-z])", shown):
        before = shown[: m.start()]
        assert (len(before) - len(before.rstrip("\\"))) % 2 == 1, shown
    assert shown.endswith(" |e| !f \\\\g a_b")  # inside a word, _ starts nothing
    assert md_text("fib_30 (threshold 1%)") == "fib_30 (threshold 1%)"


def test_prose_is_one_line() -> None:
    assert md_text("a\nb\u2028c") == "a\\\\nb\\\\u2028c"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from("`\\*_[]<&\n "),
               max_size=30).filter(lambda t: t.strip(" ")))  # fmt: skip
def test_the_ledger_page_reads_back_what_was_escaped(text: str) -> None:
    """compare.ledger.parse reads an entry as it renders (review2 L6): md_plain undoes md_text and
    md_code, giving printable's one line."""
    from icount.text import md_plain, printable

    assert md_plain(md_text(text)) == printable(text)
    assert md_plain(md_code(text)) == printable(text)


def test_a_reason_renders_no_github_math() -> None:
    """GitHub renders $...$ in prose as math (a red FAIL from a results file's reason:
    review2 M2); an escaped dollar is a dollar."""
    assert md_text("$\\color{red}{FAIL}$") == "\\$\\\\color{red}{FAIL}\\$"
