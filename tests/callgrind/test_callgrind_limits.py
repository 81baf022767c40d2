"""Numbers and sizes beyond what icount holds: a one-line ParseError, never a wrong
figure, an internal error or gigabytes of memory.

Counts are int64 (see icount/callgrind/sums.py for why a refusal rather than big
integers): each number has at most 18 digits and every figure of the profile (a
function's self or inclusive cost, an edge's, a part's or the file's total, a call
count) must stay at or below 2**63-1. Each case runs through both ways of reading
specification lines (the bulk state machine and the line loop).
"""

from __future__ import annotations

import tracemalloc

import pytest

from icount.callgrind.parser import parse_bytes
from icount.errors import ExitCode, ParseError

METHODS = ["auto", "lines"]
TOP = (1 << 63) - 1
BIG = 10**18 - 1  # the largest number of 18 digits


def error_of(data: bytes, method: str) -> str:
    with pytest.raises(ParseError) as info:
        parse_bytes(data, "big.out", method=method)
    assert info.value.exit_code == ExitCode.BAD_INPUT
    msg = str(info.value)
    assert msg.startswith("big.out: ") and "\n" not in msg and len(msg) < 300
    return msg


def lines(*body: bytes) -> bytes:
    return b"# callgrind format\n" + b"\n".join(body) + b"\n"


@pytest.mark.parametrize("method", METHODS)
def test_self_costs_beyond_int64_are_refused(method: str) -> None:
    # Ten costs of 10**18 - 1 add up to about 10**19: numpy's int64 once wrapped this
    # to a negative total, printed with exit 0.
    data = lines(b"events: Ir", b"fn=(1) main", *[b"%d %d" % (i, BIG) for i in range(10)])
    msg = error_of(data, method)
    assert "Ir costs of main add up beyond 2**63-1" in msg


@pytest.mark.parametrize("method", METHODS)
def test_sums_up_to_int64_stay_exact(method: str) -> None:
    # 9 x (10**18 - 1) + a remainder = exactly 2**63 - 1: no wrap, no refusal.
    rest = TOP - 9 * BIG
    data = lines(
        b"events: Ir Dr",
        b"fn=(1) main",
        *[b"%d %d 1" % (i, BIG) for i in range(9)],
        b"9 %d" % rest,
        b"totals: %d 9" % TOP,
    )
    prof = parse_bytes(data, "top.out", method=method)
    assert prof.totals == {"Ir": TOP, "Dr": 9}
    assert prof.self_cost.tolist() == [[TOP, 9]]
    assert prof.parts[0].declared


@pytest.mark.parametrize("method", METHODS)
def test_inclusive_and_call_costs_beyond_int64_are_refused(method: str) -> None:
    def main_calls(*callees: int) -> bytes:
        calls = [b"cfn=(%d) f%d\ncalls=1 1\n1 %d" % (k, k, BIG) for k in callees]
        return lines(b"events: Ir", b"fn=(1) main", b"1 %d" % BIG, *calls, b"fn=(2) f2", b"1 1")

    # main: BIG itself, two calls of BIG to f2: 3 x BIG inclusive, which fits.
    prof = parse_bytes(main_calls(2, 2), "fits.out", method=method)
    assert prof.call_cost.tolist() == [[2 * BIG]]
    assert prof.inclusive_cost()[:, 0].tolist() == [3 * BIG, 1]
    # Ten calls of BIG on one edge: the edge's sum does not fit.
    assert "costs of one call edge add up beyond 2**63-1" in error_of(main_calls(*[2] * 10), method)
    # Ten edges of BIG each fit, but main's inclusive cost adds them up.
    msg = error_of(main_calls(*range(2, 12)), method)
    assert "inclusive Ir cost of main adds up beyond 2**63-1" in msg


