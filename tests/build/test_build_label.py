"""Build labels: what built each measured binary, and compare refusing to call a change
of build mode (-O0 vs -O2) a change of code."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from icount import build_label
from icount.errors import ExitCode
from tests.conftest import Icount

SOURCE = (
    "int main(void) { volatile long s = 0; for (long i = 0; i < 20000; i++) s += i; return 0; }\n"
)


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One source built with gcc -g at -O0 and at -O2, each as `prog` in a folder of its
    own (so both sides' cells are named alike)."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed (scripts/setup.sh installs it)")
    root = tmp_path_factory.mktemp("builds")
    (root / "prog.c").write_text(SOURCE)
    out = {}
    for level in ("-O0", "-O2"):
        (root / level).mkdir()
        exe = root / level / "prog"
        subprocess.run(["gcc", "-g", level, "-o", str(exe), str(root / "prog.c")], check=True)
        out[level] = exe
    return out


def test_the_label_names_the_build_id_compiler_and_flags(builds: dict[str, Path]) -> None:
    label = build_label.label_of(str(builds["-O2"]))
    note = subprocess.run(
        ["readelf", "-n", str(builds["-O2"])], capture_output=True, text=True
    ).stdout
    assert f"Build ID: {label['build_id']}" in note
    assert any(c.startswith("GCC: ") for c in label["compilers"])
    assert any(" -O2" in p for p in label["producers"])
    assert label["mode"] == {"optimisation": "-O2", "lto": False}
    assert build_label.label_of(str(builds["-O0"]))["mode"]["optimisation"] == "-O0"


def test_mode_changes_name_the_fields_that_differ() -> None:
    def label(opt: str | None, lto: bool | None) -> dict[str, object]:
        return {"mode": {"optimisation": opt, "lto": lto}}

    assert build_label.mode_changes(label("-O0", False), label("-O2", True)) == [
        "optimisation -O0 → -O2",
        "lto off → on",
    ]
    # what one side's file does not tell is no difference
    assert build_label.mode_changes(label(None, None), label("-O2", True)) == []
    assert build_label.mode_changes(None, label("-O2", True)) == []


def test_an_interpreter_is_labelled_with_its_version() -> None:
    python = shutil.which("python3")
    assert python is not None
    label = build_label.label_of(python)
    assert str(label["interpreter"]).startswith("Python 3.")


def test_a_file_that_is_no_binary_is_labelled_so(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    label = build_label.label_of(str(script))
    assert "not" in label["unread"]
    assert label["mode"] == {"optimisation": None, "lto": None}


@pytest.mark.slow
def test_compare_names_the_build_change_and_refuses_without_the_flag(
    icount: Icount, builds: dict[str, Path], tmp_path: Path, need_valgrind: None
) -> None:
    for level, out in (("-O0", "base.json"), ("-O2", "new.json")):
        done = icount("run", "-q", "--runs", "1", "-o", out, "--", str(builds[level]), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    cell = json.loads((tmp_path / "new.json").read_text())["cells"][0]
    assert cell["extra"]["build"]["mode"] == {"optimisation": "-O2", "lto": False}

    refused = icount("compare", "base.json", "new.json", cwd=tmp_path)
    assert refused.returncode == ExitCode.USAGE
    assert refused.stdout == ""
    assert "prog: optimisation -O0 → -O2" in refused.stderr
    assert "--allow-build-change" in refused.stderr

    allowed = icount("compare", "base.json", "new.json", "--allow-build-change", cwd=tmp_path)
    assert allowed.returncode == ExitCode.OK, allowed.stderr  # -O2 counts fewer: improved
    assert "built in different modes (--allow-build-change): prog: optimisation -O0 → -O2" in (
        allowed.stdout
    )
    assert "[BUILD CHANGED]" in allowed.stdout
    as_json = icount("compare", "base.json", "new.json", "--allow-build-change", "-f", "json",
                     cwd=tmp_path)  # fmt: skip
    assert json.loads(as_json.stdout)["build_changes"] == ["prog: optimisation -O0 → -O2"]

    # the same build on both sides compares as ever
    same = icount("compare", "new.json", "new.json", cwd=tmp_path)
    assert same.returncode == ExitCode.OK, same.stderr
    assert "BUILD" not in same.stdout


def test_a_table_of_cells_built_in_different_modes_says_so() -> None:
    from icount import results_table
    from icount.results import UNIT_INSTRUCTIONS, Cell, Results, Run

    def cell(name: str, opt: str, order: int) -> Cell:
        build = {"program": "prog", "mode": {"optimisation": opt, "lto": False}}
        return Cell(name, "", "callgrind", UNIT_INSTRUCTIONS, (Run(100.0, True),), {}, 1, 0.01,
                    extra={"build": build}, order=order)  # fmt: skip

    mixed = Results({}, (cell("slow", "-O0", 0), cell("fast", "-O2", 1)))
    notes = results_table.build_table(mixed).notes
    assert "built in different modes: slow -O0 no LTO; fast -O2 no LTO" in notes[-1]
    alike = Results({}, (cell("a", "-O2", 0), cell("b", "-O2", 1)))
    assert not any("modes" in n for n in results_table.build_table(alike).notes)


def test_a_server_is_labelled_by_its_interpreter_or_its_binary(
    builds: dict[str, Path], tmp_path: Path
) -> None:
    from icount.serve.adapter import Adapter, binary_path

    def of_server(start: tuple[str, ...], binary: str | None) -> dict[str, Any] | None:
        adapter = Adapter("t", tmp_path, (), start, {}, "/", 5.0, binary, ())
        return build_label.of_server(adapter.start, binary_path(adapter, tmp_path))

    python = shutil.which("python3")
    assert python is not None
    by_interpreter = of_server((python, "app.py"), "app.py")
    assert by_interpreter is not None
    assert str(by_interpreter["interpreter"]).startswith("Python 3.")
    exe = str(builds["-O2"])
    by_binary = of_server((exe, "{port}"), exe)
    assert by_binary is not None and by_binary["mode"]["optimisation"] == "-O2"
    assert of_server(("{build}/srv",), None) is None
