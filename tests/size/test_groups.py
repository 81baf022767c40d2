"""The crates, namespaces and packages views: symbols grouped by the first part of their
demangled names; grouping moves no byte (the symbols view, summed, gives the same)."""

from __future__ import annotations

import pytest

from icount.size import demangle, groups, load, views
from icount.size.model import Breakdown

from .conftest import Built


@pytest.mark.parametrize(
    ("shown", "crate"),
    [
        ("core::fmt::write", "core"),
        ("std::rt::lang_start::{{closure}}", "std"),
        ("<alloc::vec::Vec<u8> as core::clone::Clone>::clone", "alloc"),
        ("<u8 as core::fmt::Display>::fmt", "core"),
        ("<&T as core::fmt::Debug>::fmt", "core"),  # a type of no crate: the trait's
        ("<u8 as Display>::fmt", None),  # neither side names a crate
        ("<&mut hello::Thing as core::fmt::Debug>::fmt", "hello"),
        ("<[gimli::read::Unit<R>] as core::fmt::Debug>::fmt", "gimli"),
        ("<hello::Thing>::new", "hello"),
        ("<<std::io::Stdout as std::io::Write>::write_fmt::Adapter as core::fmt::Write>::x", "std"),
    ],
)
def test_rust_crates(shown: str, crate: str | None) -> None:
    assert groups.crate("_RNvC1a1f", shown) == (crate or groups.OTHER)


@pytest.mark.parametrize(
    ("shown", "namespace"),
    [
        ("geo::total(geo::Shape const&, int)", "geo"),
        ("use_boxes(int)", groups.GLOBAL),
        ("main", groups.GLOBAL),
        ("vtable for geo::Square", "geo"),
        ("typeinfo name for geo::Shape", "geo"),
        ("void std::vector<int, std::allocator<int> >::_M_realloc_insert<int>(int&&)", "std"),
        ("std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits"
         "<char> >(std::basic_ostream<char, std::char_traits<char> >&, char const*)", "std"),
        ("(anonymous namespace)::helper(int)", "(anonymous namespace)"),
        ("geo::Box<long>::operator()(long) const", "geo"),
        ("operator new(unsigned long)", groups.GLOBAL),
        ("geo::Shape::operator bool() const", "geo"),
        ("non-virtual thunk to geo::Square::~Square()", "geo"),
        ("std::cout@GLIBCXX_3.4", "std"),
        ("guard variable for geo::f()::cache", "geo"),
        ("int (anonymous namespace)::g<int>(int)", "(anonymous namespace)"),
    ],
)  # fmt: skip
def test_cxx_namespaces(shown: str, namespace: str) -> None:
    assert groups.namespace("_Z1fv", shown) == namespace


def test_names_of_other_languages_are_other() -> None:
    assert groups.namespace("memcpy", "memcpy") == groups.OTHER
    assert groups.namespace("_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write") == (
        groups.OTHER
    )  # Rust, not C++
    assert groups.crate("_Z3foov", "foo()") == groups.OTHER
    assert groups.crate("_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write") == "core"


@pytest.mark.parametrize(
    ("name", "package"),
    [
        ("main.main", "main"),
        ("fmt.Fprintln", "fmt"),
        ("runtime.(*mheap).alloc", "runtime"),
        ("internal/abi.(*Type).Kind", "internal/abi"),
        ("github.com/x/y.(*T).M", "github.com/x/y"),
        ("github.com/x/y.F[go.shape.int]", "github.com/x/y"),
        ("slices.Sort[...][github.com/a/b.T]", "slices"),
        ("x_cgo_init", groups.OTHER),
        ("type..eq.io/fs.PathError", "type"),
        ("type:.eq.[2]interface {}", "type"),
        ("go.itab.*internal/poll.FD,io.Reader", "go"),
        ("go:buildid", "go"),
        ("$f64.3ff0000000000000", groups.OTHER),
    ],
)
def test_go_packages(name: str, package: str) -> None:
    assert groups.package(name, name) == package


def _symbol_bytes(b: Breakdown) -> tuple[int, int]:
    """File and VM bytes of the rows that are symbols or groups (not [section X] etc.)."""
    rows = [
        r for r in b.rows if not r.label.startswith("[") or r.label in (groups.OTHER, groups.GLOBAL)
    ]
    return sum(r.file for r in rows), sum(r.vm for r in rows)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "by", "expected"),
    [
        ("hello_rust", "crates", {"std", "core", "alloc", "hello"}),
        ("shapes_elf.o", "namespaces", {"geo", groups.GLOBAL}),
        ("hello_cxx", "namespaces", {"std", groups.OTHER}),  # main is not mangled
        ("hello_go", "packages", {"runtime", "fmt", "main", "internal/cpu", "type", "go"}),
    ],
)
def test_groups_of_real_files_move_no_byte(
    built: Built, name: str, by: str, expected: set[str]
) -> None:
    if by != "packages" and not demangle.available():
        pytest.skip("no C++ runtime (libstdc++.so.6) to demangle with")
    path = built.path(name)
    (image,) = load(path)
    grouped = views.view(image, by, 0)
    plain = views.view(image, "symbols", 0)
    assert expected <= {r.label for r in grouped.rows}
    assert grouped.file_total == plain.file_total == path.stat().st_size
    assert grouped.vm_total == plain.vm_total
    assert _symbol_bytes(grouped) == _symbol_bytes(plain)
    sections = {r.label: r for r in plain.rows if r.label.startswith("[")}
    for r in grouped.rows:
        if r.label.startswith("[") and r.label not in (groups.OTHER, groups.GLOBAL):
            assert sections[r.label] == r  # section, header and padding rows are unchanged
