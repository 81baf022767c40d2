"""Short names of functions for notes and chart labels: C++ symbols without their
template arguments, parameter lists and (for a label) return types. The results file
and each mark's title keep the whole name."""

from __future__ import annotations

import re

ANON = "(anonymous namespace)"
_HIDDEN = "\x00"  # stands in for ANON through the stripping, restored after
_QUALIFIERS = ("const", "volatile", "&", "&&", "noexcept")
# What the demangler writes before the symbol a special one belongs to.
_SPECIAL = (
    "vtable for ",
    "typeinfo for ",
    "typeinfo name for ",
    "VTT for ",
    "construction vtable for ",
    "guard variable for ",
    "non-virtual thunk to ",
    "virtual thunk to ",
    "covariant return thunk to ",
    "transaction clone for ",
)


def display_name(name: str) -> str:
    """A C++ symbol without its template arguments and parameter list, for a line of
    notes: `v8::internal::Sweeper::RawSweep(v8::internal::Page*, ...)` is
    `v8::internal::Sweeper::RawSweep`. Names without `::` (C, Go's
    `runtime.(*mheap).alloc`) and names the stripping would cut to nothing readable
    (Rust's `<T as Trait>::fmt`) are returned as they are."""
    if "::" not in name:
        return name
    anon, hidden = ANON, _HIDDEN
    name = name.replace(anon, hidden)
    out: list[str] = []
    depth = 0
    pairs = {"<": ">", "(": ")"}
    closing = set(pairs.values())
    for i, ch in enumerate(name):
        if ch in pairs and not (ch == "<" and name.startswith("operator", max(0, i - 8))):
            depth += 1
        elif ch in closing and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    name = name.replace(hidden, anon)
    short = "".join(out).strip().replace(hidden, anon)
    if not short or depth != 0 or short.startswith("::") or "::::" in short:
        return name  # unbalanced, or a qualifier that was all brackets
    return short


def function_name(name: str) -> str:
    """`display_name` without the return type and the trailing qualifiers a demangled
    C++ symbol carries: `std::istreambuf_iterator<char> std::money_get<char>::_M_extract
    <false>(...) const` is `std::money_get::_M_extract`, `int v8::Foo::Bar(int)` is
    `v8::Foo::Bar`. Names without `::` are returned as they are."""
    for prefix in _SPECIAL:  # `vtable for std::foo<int>`: what it is of, said whole
        if name.startswith(prefix):
            return prefix + function_name(name[len(prefix) :])
    short = display_name(name)
    if "::" not in short or short == name:
        return short  # left whole by display_name: not a name it could read
    words = short.replace(ANON, _HIDDEN).split(" ")
    while len(words) > 1 and words[-1] in _QUALIFIERS:
        words.pop()
    last = words[-1]
    # `operator new`, `foo::operator delete[]`, `operator bool`: the operator's word is
    # part of the name
    if len(words) > 1 and (words[-2] == "operator" or words[-2].endswith("::operator")):
        last = f"{words[-2]} {last}"
    return last.replace(_HIDDEN, ANON) or short


# The suffixes gcc (and clang's LTO) give a function's copies: a copy specialised on
# constant arguments, with its arguments rewritten, a part split off, an LTO-private
# rename (each numbered), the cold part, a function-local alias (numbered or not), clang
# ThinLTO's promoted local (`.llvm.` and a hash); several may follow each other
# (`foo.isra.0.cold`, `foo.constprop.0.isra.0`). The number is required where gcc always
# writes one, so that Go's `main.part` (function `part` of package `main`) is no copy.
_SUFFIX = r"(?:(?:constprop|isra|part|lto_priv)\.\d+|cold(?:\.\d+)?|localalias(?:\.\d+)?|llvm\.\d+)"
_CLONE = re.compile(rf"(?:\.{_SUFFIX})+$")
# A demangled C++ copy: `scale(long*, int, long) [clone .constprop.0] [clone .cold]`
_CXX_CLONE = re.compile(rf"(?:\s*\[clone (?:\.{_SUFFIX})+\])+$")
# a function callgrind knows only by its address (stripped, JIT-compiled)
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
LEVEL = re.compile(r"'\d+$")  # callgrind's recursion level (`fib'2`), after any suffix


def recursion_base(name: str) -> str:
    """The function a callgrind recursion level (`fib'2`) is of; any other name as it is."""
    return LEVEL.sub("", name)


def clone_base(name: str) -> str:
    """The function a compiler's copy was made from: `LZ4_compress_fast.constprop.0`,
    `foo.isra.0`, `foo.part.0`, `foo.cold`, `foo.lto_priv.0`, `foo [clone .isra.0]` are
    `LZ4_compress_fast` and `foo`, with a recursion level kept (`foo.part.0'2` is
    `foo'2`); any other name is returned as it is, and so is one whose rest still has a
    dot (a Go path: `main.(*T).part.0` is no gcc copy). The one key every pairing uses:
    compare's explanation sums a function's copies into its row on each side (self
    costs add up); the differential flame graph and `icount inline`, which show each
    function as it is, take a copy for its function only where one side lacks it."""
    level = LEVEL.search(name)
    head = name[: level.start()] if level else name
    base = _CXX_CLONE.sub("", head)
    if base == head:
        base = _CLONE.sub("", head)
        if "." in base:
            return name
    return name if not base else base + (level.group() if level else "")
