"""Bad callgrind input: one ParseError naming the file and the problem, nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from icount.callgrind.parser import parse_bytes, parse_file
from icount.errors import ExitCode, ParseError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "callgrind"
REAL = (FIXTURES / "fib.out").read_bytes()


def error_of(data: bytes) -> str:
    with pytest.raises(ParseError) as info:
        parse_bytes(data, "bad.out")
    assert info.value.exit_code == ExitCode.BAD_INPUT
    msg = str(info.value)
    assert msg.startswith("bad.out: ") and "\n" not in msg
    return msg


def test_empty_and_blank() -> None:
    assert "empty file" in error_of(b"")
    assert "empty file" in error_of(b"\n\n  \n")


def test_not_callgrind() -> None:
    assert "not a callgrind profile" in error_of(b"hello world\n")
    assert "not a callgrind profile" in error_of(b'{"format": "icount"}\n')
    assert "binary data" in error_of(b"\x7fELF\x02\x01\x01\0\0\0")


def test_truncated_mid_line() -> None:
    cut = REAL[: len(REAL) // 2]
    assert not cut.endswith(b"\n")
    assert "truncated" in error_of(cut)


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9, 0.999])
def test_truncated_at_a_line_boundary(fraction: float) -> None:
    # Cut after a whole line: the totals: line at the end is missing.
    cut = REAL[: REAL.rindex(b"\n", 0, int(len(REAL) * fraction)) + 1]
    msg = error_of(cut)
    assert "totals" in msg or "calls=" in msg


def test_changed_cost_breaks_the_totals_check() -> None:
    lines = REAL.split(b"\n")
    k = next(
        i
        for i, line in enumerate(lines)
        if line[:1].isdigit() and not lines[i - 1].startswith(b"calls=")
    )
    pos, cost = lines[k].split()
    lines[k] = pos + b" " + str(int(cost) + 1).encode()
    msg = error_of(b"\n".join(lines))
    assert "totals: says" in msg and "sum to" in msg


def test_line_level_errors_name_the_line() -> None:
    head = b"# callgrind format\nevents: Ir\nfn=(1) main\n"
    assert "line 4: name (7) used before it is defined" in error_of(head + b"cfn=(7)\n")
    assert "line 4: not a callgrind line" in error_of(head + b"garbage here\n")
    assert "line 6: a calls= line must be followed" in error_of(
        head + b"cfn=(1)\ncalls=1 3\nfn=(1)\n1 2\n"
    )
    assert "line 4: bad cost" in error_of(head + b"1 12x\n")
    assert "line 4: bad position" in error_of(head + b"1x 12\n")
    assert "at most 1 cost" in error_of(head + b"1 2 3\n")
    assert "calls= without a cfn=" in error_of(head + b"calls=1 3\n1 2\n")
    assert "cost line outside a function" in error_of(b"events: Ir\n1 2\n")
    assert "version 2" in error_of(b"version: 2\nevents: Ir\n")
    assert "no 'events:' line" in error_of(b"# callgrind format\ncmd: x\n")
    assert "unknown positions" in error_of(b"positions: foo\nevents: Ir\n")


def test_parse_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match=r"missing\.out: cannot read"):
        parse_file(tmp_path / "missing.out")
    with pytest.raises(ParseError, match="is a directory"):
        parse_file(tmp_path)
    big = tmp_path / "big.bin"
    big.write_bytes(b"\0" * (1 << 20))
    with pytest.raises(ParseError, match="binary data"):
        parse_file(big)


def test_crlf_line_ends_read_like_lf() -> None:
    text = b"events: Ir\nfn=main\n1 5\ncfn=f\ncalls=2 1\n1 9\nfn=f\n1 9\ntotals: 14\n"
    lf = parse_bytes(text, "lf.out")
    crlf = parse_bytes(text.replace(b"\n", b"\r\n"), "crlf.out")
    assert crlf.functions == lf.functions
    assert crlf.self_cost.tolist() == lf.self_cost.tolist() == [[5], [9]]
    assert crlf.call_count.tolist() == lf.call_count.tolist() == [2]
