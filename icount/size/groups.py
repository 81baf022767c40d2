"""The crates, namespaces and packages views: symbols grouped by the first part of their
name (Rust crates, C++ namespaces, Go packages).

Each function takes a symbol's raw and demangled names and gives its group. Names of
another language than the view's (C functions in a Rust binary, say) are one group,
OTHER. A Rust impl (`<alloc::vec::Vec<u8> as core::clone::Clone>::clone`) belongs to the
crate of its type, or, for a type of no crate (`<u8 as core::fmt::Display>::fmt`), to
the trait's; a C++ name to its outermost namespace (`[global namespace]` when it has
none; `vtable for geo::Shape` to `geo`); a Go name to its import path up to the first
dot after the last slash (`github.com/x/y.(*T).M` is in `github.com/x/y`), where the
toolchain's own symbols (`go:itab.*`, `type:.eq.*`, and their older `go.`/`type.`
spelling) are `go` and `type`.
"""

from __future__ import annotations

from icount.size.demangle import is_rust

OTHER = "[other symbols]"
GLOBAL = "[global namespace]"
ANONYMOUS = "(anonymous namespace)"

_OPEN, _CLOSE = "<([{", ">)]}"
_OPERATOR_CHARS = set("<>=!+-*/%^&|~,[]")
_CXX_PREFIXES = (
    "vtable for ",
    "VTT for ",
    "construction vtable for ",
    "typeinfo for ",
    "typeinfo name for ",
    "guard variable for ",
    "non-virtual thunk to ",
    "virtual thunk to ",
    "covariant return thunk to ",
    "transaction clone for ",
    "TLS init function for ",
    "TLS wrapper function for ",
    "reference temporary ",  # "reference temporary #0 for X"
)


def crate(raw: str, shown: str) -> str:
    if not is_rust(raw) or shown == raw:
        return OTHER
    return _rust_crate(shown) or OTHER


def _rust_crate(name: str) -> str | None:
    if name.startswith("<"):
        inner = name[1 : _matching(name, 0)]
        self_type, sep, trait = _split_top(inner, " as ")
        return _path_crate(self_type) or (_path_crate(trait) if sep else None)
    return _path_crate(name)


def _path_crate(text: str) -> str | None:
    """The crate of a path (`alloc::vec::Vec<u8>` -> alloc); None for a primitive."""
    t = text.strip()
    for sigil in ("&mut ", "&", "*const ", "*mut ", "[", "(", "dyn ", "impl "):
        if t.startswith(sigil):
            return _path_crate(t[len(sigil) :])
    if t.startswith("<"):
        return _rust_crate(t)
    end = 0
    while end < len(t) and (t[end].isalnum() or t[end] == "_"):
        end += 1
    return t[:end] if end and t.startswith("::", end) else None


def _matching(text: str, start: int) -> int:
    """Index of the bracket closing the one at `start` (or the end)."""
    depth = 0
    for k in range(start, len(text)):
        c = text[k]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
            if depth == 0:
                return k
    return len(text)


def _split_top(text: str, sep: str) -> tuple[str, str, str]:
    """`text` split at the first `sep` outside brackets."""
    depth = 0
    for k, c in enumerate(text):
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif depth == 0 and text.startswith(sep, k):
            return text[:k], sep, text[k + len(sep) :]
    return text, "", ""


def namespace(raw: str, shown: str) -> str:
    if not raw.startswith("_Z") or is_rust(raw) or shown == raw:
        return OTHER
    name = shown
    for prefix in _CXX_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix) :]
            if prefix == "reference temporary ":
                name = name.split(" for ", 1)[-1]
            break
    return _cxx_namespace(name)


def _cxx_namespace(name: str) -> str:
    """The outermost namespace of a demangled C++ name, past its return type."""
    spaces: list[int] = []  # depth-0 spaces before the parameter list
    colons: list[int] = []  # depth-0 "::"
    depth, k, n = 0, 0, len(name)
    while k < n:
        if depth == 0 and name.startswith(ANONYMOUS, k):
            k += len(ANONYMOUS)
            continue
        if depth == 0 and name.startswith("operator", k) and (k == 0 or not _word(name[k - 1])):
            k = _skip_operator(name, k + len("operator"))
            continue
        c = name[k]
        if c in _OPEN:
            if c == "(" and depth == 0:
                break  # the parameter list
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif depth == 0:
            if c == " ":
                spaces.append(k)
            elif name.startswith("::", k):
                colons.append(k)
                k += 2
                continue
        k += 1
    start = spaces[-1] + 1 if spaces else 0
    first = next((c for c in colons if c >= start), None)
    if first is None:
        return GLOBAL
    return name[start:first] or GLOBAL


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


def _skip_operator(name: str, k: int) -> int:
    """Past an operator's symbol: `()`, `<<`, `new`, `delete[]`, ` bool`."""
    if name.startswith("()", k):
        return k + 2
    if k < len(name) and name[k] in _OPERATOR_CHARS:
        while k < len(name) and name[k] in _OPERATOR_CHARS:
            k += 1
        if name.startswith(" <", k):  # `operator<< <T>`: template arguments follow
            k += 1
        return k
    while k < len(name) and name[k] == " ":
        k += 1
    while k < len(name) and _word(name[k]):
        k += 1
    if name.startswith("[]", k):
        k += 2
    return k


_GO_LINKER = ("go:", "go.", "type:", "type.")  # the compiler's and linker's own symbols


def package(raw: str, shown: str) -> str:
    """Go: the import path of the package a symbol is in (`go`, `type`: the toolchain's
    itabs, strings and type descriptors)."""
    name = raw.split("[", 1)[0]  # generic instantiations: pkg.F[shape...]
    for prefix in _GO_LINKER:
        if name.startswith(prefix):
            return prefix[:-1]
    slash = name.rfind("/")
    dot = name.find(".", slash + 1)
    if dot <= 0 or name.startswith("$"):  # `$f64.3ff0...`: the compiler's constants
        return OTHER
    return name[:dot]
