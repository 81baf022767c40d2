"""Counting backends: callgrind (exact, slow, everywhere) and perf stat (fast, needs a PMU).

Each backend is one module implementing what it counts (`protocol.CommandBackend`,
`protocol.ServerBackend`, or both: `protocol.Backend`) and registering itself as
`BACKEND` (a `protocol.Registration`: its settings, how to build it, its probe, its
doctor checks); `REGISTRY` names them, in the order `--backend auto` prefers them.
`choose()` resolves `--backend NAME|auto` to one registered name and says why;
`settings()` builds and checks, once, the chosen backend's settings (its registration's
frozen dataclass) from a command's options; `create()` (both counts),
`command_backend()` and `server_backend()` build the backend with them.
"""

from __future__ import annotations

import dataclasses
import importlib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from icount.backends.protocol import (
    ArgvKind,
    Backend,
    Check,
    CommandBackend,
    Counted,
    CountingBackend,
    Probe,
    Registration,
    ServerBackend,
)
from icount.errors import ToolMissingError, UsageError

__all__ = [
    "REGISTRY",
    "Backend",
    "Check",
    "Choice",
    "CommandBackend",
    "Counted",
    "Probe",
    "ServerBackend",
    "choose",
    "command_backend",
    "create",
    "server_backend",
    "settings",
]

# name -> module whose `BACKEND` is its `Registration`.
# Order matters: `auto` takes the first whose probe says it counts here.
REGISTRY: dict[str, str] = {
    "perf": "icount.backends.perf",
    "callgrind": "icount.backends.callgrind",
}


def names() -> tuple[str, ...]:
    return ("auto", *REGISTRY)


def registration(name: str) -> Registration[Any]:
    if name not in REGISTRY:
        raise UsageError(f"unknown backend {name!r}", hint=f"use --backend {'|'.join(names())}")
    found: Registration[Any] = importlib.import_module(REGISTRY[name]).BACKEND
    return found


def probe(name: str) -> Probe:
    return registration(name).probe()


def checks() -> list[Check]:
    """`icount doctor`'s lines for what every registered backend needs, in `auto`'s order."""
    return [check for name in REGISTRY for check in registration(name).checks()]


def settings(name: str, given: Mapping[str, object]) -> Any:
    """The settings of the backend `name`: its registration's options dataclass built
    from `given` (option name -> value, as a command parsed them), each value checked
    against its declared type (the dataclass's `__post_init__` checks the values), a
    list given for a `tuple[str, ...]` field taken as a tuple. A setting the backend
    does not take is refused (UsageError, naming the flag and the backends that take
    it) unless it holds those backends' default: a command passes every setting it has,
    given or not."""
    declared = registration(name).options
    fields = {f.name for f in dataclasses.fields(declared)}
    types_of = typing.get_type_hints(declared)
    taken: dict[str, object] = {}
    for key, value in given.items():
        if key in fields:
            _check_type(key, value, types_of[key])
            # a flag given once per value: typer parses a list, the settings hold a tuple
            taken[key] = tuple(value) if isinstance(value, list) else value
        else:
            _refuse_unless_default(name, key, tuple(value) if isinstance(value, list) else value)
    return declared(**taken)


def create(name: str, options: object = None) -> Backend:
    """The backend `name`, one that counts commands and servers (every bundled one),
    built with `options`: its registration's settings (`settings()`, or the dataclass
    itself), or None for its defaults."""
    built = _built(name, options)
    if not isinstance(built, Backend):
        raise _counts_no(name, "both commands and servers", built, Backend)
    return built


def command_backend(name: str, options: object = None) -> CommandBackend:
    """`create` for code that counts commands: refuses a backend that counts none."""
    built = _built(name, options)
    if not isinstance(built, CommandBackend):
        raise _counts_no(name, "commands", built, CommandBackend)
    return built


def server_backend(name: str, options: object = None) -> ServerBackend:
    """`create` for code that counts servers: refuses a backend that counts none."""
    built = _built(name, options)
    if not isinstance(built, ServerBackend):
        raise _counts_no(name, "servers", built, ServerBackend)
    return built


