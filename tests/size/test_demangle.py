"""Demangled names equal c++filt's (an independent demangler: binutils' libiberty)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icount.size import demangle, load
from icount.size.rust_v0 import demangle_v0

from .conftest import ROOT, Built, tool


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


def test_versioned_names_keep_their_version() -> None:
    """The linker writes `name@VERSION` into .symtab: the part before `@` is demangled
    and the version kept, as c++filt does."""
    names = ["_ZSt4cout@@GLIBCXX_3.4", "_ZNSt8ios_base4InitC1Ev@GLIBCXX_3.4", "memcpy@GLIBC_2.14"]
    if not demangle.available():
        pytest.skip("no C++ runtime (libstdc++.so.6) to demangle with")
    assert [demangle.demangle(n) for n in names] == cxxfilt(names)
    assert demangle.demangle("_ZSt4cout@@GLIBCXX_3.4") == "std::cout@@GLIBCXX_3.4"


@pytest.mark.slow
def test_versioned_names_of_a_real_program(built: Built) -> None:
    if not demangle.available():
        pytest.skip("no C++ runtime (libstdc++.so.6) to demangle with")
    names = [n for n in all_names(str(built.path("hello_cxx"))) if n.startswith("_Z") and "@" in n]
    assert any(n.startswith("_ZSt4cout@") for n in names)
    assert [demangle.demangle(n) for n in names] == cxxfilt(names)


# Hostile names (issue 12). Each nesting level doubles the demangled text.
_D36 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_D62 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _seq(i: int, digits: str) -> str:
    """An Itanium seq-id (base 36) or a v0 base-62 number, each ending in '_'."""
    if i == 0:
        return "_"
    v, out = i - 1, ""
    while True:
        out = digits[v % len(digits)] + out
        v //= len(digits)
        if v == 0:
            return out + "_"


def nested_cxx(levels: int) -> str:
    """f<P<int, int>, P<that, that>, P<P<that, that>, ...>>: S<k>_ names the previous level."""
    return (
        "_Z1fI1PIiiE"
        + "".join(f"S0_IS{_seq(k + 2, _D36)}S{_seq(k + 2, _D36)}E" for k in range(levels))
        + "EvT_"
    )


def nested_v0(levels: int) -> str:
    """a::f::<u8, (u8, u8), ((u8, u8), (u8, u8)), ...>: B<pos>_ backreferences the previous."""
    inner, prev = "INvC1a1f", 8
    inner += "h"
    for _ in range(levels):
        here = len(inner)
        inner += f"TB{_seq(prev, _D62)}B{_seq(prev, _D62)}E"
        prev = here
    return "_R" + inner + "E"


def test_nested_v0_backreferences_are_bounded() -> None:
    """Before the bound, 18 levels took 3 s and every two more four times as long:
    40 levels would run for days. Now the name stays mangled within the work cap."""
    assert demangle_v0(nested_v0(6)).startswith("a::f::<u8, (u8, u8), ((u8, u8), (u8, u8))")
    start = time.monotonic()
    name = nested_v0(40)
    assert demangle.demangle(name) == name
    assert demangle.demangle(name + "@V1") == name + "@V1"
    assert time.monotonic() - start < 30  # a hang check, not a benchmark: unbounded is days


@pytest.mark.slow
def test_nested_cxx_templates_are_bounded(tmp_path: Path) -> None:
    """An object whose symbols are a nested C++ name (30 levels: 4 GB of text from
    __cxa_demangle) and a nested v0 name: `size --by symbols` hung before; now it
    finishes, shows both raw and still demangles the object's real names."""
    gcc = tool("gcc")
    names = [nested_cxx(30), nested_v0(40), "_Z3foov", "_ZN4core3fmt5write17h0123456789abcdefE"]
    src = tmp_path / "hostile.c"
    src.write_text(
        "".join(
            f'void f{i}(void) __asm__("{n}");\nvoid f{i}(void) {{}}\n' for i, n in enumerate(names)
        )
    )
    obj = tmp_path / "hostile.o"
    subprocess.run([gcc, "-O1", "-c", "-o", str(obj), str(src)], check=True, timeout=60)
    proc = subprocess.run(
        [sys.executable, "-m", "icount", "size", "--by", "symbols", "-f", "csv", str(obj)],
        capture_output=True,
        text=True,
        timeout=120,  # a hang check: before the bounds this never returned
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    labels = {row.split(",")[3] for row in proc.stdout.splitlines()[1:]}
    assert names[0] in labels and names[1] in labels
    if demangle.available():
        assert "foo()" in labels and "core::fmt::write" in labels


@pytest.mark.parametrize(
    "name", ["_RNvCs12³4_5hello4main", "_RNvCs1234_⁵hello4main", "_RNvCs1234_5hello٤main"]
)
def test_unicode_digits_are_no_v0_digits(name: str) -> None:
    """'³' and '٤' pass str.isdigit: they were read as base-62 or decimal digits (the
    first two names demangled to hello::main, the second raised from int())."""
    assert demangle.demangle(name) == name