@pytest.mark.parametrize("method", METHODS)
def test_parts_adding_up_beyond_int64_are_refused(method: str) -> None:
    def part(number: int, function: bytes) -> bytes:
        costs = [b"%d %d" % (i, BIG) for i in range(5)]
        body = [b"part: %d" % number, b"events: Ir", function, *costs, b"totals: %d" % (5 * BIG)]
        return b"\n".join(body)

    # Each function's and each part's sum fits; the file's total does not.
    data = lines(part(1, b"fn=(1) main"), part(2, b"fn=(2) g"))
    assert "parts' totals add up beyond 2**63-1" in error_of(data, method)


@pytest.mark.parametrize("method", METHODS)
def test_call_counts_beyond_int64_are_refused(method: str) -> None:
    def calls(*counts: bytes) -> bytes:
        return lines(
            b"events: Ir",
            b"fn=(1) main",
            *[b"cfn=(2) f\ncalls=%s 1\n1 1" % n for n in counts],
            b"fn=(2)",
            b"1 1",
        )

    assert "calls= counts of this call add up beyond 2**63-1" in error_of(
        calls(*[b"%d" % BIG] * 10), method
    )
    # One count too long for int64, and one longer than int() reads (4300 digits).
    for count in (b"1" * 19, b"7" * 5000):
        assert "calls= needs a call count (up to 18 digits)" in error_of(calls(count), method)
    prof = parse_bytes(calls(*[b"%d" % BIG] * 9), "nine.out", method=method)
    assert prof.call_count.tolist() == [9 * BIG]


@pytest.mark.parametrize("method", METHODS)
def test_long_numbers_in_headers_and_names_are_one_line(method: str) -> None:
    base = [b"events: Ir", b"fn=(1) main", b"1 5"]
    for header in (b"pid: " + b"9" * 40, b"totals: %d" % (TOP + 1), b"summary: " + b"1" * 5000):
        assert "up to 2**63-1" in error_of(lines(*base, header), method)
    long_id = b"fn=(" + b"3" * 5000 + b") main"
    assert "malformed compressed name" in error_of(lines(b"events: Ir", long_id, b"1 5"), method)
    assert "bad cost" in error_of(lines(*base, b"2 " + b"9" * 19), method)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("key", ["pid", "part", "thread", "totals", "summary"])
@pytest.mark.parametrize("digits", ["\u00b2", "\u0663", "\uff11"])  # ², ٣, full-width 1
def test_unicode_digits_in_headers_are_one_line(method: str, key: str, digits: str) -> None:
    # str.isdigit() accepts superscripts, Arabic-Indic and full-width digits; int()
    # refuses some of them, and none is a number callgrind writes.
    header = f"{key}: {digits}".encode()
    body = [b"events: Ir", header, b"fn=(1) main", b"1 5"]
    if key in ("totals", "summary"):
        body = [b"events: Ir", b"fn=(1) main", b"1 5", header]
    msg = error_of(lines(*body), method)
    assert f"{key}:" in msg


def test_many_events_times_many_functions_is_refused_in_bounded_memory() -> None:
    # 257 KB that declared 30,000 functions x 10,000 events took 49 s and 2.4 GB: the
    # cost tables are dense, so their size is checked against the file's before any
    # is made.
    events = b" ".join(b"e%d" % k for k in range(6000))
    functions = [b"fn=(%d) f%d\n0 1" % (k, k) for k in range(12000)]
    data = lines(b"events: " + events, *functions)
    assert len(data) < 300_000
    for method in METHODS:
        tracemalloc.start()
        try:
            msg = error_of(data, method)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert "12000 functions and 0 call edges x 6000 events make 72,000,000 cost cells" in msg
        assert peak < 64 << 20, peak


def test_wide_real_looking_files_still_parse() -> None:
    # Hundreds of events are fine where the file fills its table.
    n_ev, n_fn = 300, 200
    costs = b" ".join(b"%d" % (k % 7) for k in range(n_ev))
    functions = [b"fn=(%d) f%d\n0 %s" % (k, k, costs) for k in range(n_fn)]
    data = lines(b"events: " + b" ".join(b"e%d" % k for k in range(n_ev)), *functions)
    prof = parse_bytes(data, "wide.out")
    assert prof.self_cost.shape == (n_fn, n_ev)
    assert prof.totals["e6"] == 6 * n_fn
