"""The protocols are split by what a backend counts and narrowed to what callers use: a
member of each is used outside the backends, every bundled backend counts both, and the
native memory runs' server implements only what a server that nothing counts can."""

from __future__ import annotations

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


def _callers() -> str:
    files = [p for p in ROOT.rglob("*.py") if not IMPLEMENTERS.search(p.as_posix())]
    return "\n".join(p.read_text() for p in files)


@pytest.mark.parametrize(
    "cls",
    [
        protocol.ServerProcess,
        protocol.Server,
        protocol.ServerStarter,
        protocol.CountingBackend,
        protocol.CommandBackend,
        protocol.ServerBackend,
    ],
)
def test_every_member_is_used_by_a_caller(cls: type) -> None:
    code = _callers()
    unused = [m for m in _members(cls) if not re.search(rf"\.{m}\b", code)]
    assert _members(cls) and unused == []


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
    with pytest.raises(UsageError, match=r"^the commands-only backend does not count servers$"):
        backends.server_backend("commands-only")
    with pytest.raises(UsageError, match="does not count both commands and servers"):
        backends.create("commands-only")
