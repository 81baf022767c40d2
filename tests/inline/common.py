"""What the `icount inline` tests share: two committed builds of
fixtures/callgrind/src/inline.c and their profiles.

inline-O2 inlines `mix` and `atol` into `main` and `fib` into itself;
inline-O2-noinline (-fno-inline) keeps every call.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from icount.inline import measure

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "fixtures" / "callgrind" / "inline"
GOLDEN = Path(__file__).parent / "golden"
EXE_A = DATA / "inline-O2"
EXE_B = DATA / "inline-O2-noinline"


def fixture_report(top: int = 20) -> dict[str, Any]:
    opts = measure.Options(top=top, exe_a=EXE_A, exe_b=EXE_B)
    return measure.compare_builds(
        str(DATA / "O2.callgrind"), str(DATA / "O2-noinline.callgrind"), [], opts
    )


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("ICOUNT_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()
