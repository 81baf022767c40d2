"""Mutated real files: always a Profile or a ParseError, and both reading paths agree."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from icount.callgrind.parser import parse_bytes
from icount.errors import ParseError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "callgrind"
SMALL = [
    (FIXTURES / name).read_bytes()
    for name in ("threads-sep.out-02", "fib-parts.out", "fib-instr.out", "fib-plain.out")
]
NOISE = b"0123456789()=+-* \tabcfnxlo:"
# Numbers past int64 and int()'s digit limit, and digits only str.isdigit() takes.
LONG = [b"9" * 19, b"1" * 25, b"7" * 5000, b"9223372036854775808"]
UNICODE = ["\u00b2", "\u0663", "\uff11"]


def outcome(data: bytes, method: str) -> tuple[Any, ...]:
    try:
        p = parse_bytes(data, "fuzz.out", method=method)
    except ParseError as e:
        assert str(e).startswith("fuzz.out: ") and "\n" not in str(e) and len(str(e)) < 400
        return ("error",)
    return (
        p.functions,
        p.self_cost.tolist(),
        p.call_caller.tolist(),
        p.call_callee.tolist(),
        p.call_count.tolist(),
        p.call_cost.tolist(),
        p.parts,
    )


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    lines = draw(st.sampled_from(SMALL)).split(b"\n")
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.integers(0, 7))
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[draw(st.integers(0, len(lines) - 1))])
        elif op == 2:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 3:
            lines[i] += draw(st.sampled_from([b" 5", b" 0x10", b"(3)", b" +1", b" x", b"="]))
        elif op == 4:
            k = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:k] + bytes([draw(st.sampled_from(NOISE))]) + lines[i][k:]
        elif op == 5:  # a number of the line made too long
            numbers = list(re.finditer(rb"\d+", lines[i]))
            if numbers:
                m = numbers[draw(st.integers(0, len(numbers) - 1))]
                lines[i] = lines[i][: m.start()] + draw(st.sampled_from(LONG)) + lines[i][m.end() :]
        elif op == 6:  # a Unicode digit where a number goes
            digit = draw(st.sampled_from(UNICODE)).encode()
            lines[i] = re.sub(rb"\d+", digit, lines[i], count=1)
        else:  # many more events: the cost table grows, the file does not
            lines = [
                line + b"".join(b" x%d" % k for k in range(draw(st.integers(100, 5000))))
                if line.startswith(b"events:")
                else line
                for line in lines
            ]
    return b"\n".join(lines)


@settings(max_examples=160, deadline=None)  # each of the 8 mutations ~40 times
@given(mutated())
def test_mutations_give_a_profile_or_one_line_and_both_paths_agree(data: bytes) -> None:
    assert outcome(data, "auto") == outcome(data, "lines")
