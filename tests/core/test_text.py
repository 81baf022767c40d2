from hypothesis import given
from hypothesis import strategies as st

from icount.text import printable


def test_plain_text_is_unchanged() -> None:
    for s in ("fib-10", "server/sections/.dynsym", "C:\\dir", "µs ünïcode 漢字", ""):
        assert printable(s) == s


def test_controls_are_escaped_to_one_line() -> None:
    assert printable("a\nicount: forged") == "a\\nicount: forged"
    assert printable("\x1b[31mred") == "\\x1b[31mred"
    assert printable("x\x00y\x7f") == "x\\x00y\\x7f"
    assert printable("abc\u202edef") == "abc\\u202edef"
    assert printable("a\u2028b") == "a\\u2028b"


def test_backslashes_double_only_beside_an_escape() -> None:
    # "a\\n" (a backslash, then n) must not print like "a\n" (a newline) once escaped
    assert printable("a\\n\n") == "a\\\\n\\n"
    assert printable("a\\n") == "a\\n"


@given(st.text())
def test_output_is_one_printable_line(s: str) -> None:
    out = printable(s)
    assert "\n" not in out and "\r" not in out and "\x1b" not in out
    assert all(ch.isprintable() for ch in out)
