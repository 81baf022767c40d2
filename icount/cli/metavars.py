"""Placeholders in `--help` in the user's words (`TEXT`, `N`, `PATH`), not Python's types.

typer 0.29 writes a parameter's annotation as its placeholder (`--cmd <list[str]>`,
`--runs <int range>`), which reads as a leak of the implementation. A parameter that
names its own metavar keeps it; choices keep typer's `a|b|c`; flags take no value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args, get_origin

_WORDS: dict[type, str] = {str: "TEXT", int: "N", float: "NUMBER", Path: "PATH"}


def _word(annotation: Any) -> str | None:
    if get_origin(annotation) in (list, tuple):
        words = {_word(arg) for arg in get_args(annotation) if arg is not Ellipsis}
        return words.pop() if len(words) == 1 else None
    return _WORDS.get(annotation) if isinstance(annotation, type) else None


def _no_type(ctx: Any) -> None:
    return None


def name_placeholders(params: list[Any]) -> None:
    """Give each value-taking parameter without a metavar one in the user's words."""
    for param in params:
        if param.param_type_name == "argument":
            # an argument's row is its name then its type: the name alone says it
            param.metavar = param.metavar or (param.name or "ARG").upper()
            setattr(param, "display_type_rich", _no_type)  # noqa: B010
            continue
        if param.metavar is not None or getattr(param, "is_flag", False):
            continue
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or descriptor.is_choice:
            continue
        word = _word(descriptor.annotation)
        if word is not None:
            param.metavar = word
