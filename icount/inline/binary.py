"""Function sizes and addresses of one build, from its ELF or Mach-O symbol table.

The symbol table is read by `icount.size` (the same reader `icount size` uses, with
its rules for aliases, overlaps and size-less Mach-O symbols); this module only
keeps the symbols of executable sections and names them the way callgrind does:
demangled, recursion and Rust hash suffixes normalised.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from icount.inline.align import normalise_name


@dataclass(frozen=True)
class BinaryInfo:
    path: str
    fmt: str
    sizes: dict[str, int]  # function name -> bytes of code (same-name symbols summed)
    names_at: dict[int, str]  # start address -> function name
    notes: list[str] = field(default_factory=list)


def read_binary(path: str | Path) -> BinaryInfo:
    """Raises ParseError/UsageError (from icount.size) for a file it cannot read."""
    import numpy as np

    from icount import size
    from icount.size import demangle, symbols

    image = size.pick_host(size.load(path))
    table = image.symbols
    if table is None:
        return BinaryInfo(str(path), image.fmt, {}, {}, [f"{path}: no symbol table (stripped?)"])
    charged = symbols.charge(table, image.sections)
    executable = np.array([r.executable for r in image.sections] + [False], dtype=bool)
    keep = executable[charged.region]
    index = charged.index[keep].tolist()
    sizes_v = charged.size[keep].tolist()
    addrs = table.addr[charged.index[keep]].tolist()
    raw_names = [table.name(i) for i in index]
    readable = demangle.demangle_many(sorted(set(raw_names)))
    sizes: dict[str, int] = {}
    names_at: dict[int, str] = {}
    for raw, nbytes, addr in zip(raw_names, sizes_v, addrs, strict=True):
        name = normalise_name(readable[raw])
        sizes[name] = sizes.get(name, 0) + int(nbytes)
        names_at[int(addr)] = name
    return BinaryInfo(str(path), image.fmt, sizes, names_at, list(image.notes))
