"""The start-up code's names across icount's versions. callgrind/functions.py names
each function below `main` apart (`_start`, `__libc_start_main`,
`__libc_start_call_main`, `(below main)`) and the loader's entry `[program entry]`;
results files written before it did pool `_start` with `__libc_start_call_main` as one
`(below main)` (a cycle through `__libc_start_main`), the loader's entry, and in a
stripped program `_start` and `main`, with the code without a symbol. The files carry
no marker of this, but the shape tells: an old file has `(below main)` and none of the
names given apart. Compared with a new file, the new side is read with the old names
(a move between them would be the renaming's, not the program's), and an old file's
cycle is one `(below main)`, so that `main` below it is drawn whole."""

from __future__ import annotations

from collections.abc import Iterable

from icount.window_profile import UNNAMED

BELOW_MAIN = "(below main)"
PROGRAM_ENTRY = "[program entry]"
_APART = frozenset({"_start", "__libc_start_call_main", PROGRAM_ENTRY})
_LIBC_START = "__libc_start_main"


def old_naming(names: Iterable[str]) -> bool:
    """Whether a profile's function names (its rows' and calls') are an old file's."""
    seen = set(names)
    return BELOW_MAIN in seen and not seen & _APART


def renames(
    base: Iterable[str], new: Iterable[str], calls: tuple[bool, bool] = (True, True)
) -> tuple[dict[str, str], dict[str, str]]:
    """What each side's names are read as when the two are compared (or drawn alone,
    with `new` the same as `base`), given whether each kept its calls: nothing where
    neither side is old; an old side's `__libc_start_main` pooled into `(below main)`;
    with one side old, the other side's start-up code pooled as the old side's is (a
    stripped program's `_start` and `main` too, where the old side kept its calls and
    has no `main` among them)."""
    sides = [set(base), set(new)]
    old = [old_naming(s) for s in sides]
    maps: list[dict[str, str]] = [{}, {}]
    for k, names in enumerate(sides):
        if old[k]:
            maps[k] = {n: BELOW_MAIN for n in names if _is_libc_start(n)}
    if old[0] != old[1]:
        k, o = (0, 1) if old[1] else (1, 0)  # k: the side named apart, o: the old one
        names = sides[k]
        stripped = calls[o] and "main" in names and "main" not in sides[o]
        into_unnamed = {PROGRAM_ENTRY} | ({"_start", "main"} if stripped else set())
        for n in names:
            if n in into_unnamed:
                maps[k][n] = UNNAMED
            elif n in _APART or _is_libc_start(n):
                maps[k][n] = BELOW_MAIN
    return maps[0], maps[1]


def _is_libc_start(name: str) -> bool:
    return name == _LIBC_START or name.startswith(_LIBC_START + "@")
