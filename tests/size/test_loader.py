"""A launcher's interpreter library, found as the loader finds it (issue 31): the serve
tables size a shared-libpython Python by its launcher and libpython."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from icount.serve.adapter import adapter_from_table
from icount.serve.server import Target
from icount.serve.targets import binary_sizes
from icount.size import summarize
from icount.size.elf import needs
from icount.size.loader import conf_dirs, find, runtime_library, search_dirs
from icount.size.source import open_blob

from .conftest import tool

PYTHON = Path(os.path.realpath(sys.executable))


def _ldd(path: Path, name: str) -> Path | None:
    """What ldd says `name` resolves to: the reference, never what icount runs."""
    ldd = shutil.which("ldd")
    if ldd is None:
        pytest.skip("ldd is not installed")
    # without LD_LIBRARY_PATH (a conda or dev shell's), which runtime_library does not read
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    done = subprocess.run([ldd, str(path)], capture_output=True, text=True, timeout=60, env=env)
    out = done.stdout
    m = re.search(rf"^\s*{re.escape(name)} => (\S+)", out, re.M)
    return Path(m.group(1)).resolve() if m else None


def _libpython() -> str:
    blob = open_blob(PYTHON)
    try:
        names = [n for n in needs(blob).needed if n.startswith("libpython")]
    finally:
        blob.close()
    if not names:
        pytest.skip(f"{PYTHON} is not linked to a shared libpython")
    return names[0]


def test_the_running_python_finds_the_library_ldd_finds() -> None:
    name = _libpython()
    lib = runtime_library(PYTHON)
    assert lib is not None and lib == _ldd(PYTHON, name)
    assert lib.name == name


def test_binary_sizes_of_a_python_target_hold_libpython(tmp_path: Path) -> None:
    name = _libpython()
    table = {"start": ["{python}", "-c", "pass"], "binary": "{python}", "paths": [
        {"name": "p", "target": "/"}]}  # fmt: skip
    extra = binary_sizes(Target(adapter_from_table(table, tmp_path, "test"), tmp_path))
    lib = runtime_library(PYTHON)
    assert lib is not None
    launcher, library = summarize(PYTHON), summarize(lib)
    assert extra["binary"] == f"{Path(sys.executable).name} + {name}"
    assert extra["binary_library"] == lib.name == name
    assert extra["binary_bytes"] == launcher["file_bytes"] + library["file_bytes"]
    assert extra["binary_bytes"] == PYTHON.stat().st_size + lib.stat().st_size
    assert extra["binary_text_bytes"] == launcher["text_bytes"] + library["text_bytes"]
    assert library["text_bytes"] > 10 * launcher["file_bytes"]  # the interpreter is there


def test_files_without_an_interpreter_library(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    assert runtime_library(script) is None
    assert runtime_library(tmp_path / "missing") is None
    true = Path("/usr/bin/true")
    if true.exists():
        assert runtime_library(true) is None  # libc only


def test_conf_includes_and_comments(tmp_path: Path) -> None:
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "b.conf").write_text("/opt/b  # multiarch\n")
    (tmp_path / "conf.d" / "a.conf").write_text("# nothing\n/opt/a\n")
    conf = tmp_path / "ld.so.conf"
    conf.write_text("include conf.d/*.conf\n/usr/local/lib\ninclude /nonexistent/*.conf\n")
    assert conf_dirs(conf) == ["/opt/a", "/opt/b", "/usr/local/lib"]
    loop = tmp_path / "loop.conf"
    loop.write_text(f"include {loop}\n/x\n")
    assert conf_dirs(loop) == ["/x"] * 5  # bounded, not endless


def test_relative_directories_are_not_searched_from_icounts_cwd() -> None:
    """`-rpath lib` is read by the loader from the program's cwd, not icount's."""
    assert search_dirs(["lib", "/opt/r"], [], "/x/bin") == ["/opt/r"]
    assert search_dirs(["/opt/r"], ["$ORIGIN/../lib", "../lib", ""], "/x/bin") == ["/x/bin/../lib"]


def test_a_needed_name_with_a_slash_is_not_looked_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DT_NEEDED `lib/libpython9.so`: the loader opens it from the program's cwd."""
    from icount.size import elf, loader

    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libpython9.so").write_bytes(b"\x7fELF\x02\x01" + bytes(12) + b">\x00")
    monkeypatch.chdir(tmp_path)
    wanted = elf.Needs(needed=["lib/libpython9.so"], rpath=[], runpath=[])
    monkeypatch.setattr(elf, "needs", lambda blob: wanted)
    assert loader.runtime_library(PYTHON) is None


def test_find_skips_a_file_of_another_machine(tmp_path: Path) -> None:
    other, right = tmp_path / "a", tmp_path / "b"
    other.mkdir()
    right.mkdir()
    # an ELF header for EM_386 (3), little-endian, 32-bit; and one for x86-64 (62)
    (other / "libpython9.so").write_bytes(b"\x7fELF\x01\x01" + bytes(12) + b"\x03\x00")
    (right / "libpython9.so").write_bytes(b"\x7fELF\x02\x01" + bytes(12) + b"\x3e\x00")
    found = find("libpython9.so", [str(other), str(right)], (2, 1, 62))
    assert found == (right / "libpython9.so").resolve()
    assert find("libpython9.so", [str(other)], (2, 1, 62)) is None


@pytest.mark.slow
def test_origin_runpath_against_ldd(tmp_path: Path) -> None:
    """A launcher built as CPython's is: -lpython, its RUNPATH `$ORIGIN/../lib`."""
    gcc = tool("gcc")
    (tmp_path / "lib").mkdir()
    (tmp_path / "bin").mkdir()
    (tmp_path / "py.c").write_text("int Py_Main(void) { return 7; }\n")
    (tmp_path / "main.c").write_text("int Py_Main(void);\nint main(void) { return Py_Main(); }\n")
    lib = tmp_path / "lib" / "libpython9.9.so.1.0"
    subprocess.run(
        [gcc, "-shared", "-fPIC", "-Wl,-soname,libpython9.9.so.1.0", "-o", str(lib),
         str(tmp_path / "py.c")], check=True, timeout=120,
    )  # fmt: skip
    (tmp_path / "lib" / "libpython9.9.so").symlink_to(lib.name)
    exe = tmp_path / "bin" / "python9.9"
    subprocess.run(
        [gcc, "-o", str(exe), str(tmp_path / "main.c"), f"-L{tmp_path / 'lib'}", "-lpython9.9",
         "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib"], check=True, timeout=120,
    )  # fmt: skip
    assert subprocess.run([str(exe)], timeout=60).returncode == 7  # the loader found it
    assert runtime_library(exe) == _ldd(exe, "libpython9.9.so.1.0") == lib.resolve()
    link = tmp_path / "venv-python"
    link.symlink_to(exe)  # a venv's bin/python: $ORIGIN is the real file's folder
    assert runtime_library(link) == lib.resolve()
