"""What built a measured program: its build label, and the build mode compare checks.

A comparison of a debug build with a release build measures the build, not the code
(a published comparison was retracted for exactly that), so every cell records what
its binary says about how it was built, read from the file itself rather than from
what the user says:

- ELF: the build-id (`.note.gnu.build-id`), the compilers in `.comment` (GCC, clang,
  rustc write a line there), the producers of the DWARF compile units
  (`DW_AT_producer`: GCC records its command-line switches there, `-O2 -flto`),
  Go's build info (`.go.buildinfo`: the Go version and the build settings).
- An interpreter (python, node): its `--version`, through procs.

The build mode is the part that moves counts without any change of code: the
optimisation level and LTO (for Go, whether `-gcflags -N` turned the optimiser off).
A field the file does not tell is None, and None never counts as a difference.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from icount import procs
from icount.errors import ParseError
from icount.results.extras import MODE_FIELDS

if TYPE_CHECKING:
    from pathlib import Path

    from icount.results import Cell

MAX_UNITS = 4096  # compile units read for producers: enough for any mode, bounded time
MAX_PRODUCERS = 8
MAX_TEXT = 200  # characters kept of each recorded string
_INTERPRETER = re.compile(r"^(python[0-9.]*|pypy[0-9.]*|node|nodejs)$")
_OPT = re.compile(r"^-O([0-3sgz]|fast)?$")
_GO_MAGIC = b"\xff Go buildinf:"


def _short(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def label_of(program: str) -> dict[str, Any]:
    """The build label of the program a command runs (an absolute path)."""
    label: dict[str, Any] = {"program": os.path.basename(program)}
    if _INTERPRETER.match(os.path.basename(program)):
        text = procs.capture([program, "--version"], timeout=10)
        if text and text.strip():
            label["interpreter"] = _short(text.strip().splitlines()[0])
    try:
        label.update(_binary(program))
    except ParseError as e:
        label["unread"] = _short(e.message)
    label["mode"] = mode_of(label)
    return label


def of_server(start: Sequence[str], binary: Path | None) -> dict[str, Any] | None:
    """The label of what a server runs, from its start command and its adapter's binary
    (serve/adapter.binary_path): the interpreter where the start command is one (python,
    node: their versions), else the binary, else the start command's program; None when
    none can be found before it starts."""
    first = start[0] if start else ""
    program = shutil.which(first) if first and "{" not in first else None
    if program and _INTERPRETER.match(os.path.basename(program)):
        return label_of(program)
    program = str(binary) if binary is not None else program
    return label_of(program) if program else None


def _binary(path: str) -> dict[str, Any]:
    from icount.size import load_blob, pick_host
    from icount.size.source import open_blob

    blob = open_blob(path)
    try:
        image = pick_host(load_blob(blob, symbols=False))
        out: dict[str, Any] = {"format": image.fmt, "kind": image.kind}
        if not image.fmt.startswith("ELF"):
            return out
        # how it links, which a trivial program built the same way repeats (startup_floor)
        out["dynamic"] = ".interp" in {s.label for s in image.sections}
        sections = {s.label: s for s in image.sections if s.length and s.compressed is None}

        def data(name: str) -> bytes:
            s = sections.get(name)
            return bytes(blob.data[s.start : s.start + s.length]) if s is not None else b""

        build_id = _build_id(data(".note.gnu.build-id"))
        if build_id:
            out["build_id"] = build_id
        comment = data(".comment")
        compilers = sorted(
            {_short(t.decode("utf-8", "replace")) for t in comment.split(b"\0") if t.strip()}
        )
        if compilers:
            out["compilers"] = compilers
        rustc = next((c for c in compilers if c.startswith("rustc version ")), None)
        if rustc:
            out["rustc"] = rustc.removeprefix("rustc version ")
        go = _go_buildinfo(data(".go.buildinfo"))
        if go:
            out["go"] = go
        out["debug_info"] = ".debug_info" in {s.label for s in image.sections}
        producers = _producers(blob) if out["debug_info"] else []
        if producers:
            out["producers"] = producers
        return out
    finally:
        blob.close()


def _build_id(note: bytes) -> str | None:
    if len(note) < 16:
        return None
    namesz, descsz, kind = (int.from_bytes(note[i : i + 4], "little") for i in (0, 4, 8))
    start = 12 + (namesz + 3) // 4 * 4
    if kind != 3 or note[12 : 12 + namesz] != b"GNU\0" or start + descsz > len(note):
        return None  # NT_GNU_BUILD_ID only (a big-endian file fails the name check)
    return note[start : start + descsz].hex() or None


def _uvarint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(data) and shift < 64:
        b = data[pos]
        value |= (b & 0x7F) << shift
        pos += 1
        if not b & 0x80:
            return value, pos
        shift += 7
    raise ValueError("truncated varint")


def _go_buildinfo(data: bytes) -> dict[str, Any] | None:
    """Go 1.18+'s inline build info: the version and the settings of `go version -m`.
    Older layouts point into the data segment; they record only that Go built it."""
    if not data.startswith(_GO_MAGIC):
        return None
    if len(data) < 32 or not data[15] & 2:
        return {"version": None, "settings": {}}
    try:
        n, pos = _uvarint(data, 32)
        version = data[pos : pos + n].decode("utf-8", "replace")
        n, pos = _uvarint(data, pos + n)
        modinfo = data[pos : pos + n].decode("utf-8", "replace")
    except ValueError:
        return {"version": None, "settings": {}}
    settings = {}
    for line in modinfo.splitlines():
        kind, _, rest = line.partition("\t")
        key, eq, value = rest.partition("=")
        if kind == "build" and eq:
            settings[_short(key)] = _short(value)
    return {"version": _short(version), "settings": dict(sorted(settings.items()))}


def _producers(blob: Any) -> list[str]:
    """The distinct DW_AT_producer strings of the first MAX_UNITS compile units."""
    import io

    from elftools.elf.elffile import ELFFile

    stream: Any = blob.data if not isinstance(blob.data, bytes) else io.BytesIO(blob.data)
    found: set[str] = set()
    try:
        info = ELFFile(stream).get_dwarf_info()
        for i, cu in enumerate(info.iter_CUs()):
            if i >= MAX_UNITS:
                break
            attr = cu.get_top_DIE().attributes.get("DW_AT_producer")
            if attr is not None:
                value = attr.value
                text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
                found.add(_short(text))
    except Exception:  # a label is best effort: `icount size` names what is corrupt
        pass
    finally:
        stream.seek(0)
    return sorted(found)[:MAX_PRODUCERS]


def mode_of(label: Mapping[str, Any]) -> dict[str, Any]:
    """The build mode a label tells: the optimisation level and LTO, None where unknown."""
    go = label.get("go")
    if isinstance(go, Mapping):
        flags = str(go.get("settings", {}).get("-gcflags", ""))
        return {"optimisation": "-N (off)" if "-N" in flags.split() else "default", "lto": None}
    producers = [p for p in label.get("producers", []) if isinstance(p, str)]
    gnu = [p for p in producers if p.startswith("GNU ") and not p.startswith("GNU AS")]
    levels = set()
    lto: bool | None = None
    for p in gnu:
        opts = [t for t in p.split() if _OPT.match(t)]
        # GCC's default is -O0; the last -O wins, and a bare -O is -O1
        levels.add({"-O": "-O1"}.get(opts[-1], opts[-1]) if opts else "-O0")
        lto = bool(lto) or "-flto" in p.split() or p.startswith("GNU GIMPLE")
    optimisation = " ".join(sorted(levels)) if levels else None
    return {"optimisation": optimisation, "lto": lto}


def mode_changes(base: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    """'optimisation -O0 -> -O2' for each mode field both labels know and differ in;
    also the interpreter's version, which moves counts as a compiler does."""
    if not isinstance(base, Mapping) or not isinstance(new, Mapping):
        return []
    out = []
    bm, nm = base.get("mode") or {}, new.get("mode") or {}
    for f in MODE_FIELDS:
        b, n = bm.get(f), nm.get(f)
        if b is not None and n is not None and b != n:
            out.append(f"{f} {_word(b)} → {_word(n)}")
    bi, ni = base.get("interpreter"), new.get("interpreter")
    if bi and ni and bi != ni:
        out.append(f"interpreter {bi} → {ni}")
    return out


