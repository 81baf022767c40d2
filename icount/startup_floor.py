"""The start-up floor (`icount run --floor`): what a trivial program of a cell's kind
costs, so that a whole-process count can be read against it.

Every whole-process count includes the start-up of the process: the dynamic loader,
libc's initialisation, an interpreter's boot. A benchmark page states that floor in
every row rather than subtracting it silently; this module measures it. A cell's kind
comes from its build label (build_label.py): a C or C++ binary whose DWARF names GCC and
its switches gets `int main(void) { return 0; }` built with the same compiler, switches
and linking (static or dynamic, PIE or not); Go gets an empty `func main`; Python gets
`-c pass` and Node `-e 0` on the same interpreter. A kind it cannot tell needs `--floor
CMD`. Each floor is measured once per session, as its cells are: the same backend,
environment and number of runs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icount import numfmt, procs
from icount.results import Cell, Results, Run
from icount.stats import summarize

KEY = "floor"  # cell.extra[KEY]: {kind, argv, runs: [counts], reason?}
CSV_COLUMN = "floor"  # the floor's median
TRIVIAL_C = "int main(void) { return 0; }\n"
TRIVIAL_GO = "package main\n\nfunc main() {}\n"
UNIT_MINUS = "instructions minus start-up floor"
NEAR_FLOOR = 0.10  # a cell within 10% of its floor measures start-up more than its work
_FLAG_PREFIXES = ("-O", "-f", "-m", "-g", "-std=", "-D")
BUILD_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class FloorProgram:
    kind: str  # 'C (gcc -O2, dynamic, PIE)', 'Python 3.11.2', '--floor'
    argv: tuple[str, ...] | None  # None: the kind is not known, or it failed to build
    reason: str | None = None


@dataclass
class Floors:
    """The floors of one session, each measured once (jobs share them: locked)."""

    given: tuple[str, ...] | None = None  # --floor CMD, for every cell
    measured: dict[tuple[str, ...], dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    placed_in: Path | None = None  # where built floors are run from (see `_placed`)
    kinds: dict[str, int] = field(default_factory=dict)

    def cleanup(self) -> None:
        if self.placed_in is not None:
            shutil.rmtree(self.placed_in, ignore_errors=True)
            self.placed_in = None


def _gcc_flags(producer: str) -> list[str]:
    return [t for t in producer.split() if t.startswith(_FLAG_PREFIXES)]


def _build(cmd: Sequence[str], src: Path, source: str, out: Path) -> str | None:
    """Build the trivial program; None when it built, else why not."""
    out.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(source)
    done = procs.run(cmd, cwd=out.parent, timeout=BUILD_TIMEOUT_S)
    if not done.ok or not out.exists():
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
        return f"{cmd[0]} failed to build it" + (f": {tail[0][:160]}" if tail else "")
    return None


def program_for(label: Mapping[str, Any], argv: Sequence[str], work: Path) -> FloorProgram:
    """The trivial program of the kind of the cell whose program has this label."""
    interp = str(label.get("interpreter") or "")
    opts = _leading_options(argv[1:])
    if interp.startswith("Python"):
        return FloorProgram(interp, (argv[0], *opts, "-c", "pass"))
    if label.get("program", "").startswith("node"):
        return FloorProgram(f"Node {interp}".strip(), (argv[0], *opts, "-e", "0"))
    if isinstance(label.get("go"), Mapping):
        return _go(label, work)
    producers = [p for p in label.get("producers", []) if isinstance(p, str)]
    gnu = [p for p in producers if p.startswith(("GNU C", "GNU C++"))]
    if gnu:
        return _gcc(label, max(gnu, key=len), work)
    return FloorProgram("unknown", None, "its kind is not known: give --floor CMD")


def _leading_options(args: Sequence[str]) -> list[str]:
    """An interpreter's own options before its script (-X, -S, --no-warnings)."""
    out: list[str] = []
    it = iter(args)
    for a in it:
        if not a.startswith("-") or a in ("-c", "-m", "-e", "-p", "-"):
            break
        out.append(a)
        if a in ("-X", "-W"):  # Python's options that take the next argument
            out.append(next(it, ""))
    return out


def _gcc(label: Mapping[str, Any], producer: str, work: Path) -> FloorProgram:
    cxx = producer.startswith("GNU C++")
    compiler = procs.which("g++" if cxx else "gcc")
    flags = _gcc_flags(producer)
    link = []
    if not label.get("dynamic", True):
        link.append("-static")
    if label.get("kind") == "executable":  # not position-independent
        link.append("-no-pie")
    kind = (
        f"{'C++' if cxx else 'C'} ({'g++' if cxx else 'gcc'} {' '.join(flags)}"
        f"{', static' if '-static' in link else ''}{', no PIE' if '-no-pie' in link else ''})"
    )
    if compiler is None:
        return FloorProgram(kind, None, f"{'g++' if cxx else 'gcc'} is not installed")
    folder = work / _digest(kind)
    out = folder / "trivial"
    src = folder / ("trivial.cc" if cxx else "trivial.c")
    if not out.exists():
        why = _build([compiler, *flags, *link, "-o", str(out), str(src)], src, TRIVIAL_C, out)
        if why:
            return FloorProgram(kind, None, why)
    return FloorProgram(kind, (str(out),))


