"""The protocols are split by what a backend counts and narrowed to what callers use:
every member of each is read outside the backends on something typed as that protocol,
every bundled backend counts both, and the native memory runs' server implements only
what a server that nothing counts can."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from icount import backends
from icount.backends import protocol
from icount.serve import native

ROOT = Path(__file__).resolve().parents[2] / "icount"
# what implements the protocols, not what calls them
IMPLEMENTERS = re.compile(r"backends/(callgrind|perf|protocol|valgrind)\w*\.py|serve/native\.py")


def _members(cls: type) -> list[str]:
    return [n for n in vars(cls) if not n.startswith("_")]


PROTOCOLS = (
    protocol.ServerProcess,
    protocol.Server,
    protocol.ServerStarter,
    protocol.CountingBackend,
    protocol.CommandBackend,
    protocol.ServerBackend,
    protocol.Backend,
)


def _protocols_named(annotation: ast.expr | None, known: dict[str, type]) -> set[type]:
    """The protocols an annotation types a name as: `Server`, `Server | None`,
    `ServerStarter[S]` (a ServerStarter, whatever it starts), "Server", a TypeVar bound
    to one."""
    if isinstance(annotation, ast.Name):
        return {known[annotation.id]} if annotation.id in known else set()
    if isinstance(annotation, ast.Subscript):
        return _protocols_named(annotation.value, known)
    if isinstance(annotation, ast.BinOp):
        return _protocols_named(annotation.left, known) | _protocols_named(annotation.right, known)
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return _protocols_named(ast.parse(annotation.value, mode="eval").body, known)
    return set()


def read_members(sources: list[str]) -> set[tuple[type, str]]:
    """(protocol, member) for every attribute read `R.member` whose receiver R (a name,
    or an attribute's last name) is annotated somewhere in `sources` (a parameter, a
    variable, a dataclass field) as that protocol or one built on it: a member read on
    something else (`serve_defaults.instrumented`) is not a use."""
    trees = [ast.parse(s) for s in sources]
    known: dict[str, type] = {cls.__name__: cls for cls in PROTOCOLS}
    for node in (n for tree in trees for n in ast.walk(tree)):
        if isinstance(node, ast.Assign) and getattr(node.value, "func", None) is not None:
            bound = [k.value for k in getattr(node.value, "keywords", []) if k.arg == "bound"]
            for cls in _protocols_named(bound[0], known) if bound else ():
                known |= {t.id: cls for t in node.targets if isinstance(t, ast.Name)}
    typed: dict[str, set[type]] = {}
    for node in (n for tree in trees for n in ast.walk(tree)):
        if isinstance(node, ast.arg):
            typed.setdefault(node.arg, set()).update(_protocols_named(node.annotation, known))
        elif isinstance(node, ast.AnnAssign):
            target = node.target
            name = getattr(target, "id", None) or getattr(target, "attr", None)
            if name is not None:
                typed.setdefault(name, set()).update(_protocols_named(node.annotation, known))
    used: set[tuple[type, str]] = set()
    for node in (n for tree in trees for n in ast.walk(tree)):
        if isinstance(node, ast.Attribute):
            receiver = getattr(node.value, "id", None) or getattr(node.value, "attr", None)
            for cls in typed.get(str(receiver), ()):
                used |= {(base, node.attr) for base in cls.__mro__}
    return used


@functools.cache
def _read_by_callers() -> set[tuple[type, str]]:
    files = [p for p in ROOT.rglob("*.py") if not IMPLEMENTERS.search(p.as_posix())]
    return read_members([p.read_text() for p in sorted(files)])


@pytest.mark.parametrize("cls", PROTOCOLS[:-1])
def test_every_member_is_read_by_a_caller_on_that_protocol(cls: type) -> None:
    used = _read_by_callers()
    unused = [m for m in _members(cls) if (cls, m) not in used]
    assert _members(cls) and unused == []


def test_a_member_read_on_something_else_is_no_use() -> None:
    """The check fails where a member is read only on another type's value (as
    `instrumented` was, on ServeDefaults, while no caller read a backend's)."""
    code = """
from icount.backends.protocol import CommandBackend, ServerProcess
S = TypeVar("S", bound=ServerProcess)
class Options:
    backend: "CommandBackend | None"
def run(opts: Options, defaults: ServeDefaults, server: S) -> None:
    opts.backend.count_command()
    defaults.instrumented
    server.alive()
"""
    used = read_members([code])
    assert (protocol.CommandBackend, "count_command") in used
    assert (protocol.CountingBackend, "instrumented") not in used
    assert (protocol.ServerProcess, "alive") in used
    assert (protocol.ServerProcess, "stop") not in used


def test_every_registered_backend_counts_commands_and_servers() -> None:
    for name in backends.REGISTRY:
        built = backends.create(name)
        assert isinstance(built, protocol.Backend)
        assert backends.command_backend(name).name == backends.server_backend(name).name == name


def test_the_native_runs_implement_no_counting() -> None:
    counted = {*_members(protocol.Server), *_members(protocol.CountingBackend)}
    assert counted.isdisjoint(vars(native.NativeServer))
    assert counted.isdisjoint(vars(native.NativeStarter))
    for member in _members(protocol.ServerProcess):
        assert hasattr(native.NativeServer, member) or member in ("pid", "run_dir")
    for member in _members(protocol.ServerStarter):
        assert hasattr(native.NativeStarter, member)


def test_a_backend_that_counts_commands_only_is_refused_where_servers_are_counted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from icount import measure_command
    from icount.errors import UsageError

    monkeypatch.setitem(backends.REGISTRY, "commands-only", "tests.backends.commands_only_backend")
    backend = backends.command_backend("commands-only")
    spec = measure_command.CommandSpec("three", ("prog", "a", "b"))
    opts = measure_command.RunOptions(backend=backend, runs=1, cwd=tmp_path)
    done = measure_command.measure([spec], opts, tmp_path / "artifacts")
    assert [c.summary and c.summary.median for c in done.cells] == [3.0]
    with pytest.raises(UsageError, match=r"^the commands-only backend does not count servers "):
        backends.server_backend("commands-only")
    with pytest.raises(UsageError, match="does not count both commands and servers"):
        backends.create("commands-only")


def test_a_backend_that_lacks_a_member_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A backend written to the docs before `instrumented` was a member: the refusal says
    what it lacks, not only what it does not count."""
    from icount.errors import UsageError
    from tests.backends import commands_only_backend

    monkeypatch.setitem(backends.REGISTRY, "commands-only", "tests.backends.commands_only_backend")
    monkeypatch.delattr(commands_only_backend.CommandsOnly, "instrumented")
    with pytest.raises(UsageError, match=r"does not count commands \(it lacks instrumented\)$"):
        backends.command_backend("commands-only")
    with pytest.raises(UsageError, match=r"servers \(it lacks cell_params, instruction_floor, "):
        backends.server_backend("commands-only")
