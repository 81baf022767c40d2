"""docs/ci.md's history recipes, checked without running them (the runs are the slow
tests of tests/docs/test_ci_history.py): both YAML blocks parse, and every icount
command they run exists, with every flag they give it in that command's --help."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from typing import Any

import typer
from typer.testing import CliRunner

from icount.cli import app
from icount.cli.cmd_history import ACTIONS
from tests.docs.test_ci_history import recipes


def _scripts(node: Any) -> Iterator[str]:
    """Every shell text of a workflow or pipeline: GitHub's `run`, GitLab's scripts."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("run", "script", "before_script") and isinstance(value, (str, list)):
                yield from [value] if isinstance(value, str) else map(str, value)
            else:
                yield from _scripts(value)
    elif isinstance(node, list):
        for item in node:
            yield from _scripts(item)


def icount_calls() -> list[list[str]]:
    """`icount ARGS` of each shell line, up to `||` (continued lines joined)."""
    calls = []
    for text in (t for recipe in recipes() for t in _scripts(recipe)):
        for line in text.replace("\\\n", " ").splitlines():
            found = re.search(r"(?:^|[\s;&])icount (.*)", line)
            if found:
                calls.append(shlex.split(found.group(1).split("||")[0]))
    return calls


def _command(args: list[str]) -> tuple[list[str], Any, list[str]]:
    """(the command's words, its click command, the arguments after them)."""
    group = typer.main.get_command(app)
    ctx = group.context_class(group)
    words: list[str] = []
    command: Any = group
    while hasattr(command, "get_command") and args and not args[0].startswith("-"):
        sub = command.get_command(ctx, args[0])
        assert sub is not None, f"docs/ci.md runs `icount {' '.join([*words, args[0]])}`"
        words.append(args.pop(0))
        command = sub
    return words, command, args


def test_every_icount_command_and_flag_of_the_recipes_exists() -> None:
    calls = icount_calls()
    named = {" ".join(_command(list(c))[0]) for c in calls}
    assert {"run", "compare", "history"} <= named, named
    runner = CliRunner()
    for call in calls:
        words, command, args = _command(list(call))
        if words == ["history"]:
            assert args[0] in ACTIONS, f"icount history {args[0]}"
        shown = runner.invoke(app, [*words, "--help"])
        assert shown.exit_code == 0, shown.output
        options = {o: p for p in command.params for o in [*p.opts, *p.secondary_opts]}
        for flag in (a.split("=")[0] for a in args if a.startswith("-")):
            assert flag in options and flag in shown.output, f"icount {' '.join(words)} {flag}"
