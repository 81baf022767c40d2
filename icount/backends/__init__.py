"""Counting backends: callgrind (exact, slow, everywhere) and perf stat (fast, needs a PMU).

Each backend is one module implementing `protocol.Backend`; `REGISTRY` names them, in
the order `--backend auto` prefers them. `choose()` resolves `--backend NAME|auto` to
one registered name and says why; `create()` builds the backend with this invocation's
options.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from icount.backends.protocol import ArgvKind, Backend, BackendOptions, Counted, Probe
from icount.errors import ToolMissingError, UsageError

__all__ = ["REGISTRY", "Backend", "BackendOptions", "Choice", "Counted", "Probe", "choose"]

# name -> module defining `create(options) -> Backend` and `probe() -> Probe`.
# Order matters: `auto` takes the first whose probe says it counts here.
REGISTRY: dict[str, str] = {
    "perf": "icount.backends.perf",
    "callgrind": "icount.backends.callgrind",
}


def names() -> tuple[str, ...]:
    return ("auto", *REGISTRY)


def _module(name: str) -> Any:
    if name not in REGISTRY:
        raise UsageError(f"unknown backend {name!r}", hint=f"use --backend {'|'.join(names())}")
    return importlib.import_module(REGISTRY[name])


def probe(name: str) -> Probe:
    probe_fn: Callable[[], Probe] = _module(name).probe
    return probe_fn()


def create(name: str, options: BackendOptions | None = None) -> Backend:
    """The backend `name`, configured; UsageError for an option it does not support."""
    backend: Backend = _module(name).create(options or BackendOptions())
    return backend


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


def fingerprint(backend: Backend, kind: ArgvKind) -> dict[str, Any]:
    """What moves counts here, with this backend's version and arguments for `kind`."""
    from icount import environment

    return environment.fingerprint(backend.name, backend.version(), backend.fingerprint_argv(kind))
