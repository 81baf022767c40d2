"""Cost lines against a plain Python reader: every token checked by the grammar of
valgrind's format, every sum exact, the first bad token named, across chunk ends."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icount.callgrind import decode
from icount.callgrind.parser import parse_bytes
from icount.errors import ParseError

POSITION = re.compile(rb"\*|[+-]\d{1,18}|\d{1,18}|0[xX][0-9a-fA-F]{1,16}")
COST = re.compile(rb"\d{1,18}")


@contextmanager
def chunks_of(size: int) -> Iterator[None]:
    saved = decode.CHUNK_BYTES
    decode.CHUNK_BYTES = size
    try:
        yield
    finally:
        decode.CHUNK_BYTES = saved


def reference(n_pos: int, n_ev: int, blocks: list[list[list[bytes]]]) -> tuple[str, object]:
    """("error", line number of the first bad cost line) or ("ok", self costs per function)."""
    line = 3  # after "positions:" and "events:"
    sums: list[list[int]] = []
    for lines in blocks:
        line += 1  # fn=
        row = [0] * n_ev
        for words in lines:
            line += 1
            if not n_pos <= len(words) <= n_pos + n_ev:
                return ("error", line)
            if not all(POSITION.fullmatch(w) for w in words[:n_pos]):
                return ("error", line)
            if not all(COST.fullmatch(w) for w in words[n_pos:]):
                return ("error", line)
            for k, w in enumerate(words[n_pos:]):
                row[k] += int(w)
        sums.append(row)
    return ("ok", sums)


good_position = st.sampled_from(
    [b"*", b"+3", b"-12", b"7", b"0x1f", b"0XAb", b"+" + b"9" * 18, b"-" + b"1" * 18]
)
bad_position = st.sampled_from([b"**", b"+", b"-", b"0x", b"0xg", b"1x2", b"+0x1", b"9" * 19])
good_cost = st.sampled_from([b"0", b"1", b"42", b"12345678", b"123456789", b"9" * 18])
bad_cost = st.sampled_from([b"+1", b"1x", b"*", b"0x10", b"9" * 19, b"-2"])


@st.composite
def cost_file(draw: st.DrawFn) -> tuple[bytes, int, int, list[list[list[bytes]]]]:
    n_pos = draw(st.integers(1, 2))
    n_ev = draw(st.integers(1, 4))
    flawed = draw(st.booleans())
    blocks = []
    for _ in range(draw(st.integers(1, 4))):
        lines = []
        for _ in range(draw(st.integers(1, 12))):
            words = [draw(good_position) for _ in range(n_pos)]
            words += [draw(good_cost) for _ in range(draw(st.integers(0, n_ev)))]
            if flawed and draw(st.integers(0, 9)) == 0:
                k = draw(st.integers(0, len(words)))
                if k == len(words):
                    words.append(draw(good_cost))  # maybe one cost too many
                elif k < n_pos:
                    words[k] = draw(bad_position)
                else:
                    words[k] = draw(bad_cost)
            lines.append(words)
        blocks.append(lines)
    text = [b"positions: " + (b"line" if n_pos == 1 else b"instr line")]
    text.append(b"events: " + b" ".join(b"e%d" % k for k in range(n_ev)))
    for i, lines in enumerate(blocks):
        text.append(b"fn=(%d) f%d" % (i + 1, i))
        text += [b" ".join(words) for words in lines]
    return b"# callgrind format\n" + b"\n".join(text) + b"\n", n_pos, n_ev, blocks


@settings(max_examples=120, deadline=None)
@given(cost_file(), st.sampled_from([16, 64, 1 << 18]))
def test_cost_lines_read_like_a_python_reader(
    case: tuple[bytes, int, int, list[list[list[bytes]]]], chunk: int
) -> None:
    data, n_pos, n_ev, blocks = case
    kind, expected = reference(n_pos, n_ev, blocks)
    with chunks_of(chunk):
        for method in ("auto", "lines"):
            if kind == "error":
                with pytest.raises(ParseError, match=rf"^x\.out: line {expected}: "):
                    parse_bytes(data, "x.out", method=method)
            else:
                prof = parse_bytes(data, "x.out", method=method)
                assert prof.self_cost.tolist() == expected


def test_kept_lines_hold_every_cost_and_position() -> None:
    data = (
        b"events: a b\nfn=(1) f\n10 1 2\n+2 3\n* 0 4\n-5 7 8\n"
        b"cfn=(2) g\ncalls=3 1\n+1 9 9\nfn=(2)\n1 5\n"
    )
    for chunk in (8, 1 << 18):
        with chunks_of(chunk):
            prof = parse_bytes(data, "k.out", keep_lines=True)
        assert prof.lines is not None
        assert prof.lines.positions[:, 0].tolist() == [10, 12, 12, 7, 8, 1]
        assert prof.lines.costs.tolist() == [[1, 2], [3, 0], [0, 4], [7, 8], [9, 9], [5, 0]]
        assert prof.lines.edge.tolist() == [-1, -1, -1, -1, 0, -1]
        assert prof.self_cost.tolist() == [[11, 14], [5, 0]]
        assert prof.call_cost.tolist() == [[9, 9]]
