"""Go function tables (`.gopclntab`) built byte by byte in each format Go has written,
for the reader's fast tests: the layouts of Go's debug/gosym, with no other field
than those the reader takes (pc tables and file tables are left empty)."""

from __future__ import annotations

import struct
from collections.abc import Sequence

MAGIC = {"1.2": 0xFFFFFFFB, "1.16": 0xFFFFFFFA, "1.18": 0xFFFFFFF0, "1.20": 0xFFFFFFF1}


def table(
    fmt: str,
    funcs: Sequence[tuple[int, str]],
    end_pc: int,
    *,
    ptr: int = 8,
    big: bool = False,
    text_start: int | None = None,
) -> bytes:
    """A table of `funcs` ((entry address, name), in address order), the last ending
    at `end_pc`; Go 1.18+'s entries count from `text_start` (the first entry when None;
    0 writes a header whose text start is left to a relocation)."""
    e = ">" if big else "<"
    w = e + ("Q" if ptr == 8 else "I")
    names = b""
    name_offs = []
    for _, name in funcs:
        name_offs.append(len(names))
        names += name.encode() + b"\0"
    head = struct.pack(e + "I", MAGIC[fmt]) + bytes([0, 0, 1, ptr])
    n = len(funcs)
    if fmt == "1.2":
        # functab right after nfunc; _func records and names after it, offsets from 0
        functab_at = 8 + ptr
        funcs_at = functab_at + (2 * n + 1) * ptr
        names_at = funcs_at + n * (ptr + 4)
        out = head + struct.pack(w, n)
        for i, (pc, _) in enumerate(funcs):
            out += struct.pack(w, pc) + struct.pack(w, funcs_at + i * (ptr + 4))
        out += struct.pack(w, end_pc)
        for i, (pc, _) in enumerate(funcs):
            out += struct.pack(w, pc) + struct.pack(e + "i", names_at + name_offs[i])
        return out + names
    words = 7 if fmt == "1.16" else 8
    cell = ptr if fmt == "1.16" else 4
    cw = w if fmt == "1.16" else e + "I"
    names_at = 8 + words * ptr
    pcln_at = names_at + len(names)
    base = 0 if fmt == "1.16" else (funcs[0][0] if text_start is None else text_start)
    func_base = (2 * n + 1) * cell  # _func records follow the functab, offsets from pcln
    pcln = b""
    for i, (pc, _) in enumerate(funcs):
        pcln += struct.pack(cw, pc - base) + struct.pack(cw, func_base + i * (cell + 4))
    pcln += struct.pack(cw, end_pc - base)
    for i, (pc, _) in enumerate(funcs):
        pcln += struct.pack(cw, pc - base) + struct.pack(e + "i", name_offs[i])
    header: tuple[int, ...] = (n, 0, names_at, pcln_at, pcln_at, pcln_at, pcln_at)
    if fmt != "1.16":
        header = (n, 0, text_start if text_start is not None else base, names_at, pcln_at,
                  pcln_at, pcln_at, pcln_at)  # fmt: skip
    return head + b"".join(struct.pack(w, x) for x in header) + names + pcln
