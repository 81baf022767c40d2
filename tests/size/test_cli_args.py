"""`icount size` converts its option values without typer's pydantic adapters: the values
and the error messages must be exactly those typer's own conversion gives."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from icount.cli import build_command

from .conftest import ROOT

typer_coercion = pytest.importorskip(
    "typer._coercion", reason="this typer converts with click's types, not pydantic"
)

ARGVS = [
    ["/bin/true"],
    ["--by", "symbols", "--top", "7", "--width", "80", "/bin/true", "/bin/sh"],
    ["--format", "json", "--gzip", "--diff", "a", "b"],
    ["--top", "-3", "--by", "segments", "x"],
    ["--top", "007", "x"],
    ["--top", " 4", "x"],  # not a plain decimal: typer's own path
    ["--top", "+3", "x"],
    ["--by", "SYMBOLS", "x"],
    ["--by", "foo", "x"],
    ["--format", "", "x"],
    [""],
    ["-"],
    ["/nonexistent", "/tmp"],
    ["-o", "sizes.json", "--force", "x"],
    ["--output", "", "x"],
    ["--by", "compileunits", "--top", "3", "x"],
]


def parse(argv: list[str], typer_only: bool) -> tuple[str, Any]:
    command = build_command("size")
    if typer_only:
        for p in [*command.params, command.get_help_option(command.context_class(command))]:
            if p is not None and hasattr(p, "_runtime_param"):
                p._runtime_param = None
    try:
        ctx = command.make_context("size", list(argv))
    except Exception as e:
        return type(e).__name__, str(e)
    return "ok", ctx.params


@pytest.mark.parametrize("argv", ARGVS, ids=lambda a: " ".join(a) or "''")
def test_values_and_errors_equal_typers(argv: list[str]) -> None:
    assert parse(argv, typer_only=False) == parse(argv, typer_only=True)


# Numbers are read by icount's checked parser (icount/numparse.py), not typer's:
# pydantic takes '1_0', Unicode digits, 'nan' and 'inf'. Each of these is refused
# naming the flag (tests/cli/test_cli.py covers every command's numeric options).
NOT_TYPERS = [["--top", "1_0", "x"], ["--top", "4.0", "x"], ["--top", "x", "x"],
              ["--top", "99999999999999999999999", "x"], ["--width", "", "x"]]  # fmt: skip


@pytest.mark.parametrize("argv", NOT_TYPERS, ids=" ".join)
def test_numbers_are_icounts_checked_parsers(argv: list[str]) -> None:
    kind, message = parse(argv, typer_only=False)
    assert kind == "BadParameter" and "ASCII digits" in message, message


def last_line(code: str) -> str:
    """The last line a Python child running `code` prints (stdout and stderr)."""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return (out.stdout + out.stderr).splitlines()[-1]


def test_size_command_imports_no_pydantic() -> None:
    code = (
        "import sys\n"
        "from icount.cli import build_command\n"
        "build_command('size').main(['--by', 'symbols', '--top', '3', '/bin/true'],"
        " standalone_mode=False)\n"
        "print('pydantic' in sys.modules, 'elftools.elf.elffile' in sys.modules)\n"
    )
    assert last_line(code) == "False False"


def test_the_whole_cli_imports_no_pydantic_nor_numpy_for_sections() -> None:
    """Through the root group too (its --help flag went through pydantic: +0.1 s), and
    the sections view of a small file needs no numpy (~50 ms to import)."""
    code = (
        "import runpy, sys\n"
        "sys.argv = ['icount', 'size', sys.executable]\n"
        "try:\n"
        "    runpy.run_module('icount', run_name='__main__')\n"
        "finally:\n"
        "    print([m for m in ('pydantic', 'numpy', 'rich.console') if m in sys.modules],"
        " file=sys.stderr)\n"
    )
    assert last_line(code) == "[]"
