"""The names a spread's note shows: C++ symbols without their template arguments and
parameters (the results file keeps them whole). Names from Express's V8 and Go."""

from __future__ import annotations

import pytest

from icount.names import display_name
from icount.spread_note import describe


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("v8::internal::Sweeper::RawSweep(v8::internal::Page*, v8::internal::Sweeper::"
         "SweepingMode)", "v8::internal::Sweeper::RawSweep"),
        ("void v8::internal::MarkingVisitorBase<v8::internal::ConcurrentMarkingVisitor, "
         "v8::internal::ConcurrentMarkingState>::ProcessStrongHeapObject<v8::internal::"
         "FullHeapObjectSlot>(v8::internal::HeapObject)",
         "void v8::internal::MarkingVisitorBase::ProcessStrongHeapObject"),
        ("runtime.scanobject", "runtime.scanobject"),
        ("(anonymous namespace)::parse(char const*)", "(anonymous namespace)::parse"),
        ("operator new(unsigned long)", "operator new(unsigned long)"),  # no scope: whole
        ("std::vector<int>::operator<(int)", "std::vector::operator<"),
        ("a<b", "a<b"),  # not C++: shown whole
        ("x::a<b", "x::a<b"),  # unbalanced: shown whole
        ("runtime.(*mheap).alloc", "runtime.(*mheap).alloc"),  # Go keeps its receiver
        ("<T as core::fmt::Debug>::fmt", "<T as core::fmt::Debug>::fmt"),  # Rust's qualifier
    ],
)  # fmt: skip
def test_display_name(name: str, shown: str) -> None:
    assert display_name(name) == shown


def explained(spread: float) -> dict[str, object]:
    return {
        "spread": spread,
        "low": {"window": "run 1 rep 1", "per_request": 542342.3},
        "high": {"window": "run 1 rep 3", "per_request": 592554.1},
        "functions": [["v8::internal::ConcurrentMarking::RunMajor(v8::JobDelegate*)", 8214.5]],
        "explained": 0.16,
    }


def test_a_spread_past_the_limit_says_the_median_depends_on_the_windows() -> None:
    line = describe(explained(0.09), 0.01)
    assert line.startswith("windows differ by 9.00% (run 1 rep 3 592.6k vs run 1 rep 1 542.3k")
    assert "v8::internal::ConcurrentMarking::RunMajor +8214.5" in line
    assert line.endswith("longer windows (--requests, or the adapter's `requests`) average it")
    assert "median depends" not in describe(explained(0.004), 0.01)
    # a cold start has no window to lengthen
    assert "longer windows" not in describe(explained(0.09), 0.01, windows=False)


def test_code_known_only_by_address_is_pooled() -> None:
    """Node's JIT code has no symbols and other addresses in each process: two windows
    read +888 at one address and -888 at another for the same code. Pooled, the JIT
    code's own difference shows (here +10 per request), beside the named functions."""
    from icount.results.details import Rep
    from icount.serve.spread import UNNAMED, Window, explain

    low = Window(
        "run 1 rep 1",
        Rep(1000 * 1000.0, 1000),
        {
            "0x000000000d089c80": 888e3,
            "uv__io_poll": 100e3,
            "Builtins_Call": 12e3,
        },
    )
    # callgrind names a recursive activation `name'2` (--separate-recs): pooled too,
    # as the quick start once showed `0x...d088d80'2 -77.0, 0x...d08a200'2 +77.0`
    high = Window("run 2 rep 1", Rep(1000 * 1030.0, 1000), {
        "0x000000000d08ab80": 890e3, "0x000000000d08a200'2": 8e3, "uv__io_poll": 110e3,
        "uv__io_poll'2": 10e3, "Builtins_Call": 12e3,
    })  # fmt: skip
    explained = explain([low, high], 0.01)
    assert explained is not None
    assert explained["functions"] == [["uv__io_poll", 20.0], [UNNAMED, 10.0],
                                      ["Builtins_Call", 0.0]]  # fmt: skip
