"""Mutated real files (ELF, Mach-O, WebAssembly, an ar archive of them): only ParseError
may escape, nothing hangs, memory stays bounded by the file's size, and whatever parses
still has file-size columns that sum to the file size."""

from __future__ import annotations

import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icount.errors import ParseError
from icount.size import load_bytes, render, views

from .conftest import ROOT, Built
from .test_archive import gnu

pytestmark = pytest.mark.slow

SMALL = (
    "hello_elf.o",
    "hello_elf",
    "shapes_elf.o",
    "hello_arm64.o",
    "hello_arm64",
    "hello_arm64_32",
    "hello_fat",
)
WASM = ("wasm_o1.wasm", "wasm_o1.o", "wasm_debug.wasm", "shapes_cxx_mangled.wasm")
PER_EXAMPLE_S = 2.0


@pytest.fixture(scope="module")
def corpus(built: Built) -> list[bytes]:
    out = []
    for name in SMALL:
        if name in built.names:
            out.append(built.path(name).read_bytes())
    # committed, so the Wasm part runs even where nothing could be built
    wasm = [(ROOT / "fixtures" / "size" / "wasm" / n).read_bytes() for n in WASM]
    out.append(gnu([(f"m{i}.o", data) for i, data in enumerate(out[:1] + wasm[:2])]))
    out += wasm
    for data in out:  # import everything lazily imported, so memory peaks measure work only
        for image in load_bytes("warm-up", data):
            render.table([views.view(image, by, 10) for by in views.VIEWS][:1], "sections")
    return out


# Mutations aim at the headers, where one byte changes an offset, a count or a size.
_edit = st.tuples(
    st.one_of(st.integers(0, 4095), st.integers(0, 1 << 20)),
    st.one_of(st.integers(0, 255), st.sampled_from([0x00, 0xFF, 0x7F, 0x80])),
)
_mutation = st.tuples(
    st.integers(0, 1 << 16),  # which file (mod the corpus)
    st.lists(_edit, min_size=1, max_size=8),
    st.one_of(st.none(), st.integers(0, 1 << 20)),  # truncate at
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(m=_mutation)
def test_mutated_files(
    corpus: list[bytes], m: tuple[int, list[tuple[int, int]], int | None]
) -> None:
    check_mutation(corpus, m)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(m=_mutation)
def test_mutated_wasm(
    corpus: list[bytes], m: tuple[int, list[tuple[int, int]], int | None]
) -> None:
    """Wasm files are small: every byte is a header byte somewhere."""
    check_mutation(corpus[-len(WASM) :], m)


@pytest.fixture(scope="module")
def dwarf_file(built: Built) -> bytes:
    return built.path("units_gcc").read_bytes()


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(m=_mutation)
def test_mutated_dwarf(dwarf_file: bytes, m: tuple[int, list[tuple[int, int]], int | None]) -> None:
    """The compile-unit views read DWARF with pyelftools: its errors are one ParseError."""
    _, edits, cut = m
    data = bytearray(dwarf_file)
    # aim at the .debug_* sections, which gcc puts after the loaded part of the file
    for offset, value in edits:
        data[len(data) // 2 + offset % (len(data) // 2)] = value
    _check(bytes(data) if cut is None else bytes(data[: max(1, cut % (len(data) + 1))]), True)


def check_mutation(corpus: list[bytes], m: tuple[int, list[tuple[int, int]], int | None]) -> None:
    which, edits, cut = m
    data = bytearray(corpus[which % len(corpus)])
    for offset, value in edits:
        data[offset % len(data)] = value
    if cut is not None:
        data = data[: max(1, cut % (len(data) + 1))]
    _check(bytes(data), False)


def _check(data: bytes, dwarf: bool) -> None:
    start = time.monotonic()
    tracemalloc.start()
    try:
        images = load_bytes("fuzzed", data, dwarf="compileunits" if dwarf else None)
        for image in images:
            bds = [views.view(image, by, 10) for by in views.View]
            for b in bds:
                assert b.file_total == len(data)
                render.to_json([b], "sections")
                render.table([b], "sections")
    except ParseError as e:
        assert str(e).startswith(("fuzzed: ", "fuzzed("))  # an archive names its member
        assert "\n" not in str(e)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert time.monotonic() - start < PER_EXAMPLE_S
    # memory bounded by the file's size, whatever counts the headers claim
    assert peak < 32 * len(data) + (4 << 20)
