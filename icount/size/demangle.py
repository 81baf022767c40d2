"""Readable names for C++ and Rust symbols.

C++ (Itanium ABI, `_Z...`) goes through the C++ runtime's own `__cxa_demangle`
(libstdc++ or libc++, loaded with ctypes: no subprocess, no new dependency). Rust's
legacy mangling is Itanium-shaped: after `__cxa_demangle` the `::h<16 hex>` hash is
dropped and the `$LT$`-style escapes are decoded, as rustc-demangle does. Rust's v0
names (`_R...`, used by the standard library) go through rust_v0. Names that are none
of these, or that fail to parse, are shown as they are. A symbol version
(`_ZSt4cout@@GLIBCXX_3.4`) is kept after the demangled name, as c++filt keeps it.

Hostile names are bounded. An Itanium name's substitutions can double the output at
every nesting level (a 280-byte name demangles to 2 GB); `__cxa_demangle` has no limit
on output or time and cannot be interrupted, so it runs in a worker thread (ctypes
releases the GIL) and a name that takes longer than DEADLINE_S is shown raw and its
worker abandoned: it runs on, in the background, until icount exits. After MAX_STUCK
abandoned workers the remaining C++ names stay raw. rust_v0 has its own bounds on depth,
work and output length.
"""

from __future__ import annotations

import ctypes
import re
import sys
import threading
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

# Real names demangle in microseconds; a loaded machine may stall a thread for a
# scheduler slice or two. A name still running after this is not a real name.
DEADLINE_S = 0.5
MAX_STUCK = 2
MAX_MANGLED = 65536

_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")
_RUST_ESCAPES = {
    "$SP$": "@",
    "$BP$": "*",
    "$RF$": "&",
    "$LT$": "<",
    "$GT$": ">",
    "$LP$": "(",
    "$RP$": ")",
    "$C$": ",",
}
_RUST_UNICODE = re.compile(r"\$u([0-9a-f]{1,6})\$")


@lru_cache(maxsize=1)
def _runtime() -> Any | None:
    names = ("libc++.1.dylib", "libc++.dylib") if sys.platform == "darwin" else ("libstdc++.so.6",)
    for name in names:
        try:
            lib = ctypes.CDLL(name)
            fn = lib.__cxa_demangle
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p
        fn.argtypes = [
            ctypes.c_char_p,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_int),
        ]
        free = ctypes.CDLL(None).free
        free.argtypes = [ctypes.c_void_p]
        return fn, free
    return None


def available() -> bool:
    """Whether C++ names can be demangled on this machine."""
    return _runtime() is not None


def _cxa(name: str) -> str | None:
    """One name through `__cxa_demangle`, in this thread: call it through _cxa_many."""
    rt = _runtime()
    if rt is None:
        return None
    fn, free = rt
    status = ctypes.c_int(0)
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return None
    if b"\0" in raw or len(raw) > MAX_MANGLED:  # hostile string tables: keep the runtime safe
        return None
    ptr = fn(raw, None, None, ctypes.byref(status))
    if not ptr:
        return None
    try:
        if status.value != 0:
            return None
        text = ctypes.string_at(ptr)
    finally:
        free(ptr)
    return text.decode("utf-8", "backslashreplace")


class _Worker(threading.Thread):
    """Demangles `batch` in order; `done` grows by one result per name."""

    def __init__(self, batch: list[str]) -> None:
        super().__init__(name="icount-demangle", daemon=True)
        self.batch = batch
        self.done: list[str | None] = []
        self.progress = threading.Event()

    def run(self) -> None:
        for name in self.batch:
            self.done.append(_cxa(name))
            self.progress.set()

    def stuck(self) -> bool:
        """Wait until the batch is done (False) or one name outlasts DEADLINE_S (True)."""
        while self.is_alive():
            seen = len(self.done)
            self.progress.clear()
            if not self.progress.wait(DEADLINE_S) and len(self.done) == seen and self.is_alive():
                return True
        return False


class _Watchdog:
    """Runs `_cxa` over names in worker threads, abandoning a worker stuck on one."""

    stuck = 0  # workers abandoned in this process

    def run(self, names: list[str]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        todo = list(names)
        while todo:
            if _Watchdog.stuck >= MAX_STUCK:
                out.update(dict.fromkeys(todo))
                break
            worker = _Worker(todo)
            worker.start()
            stuck = worker.stuck()
            finished = list(worker.done)  # a stuck worker may still append: take a copy
            out.update(zip(todo, finished, strict=False))
            todo = todo[len(finished) :]
            if stuck and todo:
                _Watchdog.stuck += 1
                out[todo[0]] = None  # shown raw
                todo = todo[1:]
        return out


def _cxa_many(names: list[str]) -> dict[str, str | None]:
    if not names or _runtime() is None:
        return dict.fromkeys(names)
    return _Watchdog().run(names)


def is_rust(name: str) -> bool:
    """Whether a raw (mangled) name is Rust's: v0 (`_R...`) or legacy (`_ZN...17h<hash>E`)."""
    base = _split_version(name)[0]
    return base.startswith("_R") or _is_rust_legacy(base)


def _is_rust_legacy(name: str) -> bool:
    return (
        name.startswith("_ZN")
        and name.endswith("E")
        and re.search(r"17h[0-9a-f]{16}E$", name) is not None
    )


def _rust_tidy(text: str) -> str:
    text = _RUST_HASH.sub("", text)
    # an identifier may not start with '$', so rustc prefixes those with '_'
    text = re.sub(r"(^|::)_\$", r"\1$", text)
    for esc, ch in _RUST_ESCAPES.items():
        text = text.replace(esc, ch)
    text = _RUST_UNICODE.sub(lambda m: _chr(m.group(1)), text)
    return text.replace("..", "::")


def _chr(hexdigits: str) -> str:
    code = int(hexdigits, 16)
    return chr(code) if code < 0x110000 else "?"


def demangle(name: str) -> str:
    """One name, demangled when it is C++ or Rust; otherwise unchanged."""
    return demangle_many([name])[name]


def _split_version(name: str) -> tuple[str, str]:
    """`_ZSt4cout@@GLIBCXX_3.4` -> (`_ZSt4cout`, `@@GLIBCXX_3.4`): the linker's symbol
    version is no part of the mangled name."""
    at = name.find("@")
    return (name, "") if at <= 0 else (name[:at], name[at:])


def demangle_many(names: Iterable[str]) -> dict[str, str]:
    """Each name's readable form (the name itself where it is none of C++ or Rust)."""
    out: dict[str, str] = {}
    cxx: dict[str, list[str]] = {}  # mangled part -> the names that hold it
    for name in names:
        # `__Z` reaches here as `_Z` (Mach-O's leading underscore is stripped by the reader)
        base, version = _split_version(name)
        if base.startswith("_R"):
            from icount.size.rust_v0 import demangle_v0

            try:
                out[name] = demangle_v0(base) + version
            except (ValueError, IndexError, RecursionError):
                out[name] = name
        elif base.startswith("_Z"):
            cxx.setdefault(base, []).append(name)
        else:
            out[name] = name
    # shortest first: a hostile name (long, usually) cannot hold up the real ones
    for base, text in _cxa_many(sorted(cxx, key=lambda n: (len(n), n))).items():
        for name in cxx[base]:
            if text is None:
                out[name] = name
            else:
                shown = _rust_tidy(text) if _is_rust_legacy(base) else text
                out[name] = shown + _split_version(name)[1]
    return out
