"""What became of a function that one build's profile names and the other's lacks: the
other build's DWARF (icount/inline/dwarf.py) shows whether the compiler inlined it, and
into which functions, with how many copies each; a binary with neither an inlined copy
nor a symbol of that name has no code for it at all (absent). Either is said beside the
function's move (compare/explain.py `Elsewhere`).

Which binary a cell measured is what its results recorded, never a guess:

- `icount run`: the program of its argv (resolved to an absolute path before it ran);
- `icount serve`: the adapter's binary in the session's build folder
  (`RESULTS.artifacts/build/NAME`), the adapter read from the provenance's targets.

Only a function that the other build's binary holds (a symbol or an inlined copy) is
looked for: a profile names the shared libraries' functions too, which neither binary
holds. The file is read only where its build-id is the one the cell's build label recorded
when it was measured: a binary rebuilt since, moved away or without a build-id is not
the one measured, and then nothing is said. Reading a binary never fails a comparison:
whatever cannot be read says nothing. DWARF is read with pyelftools, which is slow (the
bound's comment says what was measured): a binary with more `.debug_info` than
MAX_DEBUG_INFO is not read, so that a comparison does not wait minutes on a big one.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icount.compare.explain import Elsewhere, Move, Net
from icount.compare.model import Comparison, Row
from icount.names import clone_base, display_name
from icount.results import Cell, Results

MAX_DEBUG_INFO = 4 << 20  # bytes of .debug_info read: 0.8 MB took 1.8 s of CPU (loaded machine)


@dataclass(frozen=True)
class Build:
    """One binary's functions by short name: the copies of each inlined into each
    function that holds them, and the names it has symbols for."""

    inlined: Mapping[str, Counter[str]]  # callee -> holder -> copies
    symbols: frozenset[str]

    def holds(self, name: str) -> bool:
        return name in self.symbols or name in self.inlined

    def where(self, name: str, side: str) -> Elsewhere | None:
        holders = self.inlined.get(name)
        if holders:
            into = sorted(holders.items(), key=lambda h: (-h[1], h[0]))
            return Elsewhere(side, tuple(into))
        if name in self.symbols:
            return None  # out of line there: outside that side's kept top, not gone
        return Elsewhere(side, ())


def short(name: str) -> str:
    """A name as explain.py matches it, from a symbol's or a DWARF entry's spelling."""
    from icount.inline.align import normalise_name

    return clone_base(display_name(normalise_name(name)))


def read_build(path: Path) -> Build | None:
    """The functions of the ELF file at `path`; None where it has no DWARF, too much of
    it, or cannot be read."""
    from icount.inline.binary import read_binary
    from icount.inline.dwarf import read_inline_sites

    try:
        if _debug_info_bytes(path) is None:
            return None
        binary = read_binary(path)
        sites = read_inline_sites(path, binary.names_at)
    except Exception:  # best effort, as build labels are: a comparison never fails on it
        return None
    if sites.notes:
        return None
    inlined: dict[str, Counter[str]] = {}
    for holder_key, callees in sorted(sites.copies.items()):
        holder = short(sites.name(holder_key))
        for callee_key, copies in sorted(callees.items()):
            inlined.setdefault(short(sites.name(callee_key)), Counter())[holder] += copies
    return Build(inlined, frozenset(short(n) for n in binary.sizes))


def _debug_info_bytes(path: Path) -> int | None:
    """The size of the file's .debug_info, None where it has none or more than the bound."""
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as stream:
        if stream.read(4) != b"\x7fELF":
            return None
        stream.seek(0)
        info = ELFFile(stream).get_section_by_name(".debug_info")
        size = None if info is None else int(info.data_size)
    return size if size is not None and 0 < size <= MAX_DEBUG_INFO else None


def build_id(path: Path) -> str | None:
    """The GNU build-id of an ELF file, as build_label.py records it (lowercase hex)."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import NoteSection

    try:
        with open(path, "rb") as stream:
            if stream.read(4) != b"\x7fELF":
                return None
            stream.seek(0)
            note = ELFFile(stream).get_section_by_name(".note.gnu.build-id")
            for n in note.iter_notes() if isinstance(note, NoteSection) else ():
                if n["n_type"] == "NT_GNU_BUILD_ID" and isinstance(n["n_desc"], str):
                    return str(n["n_desc"]).lower()
    except Exception:  # a corrupt file is not the binary measured
        return None
    return None


def _candidates(cell: Cell, sources: Sequence[Path]) -> list[Path]:
    argv = cell.params.get("argv")
    if isinstance(argv, list):  # icount run
        return [Path(argv[0])] if argv and isinstance(argv[0], str) and argv[0] else []
    out = []
    for src in sources:
        for adapter in _adapters(src):
            if adapter.name == cell.name:
                out.append(_serve_binary(adapter, src))
    return [p for p in out if p is not None]


def _adapters(src: Path) -> list[Any]:
    """The adapters a serve session's provenance names as its targets."""
    from icount.results.files import provenance_path, read_json
    from icount.serve.adapter import load_adapter

    try:
        doc = read_json(provenance_path(src), "provenance file")
    except Exception:
        return []
    plan = doc.get("plan") if isinstance(doc, dict) else None
    targets = plan.get("targets") if isinstance(plan, dict) else None
    out = []
    for t in targets if isinstance(targets, list) else ():
        if isinstance(t, str):
            try:
                out.append(load_adapter(Path(t)))
            except Exception:  # moved or changed since: that target says nothing
                continue
    return out


