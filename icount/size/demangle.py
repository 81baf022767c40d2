"""Readable names for C++ and Rust symbols.

C++ (Itanium ABI, `_Z...`) goes through the C++ runtime's own `__cxa_demangle`
(libstdc++ or libc++, loaded with ctypes: no subprocess, no new dependency). Rust's
legacy mangling is Itanium-shaped: after `__cxa_demangle` the `::h<16 hex>` hash is
dropped and the `$LT$`-style escapes are decoded, as rustc-demangle does. Rust's v0
names (`_R...`, used by the standard library) go through rust_v0. Names that are none
of these, or that fail to parse, are shown as they are.
"""

from __future__ import annotations

import ctypes
import re
import sys
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

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
    rt = _runtime()
    if rt is None:
        return None
    fn, free = rt
    status = ctypes.c_int(0)
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return None
    if b"\0" in raw or len(raw) > 65536:  # hostile string tables: keep the runtime safe
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
    """One name, demangled when it is C++ or legacy Rust; otherwise unchanged."""
    # `__Z` reaches here as `_Z` (Mach-O's leading underscore is stripped by the reader)
    if name.startswith("_R"):
        from icount.size.rust_v0 import demangle_v0

        try:
            return demangle_v0(name)
        except (ValueError, IndexError, RecursionError):
            return name
    if not name.startswith("_Z"):
        return name
    text = _cxa(name)
    if text is None:
        return name
    if _is_rust_legacy(name):
        return _rust_tidy(text)
    return text


def demangle_many(names: Iterable[str]) -> dict[str, str]:
    return {n: demangle(n) for n in names}
