"""Option values converted without typer's pydantic adapters, where that is exact.

typer 0.2x converts every parameter through a pydantic TypeAdapter: importing pydantic
and building the adapters costs ~0.1 s per run, as much as the whole of `icount size`
on a small file. Plain values (file paths, choices, decimal integers, flags) are
converted here with typer's own helpers; anything else goes through typer's path, so
values and error messages stay typer's (tests/size/test_cli_args.py compares them).
Numbers are the exception: every int and float option is read by icount.numparse
(ASCII digits, finite, within the option's min and max), which pydantic is not.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin

import typer.core


class PlainCommand(typer.core.TyperCommand):
    """A command whose arguments are converted without pydantic where that is exact
    (`icount size`: file paths, choices, decimal integers). typer versions without
    that machinery are left alone."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        convert_without_pydantic(self.params)

    def get_help_option(self, ctx: Any) -> Any:
        # made on first use; its value is None unless --help is given
        option = super().get_help_option(ctx)
        if option is not None:
            convert_without_pydantic([option])
        return option


_UNSURE = object()


def convert_without_pydantic(params: list[Any]) -> None:
    """Give each typer parameter a converter that needs no pydantic for plain values."""
    try:
        from typer._click.exceptions import BadParameter
        from typer._coercion import RuntimeParam, build_runtime_param
        from typer._param_types import coerce_cli_choice, coerce_cli_path
    except ImportError:  # a typer that converts with click's types: nothing to avoid
        return

    def leaf(kind: Any, value: Any, info: Any, param: Any, ctx: Any) -> Any:
        """What typer's adapter for `kind` makes of `value`, or _UNSURE."""
        if kind is bool or kind is str:
            return value if type(value) is kind else _UNSURE
        if kind is int or kind is float:
            if type(value) is kind:  # a default
                return value
            if isinstance(value, str):
                return number(kind, value, info, param, ctx)
            return _UNSURE
        if isinstance(kind, type) and issubclass(kind, Enum):
            try:  # what typer's choice adapter calls, minus the pydantic wrapper
                choices = list(kind)
                return coerce_cli_choice(
                    value, choices=choices, case_sensitive=info.case_sensitive, ctx=ctx
                )
            except ValueError:
                return _UNSURE
        if kind is Path and isinstance(value, str) and value:
            # typer's own checks (existence flags, readability), given a Path so that
            # it needs no pydantic to make one
            return coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)
        return _UNSURE

    def number(kind: type, value: str, info: Any, param: Any, ctx: Any) -> int | float:
        """icount's checked parser (ASCII digits, finite), and the option's min and max:
        pydantic takes '1_0', 'nan' and 'inf' for numbers."""
        from icount.numparse import NumberError, parse_float, parse_int

        flag = max(getattr(param, "opts", None) or [str(param.name)], key=len)
        try:
            if kind is int:
                return parse_int(value, flag, info.min, info.max)
            return parse_float(value, flag, info.min, info.max)
        except NumberError as e:
            raise BadParameter(e.message.removeprefix(f"{flag} "), ctx=ctx, param=param) from None

    class Plain(RuntimeParam):
        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            kind: Any = self.annotation
            info = self.parameter_info
            options = get_args(kind) if get_origin(kind) in (Union, UnionType) else ()
            if len(options) == 2 and type(None) in options and value is not None:
                # `Path | None` given a value: the value's type is the other one
                kind = next(a for a in options if a is not type(None))
            if get_origin(kind) is list and isinstance(value, list | tuple):
                (item,) = get_args(kind)
                out = [leaf(item, v, info, param, ctx) for v in value]
                if not any(x is _UNSURE for x in out):
                    return out
            else:
                one = leaf(kind, value, info, param, ctx)
                if one is not _UNSURE:
                    return one
            slow = build_runtime_param(param.type_descriptor)
            return slow._coerce_value(value, param=param, ctx=ctx)

    for p in params:
        desc = getattr(p, "type_descriptor", None)
        if getattr(p, "_runtime_param", True) is None and desc is not None:
            try:
                p._runtime_param = Plain(
                    parameter_info=desc.parameter_info, annotation=desc.annotation
                )
            except (TypeError, AttributeError):  # typer's private API moved: use typer's path
                return