def _word(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def cell_changes(base_cells: Sequence[Cell], new_cells: Sequence[Cell]) -> list[str]:
    """'fib: optimisation -O0 → -O2' for every cell of both sides whose builds differ
    in mode, in the new side's order."""
    by_base = {c.key: c for c in base_cells}
    out = []
    for cell in new_cells:
        other = by_base.get(cell.key)
        if other is None:
            continue
        changes = mode_changes(other.extra.get("build"), cell.extra.get("build"))
        if changes:
            out.append(f"{_row_label(cell)}: {', '.join(changes)}")
    return out


def differing_modes(cells: Sequence[Cell]) -> str | None:
    """A table's note when rows of one program were built in different modes ('fib-O0
    -O0; fib-O2 -O2'), or None: such rows compare builds as much as code. Different
    programs (a C binary beside a Python interpreter) are not one build in two modes."""
    by_program: dict[str, dict[str, str]] = {}
    for c in cells:
        b = c.extra.get("build")
        if isinstance(b, Mapping) and describe_mode(b):
            by_program.setdefault(str(b.get("program")), {})[_row_label(c)] = describe_mode(b)
    modes = {
        row: mode
        for rows in by_program.values()
        if len(set(rows.values())) > 1
        for row, mode in rows.items()
    }
    if not modes:
        return None
    listed = "; ".join(f"{k} {v}" for k, v in modes.items())
    return f"built in different modes: {listed} (their counts differ by build as well as by code)"


def _row_label(cell: Cell) -> str:
    return f"{cell.name}/{cell.path}" if cell.path else cell.name


def describe_mode(label: Mapping[str, Any]) -> str:
    mode = label.get("mode") or {}
    parts = [str(mode["optimisation"])] if mode.get("optimisation") else []
    if mode.get("lto") is not None:
        parts.append("LTO" if mode["lto"] else "no LTO")
    if label.get("interpreter"):
        parts.append(str(label["interpreter"]))
    return " ".join(parts)


def refusal(changes: Sequence[str]) -> str:
    more = f" (and {len(changes) - 1} more cells)" if len(changes) > 1 else ""
    return (
        f"the two sides were built in different modes: {changes[0]}{more}; "
        "their change would be the build's, not the code's"
    )


def changes_line(changes: Sequence[str]) -> str | None:
    """What every output of such a comparison says."""
    if not changes:
        return None
    return "built in different modes (--allow-build-change): " + "; ".join(changes)
