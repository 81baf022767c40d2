"""Demangled names equal c++filt's (an independent demangler: binutils' libiberty)."""

from __future__ import annotations

import re
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icount.size import demangle, load
from icount.size.rust_v0 import demangle_v0

from .conftest import Built, tool


def cxxfilt(names: list[str]) -> list[str]:
    out = subprocess.run(
        [tool("c++filt")], input="\n".join(names) + "\n", capture_output=True, text=True, check=True
    ).stdout
    return out.splitlines()


def all_names(path: str) -> list[str]:
    (image,) = load(path)
    assert image.symbols is not None
    t = image.symbols
    return sorted({t.name(i) for i in range(len(t.addr))})


@pytest.mark.slow
@pytest.mark.parametrize("name", ["shapes_elf.o", "shapes_arm64.o"])
def test_cxx_names_equal_cxxfilt(built: Built, name: str) -> None:
    if not demangle.available():
        pytest.skip("no C++ runtime (libstdc++.so.6) to demangle with")
    names = [n for n in all_names(str(built.path(name))) if n.startswith("_Z")]
    assert len(names) >= 2
    assert [demangle.demangle(n) for n in names] == cxxfilt(names)
    assert "geo::total(geo::Shape const&, int)" in {demangle.demangle(n) for n in names}


@pytest.mark.slow
def test_rust_names_equal_cxxfilt(built: Built) -> None:
    """Legacy (_ZN...17h<hash>E) and v0 (_R...) names, as rustc-demangle's `{:#}` prints
    them: c++filt's output without the hashes, crate disambiguators and const types."""
    names = [n for n in all_names(str(built.path("hello_rust"))) if n.startswith(("_ZN", "_R"))]
    assert sum(n.startswith("_R") for n in names) > 10
    assert sum(n.startswith("_ZN") for n in names) > 2
    expected = []
    for ref in cxxfilt(names):
        ref = re.sub(r"::h[0-9a-f]{16}$", "", ref)
        ref = re.sub(r"\[[0-9a-f]{1,16}\]", "", ref)
        expected.append(re.sub(r"(\d+): [iu](8|16|32|64|128|size)\b", r"\1", ref))
    got = [demangle.demangle(n) for n in names]
    assert got == expected
    assert "hello::main" in got and "hello::describe" in got


def test_examples() -> None:
    assert demangle.demangle("_ZN4core3fmt5write17h0123456789abcdefE") == "core::fmt::write"
    assert demangle.demangle("main") == "main"
    assert demangle.demangle("_Z_not_valid") == "_Z_not_valid"
    assert demangle_v0("_RNvCs1234_5hello4main") == "hello::main"
    assert demangle_v0("_RINvCs_4core3maxmE") == "core::max::<u32>"
    assert demangle_v0("_RNvMNtCs_5alloc3vecINtB2_3VecpE4push") == "<alloc::vec::Vec<_>>::push"


@pytest.mark.parametrize(
    "name",
    [
        "_R",
        "_RB_",
        "_RBz_",
        "_RNvNvNvNvNvNv",
        "_R" + "S" * 5000 + "u",
        "_R" + "NvI" * 3000,
        "_RC99999999999a",
        "_RNvC0_3",
    ],
)
def test_hostile_v0_names_stay_mangled(name: str) -> None:
    assert demangle.demangle(name) == name


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="_RNCvMXYIEBKLGSAPOQTFDUpsuhmjl0123456789abcz", max_size=60))
def test_v0_never_raises_anything_else(tail: str) -> None:
    out = demangle.demangle("_R" + tail)
    assert isinstance(out, str)