def _serve_binary(adapter: Any, src: Path) -> Path | None:
    from icount.environment import safe_name
    from icount.serve.adapter import binary_path

    build_dir = src.with_suffix(".artifacts") / "build" / safe_name(adapter.name)
    try:
        return binary_path(adapter, build_dir)
    except Exception:
        return None


def binary_of(cell: Cell, sources: Sequence[Path]) -> Path | None:
    """The binary `cell` measured, where its results recorded where it is and the file
    there still has the build-id its label recorded; None otherwise."""
    label = cell.extra.get("build")
    recorded = label.get("build_id") if isinstance(label, Mapping) else None
    if not isinstance(recorded, str) or not recorded:
        return None
    for path in _candidates(cell, sources):
        if path.is_file() and build_id(path) == recorded:
            return path
    return None


def netted(moves: tuple[Move, ...]) -> tuple[Move, ...]:
    """`moves` with each caller that one build inlined others of them into (and into it
    alone) netted of them: their self cost counted with the caller's on the side where
    they are still out of line, so that the caller's move is what its code, theirs
    included, did."""
    names = {m.name for m in moves}
    # a DWARF name is a C++ method's alone (`handle`), the moves' are qualified
    # (`Server::handle`): matched where one move alone has that last part
    by_last: dict[str, list[str]] = {}
    for n in names:
        by_last.setdefault(n.rpartition("::")[2], []).append(n)
    into: dict[str, list[Move]] = {}
    for m in moves:
        where = m.elsewhere
        if where is not None and len(where.into) == 1:
            holder = clone_base(where.into[0][0])
            if holder not in names and len(by_last.get(holder, ())) == 1:
                holder = by_last[holder][0]
            if holder in names and holder != m.name:
                into.setdefault(holder, []).append(m)
    out = []
    for m in moves:
        absorbed = into.get(m.name)
        if not absorbed or m.base is None or m.new is None:
            out.append(m)
            continue
        base, new = m.base, m.new
        for a in absorbed:
            base += a.base or 0.0  # a side lacks it: its figure is the other's
            new += a.new or 0.0
        net = Net(tuple(sorted(a.name for a in absorbed)), round(base, 3), round(new, 3))
        out.append(dataclasses.replace(m, net=net))
    return tuple(out)


def _files(given: Path) -> list[Path]:
    from icount.results.merge import input_files

    try:
        return [f for _, f in input_files([given])]
    except Exception:
        return []


def annotate(
    c: Comparison, base: Results, new: Results, base_src: Path, new_src: Path
) -> Comparison:
    """`c` with each explained move of a function that one side's profile lacks saying
    what became of it in that side's binary, where that binary can be read (above).
    `base_src` and `new_src` are the results files (or folders) as given."""
    sides = {
        "base": ({cell.key: cell for cell in base.cells}, _files(base_src)),
        "new": ({cell.key: cell for cell in new.cells}, _files(new_src)),
    }
    builds: dict[Path, Build | None] = {}

    def build(side: str, key: tuple[str, str, str]) -> Build | None:
        cells, sources = sides[side]
        cell = cells.get(key)
        path = binary_of(cell, sources) if cell is not None else None
        if path is None:
            return None
        if path not in builds:
            builds[path] = read_build(path)
        return builds[path]

    def move(row: Row, m: Move) -> Move:
        if (m.base is None) == (m.new is None):
            return m
        lacks, has = ("new", "base") if m.new is None else ("base", "new")
        # only the program's own functions: the profile names the libraries' too (libc,
        # the dynamic loader), which no binary of the program holds
        had = build(has, row.key)
        if had is None or not had.holds(m.name):
            return m
        found = build(lacks, row.key)
        where = found.where(m.name, lacks) if found is not None else None
        return m if where is None else dataclasses.replace(m, elsewhere=where)

    rows = []
    for r in c.rows:
        e = r.explained
        if e is not None and any((m.base is None) != (m.new is None) for m in e.moves):
            moves = netted(tuple(move(r, m) for m in e.moves))
            r = dataclasses.replace(r, explained=dataclasses.replace(e, moves=moves))
        rows.append(r)
    return dataclasses.replace(c, rows=tuple(rows))
