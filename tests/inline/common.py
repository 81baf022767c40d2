"""What the `icount inline` tests share: committed builds of
fixtures/callgrind/src/inline.c and their profiles (fixtures/callgrind/record.sh).

inline-O2 (gcc -O2) inlines `mix` and `atol` into `main` and `fib` into itself;
inline-O2-noinline (-fno-inline) keeps every call; inline-clang (clang -O2) keeps
fib's recursion. The "inline" pair ran fib(20) from main on; the "gcc-clang" pair
ran fib(30) as a whole program, dynamic loader included, as `icount inline` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from icount.inline import measure
from icount.inline.report import DEFAULT_MIN_SHARE
from tests.support.golden import assert_golden

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "fixtures" / "callgrind" / "inline"
GOLDEN = Path(__file__).parent / "golden"
EXE_A = DATA / "inline-O2"
EXE_B = DATA / "inline-O2-noinline"
EXE_CLANG = DATA / "inline-clang"
PAIRS = {
    "inline": ("O2.callgrind", "O2-noinline.callgrind", EXE_A, EXE_B),
    "gcc-clang": ("gcc-30.callgrind", "clang-30.callgrind", EXE_A, EXE_CLANG),
}


def fixture_report(
    top: int = 20, pair: str = "inline", min_share: float = DEFAULT_MIN_SHARE
) -> dict[str, Any]:
    a, b, exe_a, exe_b = PAIRS[pair]
    opts = measure.Options(top=top, min_share=min_share, exe_a=exe_a, exe_b=exe_b)
    return measure.compare_builds(str(DATA / a), str(DATA / b), [], opts)


def check_golden(name: str, text: str) -> None:
    assert_golden(GOLDEN / name, text)
