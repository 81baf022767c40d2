"""The CLI as a user meets it: help with examples, one-line errors, distinct exit codes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from icount.cli import COMMANDS, build_command
from tests.support.cli import icount_here

Icount = Callable[..., Any]


@pytest.fixture(scope="module")
def icount() -> Icount:
    """In-process: these commands fail on their arguments or read files only (a call
    costs no interpreter start; tests/cli/test_in_process.py shows the outputs equal)."""
    return icount_here


def test_help_lists_commands_and_exit_codes(icount: Icount) -> None:
    done = icount("--help")
    assert done.returncode == 0
    for word in ("run", "table", "doctor", "Exit codes"):
        assert word in done.stdout


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_help_has_an_example(icount: Icount, command: str) -> None:
    done = icount(command, "--help")
    assert done.returncode == 0
    assert "Example" in done.stdout
    # `icount --help` lists each command's first line without loading it: the two must agree.
    first = " ".join(build_command(command).help.split())
    assert first.startswith(COMMANDS[command][1].removesuffix("."))


@pytest.mark.parametrize("command", list(COMMANDS))
def test_help_placeholders_are_words_not_python_types(icount: Icount, command: str) -> None:
    """typer writes `--cmd <list[str]>`, `--runs <int range>`: the user reads TEXT, N, PATH."""
    text = icount(command, "--help").stdout
    leaks = re.findall(r"<(?:list\[|int|float|str|path|Path|tuple)[^>]*>", text)
    assert leaks == []
    assert "Options:" in text  # the options section was rendered


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--runs", "0", "--", "true"], "Invalid value"),
        (["run", "--format", "xml", "--", "true"], "unknown format 'xml'"),
        (["run", "--max-spread", "abc", "--", "true"], "--max-spread takes a percentage"),
        (["run", "--env", "NOEQUALS", "--", "true"], "--env takes KEY=VALUE"),
        (["run", "--cmd", "nameonly"], "--cmd takes NAME=COMMAND LINE"),
        (["run", "--cmd", "a=true", "--cmd", "a=false"], "command names must be unique: a"),
        (["run", "--backend", "gpu", "--", "true"], "unknown backend 'gpu'"),
        (["no-such-subcommand"], "No such command"),
        (["run", "--bogus", "--", "true"], "No such option: --bogus"),
    ],
)
def test_usage_errors_exit_2_without_traceback(
    icount: Icount, tmp_path: Path, args: list[str], message: str
) -> None:
    done = icount(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    # one line, whoever found the mistake (icount or typer's parser)
    assert done.stderr.startswith("icount: error: ") and done.stderr.count("\n") == 1


def test_bad_toml_file(icount: Icount, tmp_path: Path) -> None:
    bad = tmp_path / "c.toml"
    bad.write_text("[[command]]\nname = 'x'\nargv = 'not a list'\n")
    done = icount("run", "--file", str(bad), cwd=tmp_path)
    assert done.returncode == 2
    assert "needs argv" in done.stderr
    bad.write_text("[[command]\n")
    done = icount("run", "--file", str(bad), cwd=tmp_path)
    assert done.returncode == 6 and "invalid TOML" in done.stderr
    done = icount("run", "--file", str(tmp_path / "none.toml"), cwd=tmp_path)
    assert done.returncode == 6 and done.stderr.strip().endswith("none.toml: no such file")


def test_table_rejects_bad_results_with_exit_6(icount: Icount, tmp_path: Path) -> None:
    bad = tmp_path / "r.json"
    bad.write_text('{"format": "icount-results", "version": 1, "cells": [')
    done = icount("table", str(bad))
    assert done.returncode == 6
    assert done.stderr.count("\n") == 1 and "not valid JSON" in done.stderr


def test_table_refuses_colliding_files(icount: Icount, tmp_path: Path) -> None:
    doc = {
        "format": "icount-results",
        "version": 1,
        "fingerprint": {"backend": "callgrind"},
        "cells": [
            {
                "name": "a",
                "path": "",
                "backend": "callgrind",
                "unit": "instructions",
                "runs_wanted": 1,
                "max_spread": 0.01,
                "runs": [{"value": 10, "valid": True, "reason": None, "detail": {}}],
            }
        ],
    }
    for name in ("x.json", "y.json"):
        (tmp_path / name).write_text(json.dumps(doc))
    done = icount("table", str(tmp_path / "x.json"), str(tmp_path / "y.json"))
    assert done.returncode == 2
    assert "cells collide: a/callgrind" in done.stderr
    one = icount("table", "-f", "csv", str(tmp_path / "x.json"))
    assert (
        one.returncode == 0 and "a,,callgrind,instructions,10,10,10,0.0000,1,1,true," in one.stdout
    )


def test_doctor_names_the_backend(icount: Icount) -> None:
    done = icount("doctor")
    assert "--backend auto picks" in done.stdout
    assert "valgrind" in done.stdout and "perf stat instructions:u" in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_interrupt_stops_every_process(tmp_path: Path, sig: str) -> None:
    import signal
    import subprocess
    import sys
    import time

    import psutil

    if not psutil.WINDOWS and __import__("shutil").which("valgrind") is None:
        pytest.skip("valgrind is not installed (scripts/setup.sh installs it)")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "icount",
            "run",
            "--backend",
            "callgrind",
            "-o",
            str(tmp_path / "r.json"),
            "--",
            "sleep",
            "30",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    me = psutil.Process(proc.pid)
    deadline = time.monotonic() + 20
    while not any(_is_measured(c) for c in _kids(me)):
        assert time.monotonic() < deadline, "valgrind never started"
        time.sleep(0.1)
    kids = _kids(me)
    proc.send_signal(getattr(signal, sig))
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    time.sleep(0.2)
    alive = [k for k in kids if _alive(k)]
    assert not alive, alive


def _is_measured(proc: Any) -> bool:
    """valgrind or the command under it; icount's short-lived helpers (a version probe)
    may end or be a zombie while they are looked at."""
    import psutil

    try:
        return "valgrind" in " ".join(proc.cmdline()) or "sleep" in proc.name()
    except psutil.Error:
        return False


def _alive(proc: Any) -> bool:
    import psutil

    try:
        return bool(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def _kids(proc: Any) -> list[Any]:
    import psutil

    try:
        return list(proc.children(recursive=True))
    except psutil.Error:
        return []


@pytest.mark.slow
def test_ctrl_c_pressed_again_and_again_while_a_process_ignores_sigterm(tmp_path: Path) -> None:
    """Eight Ctrl-C presses over the seconds icount takes to stop a command that ignores
    SIGTERM: one line, exit 130, and nothing left running (each press after the first
    used to print a traceback; six or more left the processes running)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import psutil

    if __import__("shutil").which("valgrind") is None:
        pytest.skip("valgrind is not installed (scripts/setup.sh installs it)")
    marker = str(3600 + os.getpid() % 1000)  # `sleep MARKER` names this test's processes
    proc = subprocess.Popen(
        [sys.executable, "-m", "icount", "run", "--backend", "callgrind",
         "-o", str(tmp_path / "r.json"), "--", "sh", "-c", f"trap '' TERM; sleep {marker}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip

    def ours() -> list[Any]:
        return [
            p
            for p in psutil.process_iter(["cmdline", "status"])
            if any(marker in a for a in p.info["cmdline"] or [])
            and p.info["status"] != psutil.STATUS_ZOMBIE
            and p.pid != os.getpid()
        ]

    deadline = time.monotonic() + 60
    while not any("valgrind" in " ".join(p.info["cmdline"]) for p in ours()):
        assert time.monotonic() < deadline and proc.poll() is None, "the command never started"
        time.sleep(0.1)
    time.sleep(1.0)  # the shell has set its trap and started sleep
    for _ in range(8):
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
    _out, err = proc.communicate(timeout=60)
    left = ours()
    for p in left:
        p.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.count("interrupted") == 1, err
    assert not left, left


def test_table_of_several_files_keeps_each_files_order(icount: Icount, tmp_path: Path) -> None:
    """Rows as each file holds them, file after file: z, a (as the first run was given),
    then m; --sort name sorts them."""

    def cell(name: str, order: int) -> dict[str, Any]:
        run = {"value": 10, "valid": True, "reason": None, "detail": None}
        return {"name": name, "path": "", "backend": "callgrind", "unit": "instructions",
                "runs_wanted": 1, "max_spread": 0.01, "runs": [run], "order": order}  # fmt: skip

    for name, cells in (("one.json", [cell("a", 1), cell("z", 0)]), ("two.json", [cell("m", 0)])):
        doc = {"format": "icount-results", "version": 2, "fingerprint": {}, "cells": cells}
        (tmp_path / name).write_text(json.dumps(doc))
    for sort, rows in (("order", ["z", "a", "m"]), ("name", ["a", "m", "z"])):
        done = icount("table", "one.json", "two.json", "-f", "csv", "--sort", sort, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert [line.split(",")[0] for line in done.stdout.splitlines()[1:]] == rows
    bad = icount("table", "one.json", "--sort", "size", cwd=tmp_path)
    assert bad.returncode == 2 and "use --sort order|name" in bad.stderr


def test_version(icount: Icount) -> None:
    import tomllib

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    version = tomllib.loads(pyproject.read_text())["project"]["version"]
    done = icount("--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"icount {version}\n", "")
    assert "--version" in icount("--help").stdout


def test_an_error_naming_a_cell_stays_one_line_and_escapes_its_controls(
    icount: Icount, tmp_path: Path
) -> None:
    """A cell name holding a newline forged a second `icount:` line; an ESC sequence
    reached the terminal. The path is named as the file, not the way to it."""
    doc = json.loads((Path(__file__).parents[2] / "fixtures/compare/loop-base.json").read_text())
    cell = doc["cells"][0]
    cell["name"] = "x\nicount: all good \x1b[2J"
    doc["cells"] = [cell, cell]
    (tmp_path / "sub").mkdir()
    (tmp_path / "dup.json").write_text(json.dumps(doc))
    done = icount("table", "sub/../dup.json", cwd=tmp_path)
    assert done.returncode == 6
    assert done.stderr == (
        "icount: error: dup.json: cell x\\nicount: all good \\x1b[2J/callgrind appears twice\n"
    )


def _numeric_options() -> list[tuple[str, str, str]]:
    """(command, flag, 'int' or 'float') of every int and float option of every command."""
    out = []
    for name in COMMANDS:
        for p in build_command(name).params:
            kind = getattr(getattr(p, "type_descriptor", None), "annotation", None)
            options = getattr(kind, "__args__", (kind,))
            number = next((k for k in options if k in (int, float)), None)
            if number is not None and p.opts and p.opts[0].startswith("--"):
                out.append((name, max(p.opts, key=len), number.__name__))
    return out


NUMERIC = _numeric_options()
NOT_NUMBERS = ["\u0663", "\uff15", "1_0", "nan", "inf", "-inf", "0x3", "1e999", "", "3 4"]


def test_every_command_has_its_numeric_options_found() -> None:
    flags = {(c, f) for c, f, _ in NUMERIC}
    assert {("run", "--runs"), ("compare", "--min-delta"), ("inline", "--timeout")} <= flags


@pytest.mark.parametrize(("command", "flag", "kind"), NUMERIC)
def test_every_numeric_option_takes_ascii_finite_numbers_only(
    command: str, flag: str, kind: str
) -> None:
    """Unicode digits, underscores, NaN and infinities were taken by every numeric
    option (pydantic's int() and float()); each is one usage error naming the flag."""
    from typer._click.exceptions import BadParameter

    cmd = build_command(command)
    for text in NOT_NUMBERS:
        with pytest.raises(BadParameter) as info:
            cmd.main([flag, text, "x"], standalone_mode=False)
        message = info.value.format_message()
        assert f"'{flag}'" in message and "ASCII digits" in message, message


@pytest.mark.parametrize(
    ("flag", "args"),
    [
        ("--timeout", ["inline", "--timeout", "0", "a", "b"]),
        ("--timeout", ["inline", "--timeout", "nan", "a", "b"]),
        ("--timeout", ["compare", "--interleave", "--timeout", "-1"]),
        ("--min-delta", ["compare", "--min-delta", "inf", "a.json", "b.json"]),
        ("--shard", ["run", "--shard", "\u0661/\u0662", "--", "true"]),
        ("--max-spread", ["run", "--max-spread", "\uff15", "--", "true"]),
    ],
)
def test_the_option_edges_the_red_team_found_are_usage_errors(
    icount: Icount, tmp_path: Path, flag: str, args: list[str]
) -> None:
    done = icount(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("icount: error: ") and done.stderr.count("\n") == 1
    assert flag in done.stderr


WIDTHS = [(c, f) for c, f, _ in NUMERIC if f == "--width"]


@pytest.mark.parametrize(("command", "flag"), WIDTHS)
def test_a_width_no_table_fits_in_is_refused(command: str, flag: str) -> None:
    """`--width 0` or a negative width printed an empty table with exit 0."""
    from typer._click.exceptions import BadParameter

    assert len(WIDTHS) >= 5
    for text in ("0", "-5", "19"):
        with pytest.raises(BadParameter, match="must be at least"):
            build_command(command).main([flag, text, "x"], standalone_mode=False)


@pytest.mark.parametrize("text", ["\u0663", "\uff15", "1_0", "\u0661-\u0662"])
def test_numbers_inside_text_options_are_ascii_digits_only(text: str) -> None:
    """--warmup, --allow-exit and the CPU lists are text options that hold numbers;
    each read them with int(), which takes Unicode digits and underscores."""
    from icount.cli.options import parse_exit_codes
    from icount.cpus import parse_cpu_list
    from icount.errors import UsageError
    from icount.session.options import Warmup

    with pytest.raises(UsageError, match="--warmup takes a request count"):
        Warmup.parse(text)
    with pytest.raises(UsageError, match="--allow-exit takes codes like 0,1"):
        parse_exit_codes(f"0,{text}")
    with pytest.raises(UsageError, match="--server-cpus takes CPU numbers"):
        parse_cpu_list(text, "--server-cpus")


def test_numbers_inside_text_options_still_read_ascii_digits() -> None:
    from icount.cli.options import parse_exit_codes
    from icount.cpus import parse_cpu_list
    from icount.session.options import Warmup

    assert Warmup.parse(" 20 ") == Warmup(20)
    assert parse_exit_codes("1, 3") == frozenset({0, 1, 3})
    assert parse_cpu_list("0-2, 5", "--load-cpus") == (0, 1, 2, 5)


def test_compare_help_leaves_the_interleaves_options_to_its_help(icount: Icount) -> None:
    """compare --help names `icount interleave --help`, which lists serve's measuring
    options; compare --interleave still takes them with --base-target."""
    text = icount("compare", "--help").stdout
    assert "icount interleave --help" in text
    assert "--requests" in icount("interleave", "--help").stdout
    assert not any(line.lstrip().startswith("--requests") for line in text.splitlines())
    taken = icount("compare", "--interleave", "--base-target", "a", "--new-target", "b",
                   "--requests", "0")  # fmt: skip
    assert taken.returncode == 2 and "'--requests': must be at least 1" in taken.stderr
