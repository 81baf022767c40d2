"""A backend with one option is its module and its line in the registry: the toy
(tests/backends/toy_backend.py, counting `per_argument` instructions an argument, the
fake backend's servers) registered for the test's time runs under `icount run` and
`icount serve`, and its option is built and checked once, as its own dataclass, carried
to the backend and recorded in the fingerprint and a serve cell's params."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icount import backends, measure_command, results
from icount.errors import UsageError
from icount.measure_command import CommandSpec, RunOptions
from tests.serve.test_session import FAKE_ADAPTER
from tests.support import fake_backend
from tests.support.cli import run_icount_here

from .toy_backend import Toy, ToyOptions

SPECS = [CommandSpec(f"cmd{i}", ("prog",) + ("x",) * i) for i in (1, 2)]


@pytest.fixture(autouse=True)
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(backends.REGISTRY, "toy", "tests.backends.toy_backend")
    monkeypatch.setattr(fake_backend, "CONFIG", fake_backend.FakeConfig(cost=lambda i, p: 500.0))


def test_icount_run_and_serve_take_it_by_its_registry_line(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    done = run_icount_here(["run", "--backend", "toy", "-o", str(out), "-q", "--", "true", "a"])
    assert done.returncode == 0, done.stderr
    (cell,) = results.load(out).cells
    assert (cell.backend, cell.summary and cell.summary.median) == ("toy", 20.0)  # 2 x 10
    fingerprint = json.loads(out.read_text())["fingerprint"]
    assert "--per-argument=10" in json.dumps(fingerprint)

    (tmp_path / "web").mkdir()
    (tmp_path / "web" / "adapter.toml").write_text(FAKE_ADAPTER)
    out = tmp_path / "serve.json"
    fast = ["--runs", "1", "--reps", "1", "--requests", "20", "--warmup", "0"]
    args = ["serve", str(tmp_path / "web"), "--backend", "toy", *fast, "--idle-seconds", "0"]
    done = run_icount_here([*args, "-q", "-o", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    cells = results.load(out).cells
    assert [(c.backend, c.valid) for c in cells] == [("toy", True)] * 2
    assert {c.params["per_argument"] for c in cells} == {10}  # the toy's cell_params


def test_its_option_is_its_own_dataclass_from_the_command_to_the_count(tmp_path: Path) -> None:
    # built once, from every setting a command has (the others at their defaults)
    given = {"per_argument": 7, "keep_profiles": False, "profile_top": 20, "collector": []}
    settings = backends.settings("toy", given)
    assert settings == ToyOptions(per_argument=7)
    backend = backends.command_backend("toy", settings)
    assert isinstance(backend, Toy) and backend.options is settings
    done = measure_command.measure(SPECS, RunOptions(backend=backend, runs=1, cwd=tmp_path),
                                   tmp_path / "artifacts")  # fmt: skip
    assert [c.summary and c.summary.median for c in done.cells] == [14.0, 21.0]
    assert "--per-argument=7" in json.dumps(done.fingerprint)
    assert backends.server_backend("toy", settings).cell_params()["per_argument"] == 7


@pytest.mark.parametrize(
    ("name", "given", "message"),
    [
        ("toy", {"per_argument": "7"}, "--per-argument takes int, got '7'"),
        ("toy", {"per_argument": 0}, "--per-argument takes a count from 1, got 0"),
        ("callgrind", {"per_argument": 3}, "--per-argument needs the toy backend, not callgrind"),
        ("toy", {"thread": 2}, "--thread needs the callgrind backend, not toy"),
        ("toy", {"collector": ["gc_.*"]}, "--collector needs the callgrind backend, not toy"),
    ],
)
def test_its_option_is_checked_once_naming_the_flag(
    name: str, given: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageError) as e:
        backends.settings(name, given)
    assert e.value.message == message


def test_another_backends_settings_are_a_programming_error() -> None:
    with pytest.raises(TypeError, match="ToyOptions are not the callgrind backend's settings"):
        backends.create("callgrind", ToyOptions())
