"""Callgrind's profile files read for a window's count, its functions (a cell's profile,
results/cell_profile.py) and a runtime's own work (icount/runtimes.py): each file parsed
once, for all three alike; the code of a stripped Go binary named from its function
table first (callgrind/stripped.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from icount.runtimes import RuntimeWork
from icount.window_profile import WindowProfile, sum_windows


def read_window(
    path: Path, extra: Sequence[str], top: int
) -> tuple[int, WindowProfile, RuntimeWork]:
    """(total `Ir`, the functions, the runtime's work) of one file of a server's window."""
    from icount.backends.valgrind import functions_of
    from icount.callgrind.functions import window_profile
    from icount.callgrind.parser import parse_file
    from icount.callgrind.stripped import name_go_functions
    from icount.runtimes import runtime_work

    prof = name_go_functions(parse_file(path))
    total, _ = functions_of(prof)  # checks that the file counts Ir
    return total, window_profile(prof, top), runtime_work(prof, extra)


def read_self_costs(
    path: Path, extra: Sequence[str] = ()
) -> tuple[int, dict[str, int], RuntimeWork]:
    """(total `Ir`, self `Ir` by function name, the runtime's work) of one callgrind file:
    a window's file where no profile is kept, and a whole life's in
    scripts/lifetime_reference.py."""
    from icount.backends.valgrind import functions_of
    from icount.callgrind.parser import parse_file
    from icount.callgrind.stripped import name_go_functions
    from icount.runtimes import runtime_work

    prof = name_go_functions(parse_file(path))
    total, by_name = functions_of(prof)
    return total, by_name, runtime_work(prof, extra)


def read_command(paths: Sequence[Path], top: int) -> tuple[int, WindowProfile]:
    """(total `Ir`, the functions) of every profile of one run of a command."""
    from icount.backends.valgrind import functions_of
    from icount.callgrind.functions import window_profile
    from icount.callgrind.parser import parse_file
    from icount.callgrind.stripped import name_go_functions

    total, parts = 0, []
    for p in paths:
        prof = name_go_functions(parse_file(p))
        total += functions_of(prof)[0]
        parts.append(window_profile(prof, top))
    profile = sum_windows(parts)
    profile.top = top
    return total, profile
