"""Which file holds an interpreter's code: the launcher, or the library it loads.

A Python built with --enable-shared (pyenv's, a venv made from it) is a launcher of a
few KiB that loads `libpython3.X.so`, where the interpreter is; Debian's node may load
`libnode.so` the same way. The serve tables size what runs, so `runtime_library` finds
that library as the dynamic loader would: the file's DT_NEEDED, looked up in its
DT_RPATH (when it has no DT_RUNPATH), its DT_RUNPATH (`$ORIGIN` expanded), then the
directories of /etc/ld.so.conf and the default ones, skipping a file of another ELF
class or machine. Nothing is run (no `ldd`), and LD_LIBRARY_PATH is not read: the
answer depends on the files alone.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

from icount.errors import ParseError

# The libraries that hold an interpreter a launcher links to.
RUNTIME_LIBRARIES = ("libpython", "libnode", "libruby", "libperl")
DEFAULT_DIRS = ("/lib64", "/usr/lib64", "/lib", "/usr/lib")
LD_SO_CONF = "/etc/ld.so.conf"
_MAX_INCLUDE_DEPTH = 4


def runtime_library(binary: Path) -> Path | None:
    """The interpreter library `binary` links to, resolved; None for a file that
    names none (or one the loader would not find), or that is no ELF file."""
    from icount.size.elf import needs
    from icount.size.source import open_blob

    try:
        blob = open_blob(binary)
    except ParseError:
        return None
    try:
        if bytes(blob.data[:4]) != b"\x7fELF":
            return None
        wanted = needs(blob)
        ident = _ident(bytes(blob.data[:20]))
    except ParseError:
        return None
    finally:
        blob.close()
    # a name with a '/' is a path the loader takes from the cwd of the program: not ours
    names = [n for n in wanted.needed if n.startswith(RUNTIME_LIBRARIES) and "/" not in n]
    if not names:
        return None
    dirs = search_dirs(wanted.rpath, wanted.runpath, str(binary.resolve().parent))
    return find(names[0], [*dirs, *conf_dirs(Path(LD_SO_CONF)), *DEFAULT_DIRS], ident)


def search_dirs(rpath: list[str], runpath: list[str], origin: str) -> list[str]:
    """The file's own directories in the loader's order, `$ORIGIN` expanded; those
    still relative are left out (the loader reads them from the program's cwd, which
    icount's is not)."""
    dirs = [] if runpath else [_origin(d, origin) for d in rpath]
    dirs += [_origin(d, origin) for d in runpath]
    return [d for d in dirs if os.path.isabs(d)]


def find(name: str, dirs: list[str], ident: tuple[int, int, int] | None) -> Path | None:
    """The first `dirs`/`name` that is a file of the same ELF class, byte order and
    machine as `ident` (None: any)."""
    for d in dirs:
        path = Path(d) / name
        if path.is_file() and (ident is None or _ident(_head(path)) == ident):
            return path.resolve()
    return None


def conf_dirs(conf: Path, depth: int = 0) -> list[str]:
    """The directories an ld.so.conf lists, its `include GLOB` lines followed."""
    try:
        lines = conf.read_text(errors="replace").splitlines()
    except OSError:
        return []
    out: list[str] = []
    for raw in lines:
        line = raw.split("#", 1)[0].strip()
        if line.startswith("include") and depth < _MAX_INCLUDE_DEPTH:
            pattern = line.removeprefix("include").strip()
            if not os.path.isabs(pattern):
                pattern = str(conf.parent / pattern)
            for included in sorted(glob.glob(pattern)):
                out += conf_dirs(Path(included), depth + 1)
        elif line.startswith("/"):
            out.append(line)
    return out


def _origin(d: str, origin: str) -> str:
    return d.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as f:
            return f.read(20)
    except OSError:
        return b""


def _ident(head: bytes) -> tuple[int, int, int] | None:
    """(class, byte order, machine) of an ELF header's first 20 bytes."""
    if len(head) < 20 or not head.startswith(b"\x7fELF"):
        return None
    machine = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    return head[4], head[5], machine