def _go(label: Mapping[str, Any], work: Path) -> FloorProgram:
    go = label["go"]
    kind = f"Go {go.get('version') or ''}".strip()
    tool = procs.which("go")
    if tool is None:
        return FloorProgram(kind, None, "go is not installed")
    folder = work / _digest(kind)
    out = folder / "trivial"
    if not out.exists():
        src = folder / "trivial.go"
        why = _build([tool, "build", "-o", str(out), str(src)], src, TRIVIAL_GO, out)
        if why:
            return FloorProgram(kind, None, why)
    return FloorProgram(kind, (str(out),))


def _digest(kind: str) -> str:
    return hashlib.sha256(kind.encode()).hexdigest()[:12]


def floor_of(
    label: Mapping[str, Any],
    argv: Sequence[str],
    floors: Floors,
    work: Path,
    measure: Callable[[tuple[str, ...]], list[Run]],
) -> dict[str, Any]:
    """The floor record of a cell: measured with `measure` (the cell's backend and runs)
    the first time its program is asked for, then reused."""
    with floors.lock:
        if floors.given is not None:
            program = FloorProgram("--floor", floors.given)
        else:
            program = program_for(label, argv, work)
        if program.argv is None:
            return {"kind": program.kind, "argv": None, "runs": [], "reason": program.reason}
        key: tuple[str, ...] = program.argv
        if floors.given is None and Path(key[0]).is_relative_to(work):
            key = (_placed(program, argv[0], floors), *key[1:])
        if key not in floors.measured:
            runs = measure(key)
            bad = next((r for r in runs if not r.valid), None)
            record: dict[str, Any] = {
                "kind": program.kind,
                "argv": [os.path.basename(key[0]), *key[1:]],
                "runs": [r.value for r in runs if r.valid and r.value is not None],
            }
            if bad is not None:
                record["reason"] = f"the floor's run failed: {bad.reason}"
            floors.measured[key] = record
        return dict(floors.measured[key])


def _placed(program: FloorProgram, like: str, floors: Floors) -> str:
    """A copy of a built floor program whose folder and file names are as long as those
    of the cell's program, where they can be that short. Start-up reads the program's
    path (argv[0], AT_EXECFN): a trivial C program counted 12 instructions more from a
    path 37 characters longer, and 4 more from one as long with its last '/' elsewhere
    (measured); with both lengths alike it counted the same."""
    assert program.argv is not None
    if floors.placed_in is None:
        floors.placed_in = Path(tempfile.mkdtemp(prefix="icf", dir="/tmp"))
    index = str(floors.kinds.setdefault(program.kind, len(floors.kinds)))
    folder_room = len(os.path.dirname(like)) - len(str(floors.placed_in)) - 1
    name_room = len(os.path.basename(like))
    if folder_room < len(index) or name_room < 1:
        return program.argv[0]  # the cell's path is shorter than any icount can make
    folder = floors.placed_in / (index + "_" * (folder_room - len(index)))
    path = folder / ("t" + "_" * (name_room - 1))
    if not path.exists():
        folder.mkdir(exist_ok=True)
        shutil.copy2(program.argv[0], path)
    return str(path)


# ---------------------------------------------------------------- reading it back


def median(cell: Cell) -> float | None:
    doc = cell.extra.get(KEY)
    if not isinstance(doc, Mapping) or doc.get("reason") or not doc.get("runs"):
        return None
    return summarize([float(v) for v in doc["runs"]]).median


def has_floor(cells: Sequence[Cell]) -> bool:
    return any(KEY in c.extra for c in cells)


def csv_value(cell: Cell) -> str:
    m = median(cell)
    return "" if m is None else numfmt.plain(m)


def text(cell: Cell) -> str:
    doc = cell.extra.get(KEY)
    if not isinstance(doc, Mapping):
        return ""
    m = median(cell)
    return "-" if m is None else numfmt.si(m)


def notes(cells: Sequence[Cell]) -> list[str]:
    """Each kind's floor program, why a floor is missing, and the cells that read
    little more than their floor."""
    out: list[str] = []
    kinds: dict[str, str] = {}
    for c in cells:
        doc = c.extra.get(KEY)
        if not isinstance(doc, Mapping):
            continue
        if doc.get("reason"):
            out.append(f"{c.key_text}: no start-up floor: {doc['reason']}")
            continue
        argv = " ".join(doc.get("argv") or [])
        kinds.setdefault(str(doc.get("kind")), argv)
        m, s = median(c), c.summary
        if m is None or s is None or not c.valid:
            continue
        whole = s.median + m if c.unit == UNIT_MINUS else s.median  # --minus-floor took it
        if whole <= m * (1 + NEAR_FLOOR):
            out.append(
                f"{c.key_text}: {numfmt.si(whole)} is within {NEAR_FLOOR:.0%} of its start-up "
                f"floor {numfmt.si(m)}: it measures process start-up more than its own work"
            )
    listed = "; ".join(f"{k}: {a}" for k, a in kinds.items())
    return [f"floor: the count of a trivial program of each kind ({listed})", *out]


def minus(results: Results) -> Results:
    """The results with every cell's runs less its floor (--minus-floor), in a unit that
    says so; cells without a floor stay as they are, and a note says which."""
    import dataclasses

    cells = []
    for c in results.cells:
        m = median(c)
        if m is None:
            cells.append(c)
            continue
        runs = tuple(
            dataclasses.replace(r, value=None if r.value is None else r.value - m) for r in c.runs
        )
        cells.append(dataclasses.replace(c, runs=runs, unit=UNIT_MINUS))
    return dataclasses.replace(results, cells=tuple(cells))
