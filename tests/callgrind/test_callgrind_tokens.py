"""The numpy decoding of cost-line tokens, against Python's own int() and re."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from icount.callgrind import tokens

_GRAMMAR = re.compile(rb"\*|[+-]\d+|\d+|0[xX][0-9a-fA-F]+")


def spans(words: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data = b" ".join(words) + b"\n"
    arr = np.frombuffer(data, dtype=np.uint8)
    starts, ends, at = [], [], 0
    for w in words:
        starts.append(at)
        ends.append(at + len(w))
        at += len(w) + 1
    return arr, np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)


position_words = st.lists(
    st.one_of(
        st.from_regex(_GRAMMAR, fullmatch=True).filter(lambda w: len(w) <= 15),
        st.binary(min_size=1, max_size=6).filter(lambda w: not re.search(rb"[\s]", w)),
    ),
    min_size=1,
    max_size=20,
)


# Each form of the grammar and its edges (a lone sign, 0x with no digit, 15 digits,
# signs on hex, `*` beside text) once for sure; the random words find the rest.
@settings(max_examples=100, deadline=None)
@given(position_words)
@example([b"*", b"+0", b"-0", b"0", b"007", b"0x0", b"0XfF", b"9" * 15, b"+" + b"9" * 14])
@example([b"+", b"-", b"0x", b"0xg", b"+0x1", b"-0x1", b"1x"])
@example([b"**", b"*1", b"1*", b"+-1", b"--1", b"0x1.", b"\xff"])
def test_position_checks_agree_with_the_grammar(words: list[bytes]) -> None:
    arr, s, e = spans(words)
    expected = all(_GRAMMAR.fullmatch(w) for w in words)
    value, absolute, ok = tokens.positions(arr, s, e)
    assert bool(ok.all()) == expected
    for w, v, a, good in zip(words, value.tolist(), absolute.tolist(), ok.tolist(), strict=True):
        if good:
            if w == b"*":
                assert (v, a) == (0, False)
            elif w[:1] in b"+-":
                assert (v, a) == (int(w), False)
            else:
                assert (v, a) == (int(w, 0) if w[:2].lower() == b"0x" else int(w), True)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10**18 - 1), min_size=1, max_size=50))
@example([0, 1, 9, 10, 99_999_999, 100_000_000, 10**16, 10**18 - 1])
def test_costs_are_python_ints(values: list[int]) -> None:
    arr, s, e = spans([str(v).encode() for v in values])
    got, ok = tokens.costs(arr, s, e)
    assert ok.all()
    assert got.tolist() == values


@settings(max_examples=80, deadline=None)
@given(st.lists(st.text("0123456789", min_size=1, max_size=18), min_size=1, max_size=50))
@example(["0", "00000000", "000000001", "12345678", "123456789", "9" * 18, "0" * 17 + "1"])
def test_digit_values_are_python_ints(words: list[str]) -> None:
    # leading zeros included: a long cost splits into words of 8 digits and the rest
    arr, s, e = spans([w.encode() for w in words])
    assert tokens.digit_values(arr, s, e - s).tolist() == [int(w) for w in words]


def test_bad_costs_are_flagged() -> None:
    arr, s, e = spans([b"12", b"1x", b"+3", b"9" * 19, b"007"])
    _, ok = tokens.costs(arr, s, e)
    assert ok.tolist() == [True, False, False, False, True]


def test_resolve_the_manual_example() -> None:
    # "0x80001234 90 1 / +3 * 5 / +1 +1 6" from valgrind's cl-format.html.
    instr = tokens.resolve(np.array([0x80001234, 3, 1]), np.array([True, False, False]))
    line = tokens.resolve(np.array([90, 0, 1]), np.array([True, False, False]))
    assert instr.tolist() == [0x80001234, 0x80001237, 0x80001238]
    assert line.tolist() == [90, 90, 91]


def test_split_cost_lines_counts_tokens_per_selected_line() -> None:
    data = b"fn=x\n1 2\n\n+3  4\t5\n"
    arr = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(arr == 10).astype(np.int64)
    tok = tokens.split_cost_lines(arr, ends, np.array([False, True, False, True]), 1)
    words = [data[a:b] for a, b in zip(tok.start.tolist(), tok.end.tolist(), strict=True)]
    assert words == [b"1", b"2", b"+3", b"4", b"5"]
    assert tok.counts.tolist() == [2, 3] and tok.first.tolist() == [0, 2]
    second = [words[i] for i in np.asarray(tok.column(1)).tolist()]
    assert second == [b"2", b"4"]


def test_every_byte_in_every_word_of_long_tokens() -> None:
    # Tokens are read eight bytes at a time: a stray byte in the first, second or
    # third word, and a token ending at the very end of the data, must all be seen.
    words: list[bytes] = []
    for length in (1, 7, 8, 9, 15, 16, 17, 18):
        for at in sorted({0, length // 2, length - 1}):
            for byte in range(256):
                if byte in b" \t\n\r\x0b\x0c":
                    continue
                digits = bytearray(b"123456789012345678"[:length])
                digits[at] = byte
                words.append(bytes(digits))
    arr, s, e = spans(words)
    got, ok = tokens.costs(arr, s, e)
    hex_got, hex_ok = tokens.unsigned(arr, s, e, 16)
    for w, v, good, hv, hgood in zip(
        words, got.tolist(), ok.tolist(), hex_got.tolist(), hex_ok.tolist(), strict=True
    ):
        assert good == (re.fullmatch(rb"[0-9]{1,18}", w) is not None), w
        if good:
            assert v == int(w)
        assert hgood == (re.fullmatch(rb"[0-9a-fA-F]{1,16}", w) is not None), w
        if hgood:
            assert hv == int(w, 16) - (1 << 64 if int(w, 16) >= 1 << 63 else 0)
    tail = np.frombuffer(b"12345678901", dtype=np.uint8)  # no room for a full word
    value, ok = tokens.costs(tail, np.array([0, 9, 10]), np.array([11, 11, 11]))
    assert ok.all() and value.tolist() == [12345678901, 1, 1]


def test_split_cost_lines_counts_lines_with_trailing_blanks() -> None:
    for data in (b"1 2\nfn=x\n3\n+4 5 6\n", b"1 2 \nfn=x\n3\t\n+4 5 6\r\n"):
        arr = np.frombuffer(data, dtype=np.uint8)
        ends = np.flatnonzero(arr == 10).astype(np.int64)
        tok = tokens.split_cost_lines(arr, ends, np.array([True, False, True, True]), 1)
        words = [data[a:b] for a, b in zip(tok.start.tolist(), tok.end.tolist(), strict=True)]
        assert words == [b"1", b"2", b"3", b"+4", b"5", b"6"]
        assert tok.counts.tolist() == [2, 1, 3]


def test_split_cost_lines_counts_lines_that_start_with_a_blank() -> None:
    # Counting by "the token right after a '\n'" needs every selected line to start
    # with a token, as cost lines do; a leading blank or an empty line takes the
    # search by line ends, which must give the same counts.
    cases = [
        (b"1 2\nfn=x\n3\n+4 5 6\n", [True, False, True, True], [2, 1, 3]),
        (b" 1 2\nfn=x\n3\n\t+4 5 6\n", [True, False, True, True], [2, 1, 3]),
        (b"1 2\n\n3\n+4 5 6\n", [True, True, True, True], [2, 0, 1, 3]),
    ]
    for data, selected, counts in cases:
        arr = np.frombuffer(data, dtype=np.uint8)
        ends = np.flatnonzero(arr == 10).astype(np.int64)
        tok = tokens.split_cost_lines(arr, ends, np.array(selected), 1)
        words = [data[a:b] for a, b in zip(tok.start.tolist(), tok.end.tolist(), strict=True)]
        assert words == [b"1", b"2", b"3", b"+4", b"5", b"6"]
        assert tok.counts.tolist() == counts
        assert tok.first.tolist() == (np.cumsum(counts) - counts).tolist()
