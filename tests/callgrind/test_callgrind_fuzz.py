"""Mutated real files: always a Profile or a ParseError, and both reading paths agree."""

from __future__ import annotations

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


def outcome(data: bytes, method: str) -> tuple[Any, ...]:
    try:
        p = parse_bytes(data, "fuzz.out", method=method)
    except ParseError as e:
        assert str(e).startswith("fuzz.out: ") and "\n" not in str(e)
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
        op = draw(st.integers(0, 4))
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[draw(st.integers(0, len(lines) - 1))])
        elif op == 2:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 3:
            lines[i] += draw(st.sampled_from([b" 5", b" 0x10", b"(3)", b" +1", b" x", b"="]))
        else:
            k = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:k] + bytes([draw(st.sampled_from(NOISE))]) + lines[i][k:]
    return b"\n".join(lines)


@settings(max_examples=150, deadline=None)
@given(mutated())
def test_mutations_give_a_profile_or_one_line_and_both_paths_agree(data: bytes) -> None:
    assert outcome(data, "auto") == outcome(data, "lines")