def _built(name: str, options: object) -> CountingBackend:
    found = registration(name)
    if options is None:
        options = found.options()
    elif not isinstance(options, found.options):
        raise TypeError(f"{type(options).__name__} are not the {name} backend's settings")
    return found.create(options)


def _counts_no(name: str, what: str, built: object, wanted: type) -> UsageError:
    """The refusal of a backend that is not a `wanted`, naming the members it lacks: a
    backend written to count commands that misses one (`instrumented`) is told which."""
    members = {
        n
        for base in wanted.__mro__
        if getattr(base, "_is_protocol", False)
        for n in (*vars(base), *getattr(base, "__annotations__", {}))
        if not n.startswith("_")
    }
    lacks = sorted(n for n in members if not hasattr(built, n))
    said = f" (it lacks {', '.join(lacks)})" if lacks else ""
    return UsageError(f"the {name} backend does not count {what}{said}")


def flag(key: str) -> str:
    """The command-line flag of a backend setting: `keep_profiles` is `--keep-profiles`."""
    return "--" + key.replace("_", "-")


def _refuse_unless_default(name: str, key: str, value: object) -> None:
    takers = {}
    for other in REGISTRY:
        declared = registration(other).options
        for f in dataclasses.fields(declared):
            if f.name == key:
                takers[other] = f.default
    if not takers:
        raise ValueError(f"no registered backend takes the setting {key!r}")
    if value in takers.values():
        return
    which = " or ".join(takers)
    raise UsageError(
        f"{flag(key)} needs the {which} backend, not {name}",
        hint=f"pass --backend {next(iter(takers))}",
    )


def _check_type(key: str, value: object, expected: Any) -> None:
    if not _fits(value, expected):
        choices = typing.get_args(expected) if typing.get_origin(expected) is typing.Literal else ()
        said = " or ".join(map(str, choices)) if choices else _type_name(expected)
        raise UsageError(f"{flag(key)} takes {said}, got {value!r}")


def _fits(value: object, expected: Any) -> bool:
    origin = typing.get_origin(expected)
    if origin is typing.Literal:
        return value in typing.get_args(expected)
    if origin is tuple:  # tuple[X, ...]: the values of a flag given once per value
        args = typing.get_args(expected)
        if len(args) != 2 or args[1] is not Ellipsis:
            raise TypeError(f"a backend setting's tuple is tuple[X, ...], not {expected}")
        return isinstance(value, (tuple, list)) and all(_fits(v, args[0]) for v in value)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arm) for arm in typing.get_args(expected))
    if expected is type(None):
        return value is None
    if expected is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, expected)


def _type_name(expected: Any) -> str:
    if typing.get_origin(expected) is tuple:
        return f"a list of {_type_name(typing.get_args(expected)[0])}"
    arms = typing.get_args(expected) or (expected,)
    return " or ".join("none" if a is type(None) else getattr(a, "__name__", str(a)) for a in arms)


@dataclass(frozen=True)
class Choice:
    backend: str  # a registered name
    why: str


def choose(requested: str) -> Choice:
    """Resolve `--backend`: a name must be usable here; `auto` takes the first usable."""
    if requested != "auto":
        found = probe(requested)
        if not found.usable:
            raise ToolMissingError(found.why, program=requested, hint=found.hint)
        return Choice(requested, f"asked for with --backend {requested}")
    refused: list[str] = []
    for name in REGISTRY:
        found = probe(name)
        if found.usable:  # say why the preferred ones were passed over, if any were
            return Choice(name, "; ".join(refused) or found.why)
        refused.append(found.why)
    raise ToolMissingError(
        "no backend can count here: " + "; ".join(refused),
        hint="run scripts/setup.sh or apt-get install valgrind",
    )


def fingerprint(backend: CountingBackend, kind: ArgvKind) -> dict[str, Any]:
    """What moves counts here, with this backend's version and arguments for `kind`."""
    from icount import environment

    # a backend whose programs see a CPU of its own (callgrind: valgrind's) names it
    guest = getattr(backend, "guest_cpu", None)
    return environment.fingerprint(
        backend.name,
        backend.version(),
        backend.fingerprint_argv(kind),
        guest() if guest is not None else None,
    )
