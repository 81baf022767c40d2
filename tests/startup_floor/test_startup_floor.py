"""The start-up floor (--floor): a trivial program of each cell's kind, counted as the
cells are, shown beside each row and subtracted with --minus-floor."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from icount import startup_floor
from icount.errors import ResultsFileError
from icount.results import UNIT_INSTRUCTIONS, Cell, Results, Run
from icount.results.files import from_json, to_json
from tests.conftest import Icount

HELLO_C = '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n'


def test_the_kind_of_an_interpreter_and_of_what_it_cannot_tell(tmp_path: Path) -> None:
    py = startup_floor.program_for(
        {"program": "python3", "interpreter": "Python 3.11.2"},
        ["/usr/bin/python3", "-X", "utf8", "script.py"],
        tmp_path,
    )
    assert py == startup_floor.FloorProgram(
        "Python 3.11.2", ("/usr/bin/python3", "-X", "utf8", "-c", "pass")
    )
    node = startup_floor.program_for(
        {"program": "node", "interpreter": "v20.1.0"}, ["/usr/bin/node", "app.js"], tmp_path
    )
    assert node.argv == ("/usr/bin/node", "-e", "0")
    unknown = startup_floor.program_for({"program": "sh"}, ["/bin/sh", "x.sh"], tmp_path)
    assert unknown.argv is None and unknown.reason is not None and "--floor" in unknown.reason


def test_gcc_switches_are_taken_from_the_producer() -> None:
    producer = "GNU C17 12.2.0 -mtune=generic -march=x86-64 -g -O2 -fno-plt"
    assert startup_floor._gcc_flags(producer) == [
        "-mtune=generic", "-march=x86-64", "-g", "-O2", "-fno-plt"
    ]  # fmt: skip


def test_a_stored_floor_that_is_no_count_is_refused() -> None:
    cell = Cell("a", "", "callgrind", UNIT_INSTRUCTIONS, (Run(5.0, True),), {}, 1, 0.01,
                extra={"floor": {"kind": "C", "argv": ["t"], "runs": [3.0]}})  # fmt: skip
    doc = to_json(Results({}, (cell,)))
    assert from_json(doc, "r.json").cells[0].extra["floor"]["runs"] == [3.0]
    doc["cells"][0]["extra"]["floor"]["runs"] = [-1]
    with pytest.raises(ResultsFileError, match=r"floor\.runs must be a list of counts"):
        from_json(doc, "r.json")


def test_minus_floor_subtracts_and_says_so() -> None:
    floor = {"kind": "C (gcc -O2)", "argv": ["t"], "runs": [100.0]}
    cell = Cell("a", "", "callgrind", UNIT_INSTRUCTIONS, (Run(105.0, True),), {}, 1, 0.01,
                extra={"floor": floor})  # fmt: skip
    less = startup_floor.minus(Results({}, (cell,)))
    assert less.cells[0].values == [5.0]
    assert less.cells[0].unit == startup_floor.UNIT_MINUS
    (note,) = startup_floor.notes(less.cells)[1:]
    assert note == (
        "a/callgrind: 105 is within 10% of its start-up floor 100: it measures process "
        "start-up more than its own work"
    )


@pytest.mark.slow
def test_the_floor_of_a_c_hello_world_is_a_trivial_c_program_built_alike(
    icount: Icount, tmp_path: Path, need_valgrind: None
) -> None:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed (scripts/setup.sh installs it)")
    # the folder's name long enough that the floor can run from a path as long (see
    # startup_floor._placed); the two programs' names as long as each other
    folder = tmp_path / ("x" * 30)
    folder.mkdir()
    for name, source in (("hello", HELLO_C), ("trivl", startup_floor.TRIVIAL_C)):
        (folder / f"{name}.c").write_text(source)
        subprocess.run(["gcc", "-g", "-O2", "-o", str(folder / name), str(folder / f"{name}.c")],
                       check=True)  # fmt: skip
    done = icount("run", "-q", "--floor", "auto", "--runs", "1", "-o", "r.json",
                  "--cmd", f"hello={folder / 'hello'}", "--cmd", f"trivial={folder / 'trivl'}",
                  cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    cells = {c["name"]: c for c in json.loads((tmp_path / "r.json").read_text())["cells"]}
    floor = cells["hello"]["extra"]["floor"]
    assert floor["kind"].startswith("C (gcc ") and "-O2" in floor["kind"]
    assert floor["runs"] == [cells["trivial"]["median"]]
    assert "floor" in done.stdout.splitlines()[1]
    assert "hello/callgrind: " in done.stdout and "of its start-up floor" in done.stdout
    assert not list(Path("/tmp").glob(f"icf*/*/{'t' + '_' * 4}"))  # its copies are removed

    less = icount("run", "-q", "--minus-floor", "--runs", "1", "-o", "m.json",
                  "--cmd", f"hello={folder / 'hello'}", cwd=tmp_path)  # fmt: skip
    assert less.returncode == 0, less.stderr
    assert "instructions minus start-up floor (callgrind)" in less.stdout
    medians = json.loads((tmp_path / "m.json").read_text())["cells"][0]
    assert medians["median"] == cells["hello"]["median"]  # the file keeps the counts
