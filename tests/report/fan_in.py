"""A large callgrind profile written as text, for the report's tests and
scripts/bench_report.py: `main` calls CALLERS functions once each, and each of them
calls `leaf` from CALLS / CALLERS call sites of its own (one `calls=` line each), the
shape of issue 30's 6.8 MB profile (400 callers of one function, 300,000 calls).

Its figures are known: `leaf` costs LEAF a call, each caller OWN a call site plus
ENTRY, `main` MAIN; `inclusive` gives what callgrind_annotate would print.
"""

from __future__ import annotations

LEAF = 7  # leaf's instructions a call
OWN = 5  # a caller's own instructions a call site
ENTRY = 3  # a caller's own instructions besides its call sites
MAIN = 10


def fan_in_text(callers: int = 400, calls: int = 300_000) -> str:
    """The profile's text: `calls` calls of `leaf` from `callers` functions."""
    per = calls // callers
    lines = ["# callgrind format", "version: 1", "creator: icount-tests", "pid: 1",
             "cmd: ./fan-in", "part: 1", "positions: line", "events: Ir", "",
             "ob=(1) /tmp/fan-in", "fl=(1) fan-in.c", "fn=(1) main", f"1 {MAIN}"]  # fmt: skip
    for c in range(callers):
        lines += [f"cfn=({c + 3}) caller{c}", "calls=1 1", f"2 {caller_inclusive(per)}"]
    for c in range(callers):
        lines += [f"fn=({c + 3})", f"1 {ENTRY}"]
        for k in range(per):
            # each call from its own line, as a loop unrolled or many call sites are
            lines += ["cfn=(2) leaf" if c == 0 and k == 0 else "cfn=(2)",
                      f"calls=1 {k + 2}", f"{k + 2} {LEAF}", f"* {OWN}"]  # fmt: skip
    lines += ["fn=(2)", f"1 {LEAF * per * callers}", f"totals: {sum(_self(callers, per))}", ""]
    return "\n".join(lines)


def _self(callers: int, per: int) -> list[int]:
    return [MAIN, callers * (ENTRY + per * OWN), LEAF * per * callers]


def caller_inclusive(per: int) -> int:
    return ENTRY + per * (OWN + LEAF)


def inclusive(callers: int = 400, calls: int = 300_000) -> dict[str, int]:
    """Each function's inclusive instructions, as callgrind_annotate --inclusive=yes
    prints them."""
    per = calls // callers
    out = {f"caller{c}": caller_inclusive(per) for c in range(callers)}
    return out | {"main": MAIN + callers * caller_inclusive(per), "leaf": LEAF * per * callers}
