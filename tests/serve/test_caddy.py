"""Debian's caddy (Go, stripped: its functions only in `.gopclntab`) served under
callgrind: its profile's addresses are named from the table, so Go's runtime is
detected, and the cell's runtime figures name it with the collector and the scheduler
counted apart from the mutator."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from icount.size.gopclntab import go_functions
from tests.serve.conftest import cells, leftovers, run_icount

pytestmark = pytest.mark.slow


def test_stripped_caddy_is_detected_as_go_and_split(need_valgrind: None, tmp_path: Path) -> None:
    caddy = shutil.which("caddy")
    if caddy is None:
        pytest.skip("caddy is not installed (scripts/setup.sh installs Debian's)")
    table = go_functions(caddy)
    assert table is not None  # a Go binary: the table it keeps when stripped
    out = tmp_path / "caddy.json"
    done = run_icount(
        ["serve", "--cmd", "caddy respond --listen 127.0.0.1:{port} --body hello",
         "--name", "caddy", "--env", "GODEBUG=asyncpreemptoff=1", "--expect-body", "hello",
         "--backend", "callgrind", "--runs", "1", "--reps", "2", "--requests", "300",
         "--warmup", "50", "-o", str(out), "-q"],
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout
    cell = cells(out)[("caddy", "root")]
    work = cell["runtime_work"]
    assert work["runtime"] == "go"
    assert work["mutator"] > 0 and work["collector"] > 0 and work["scheduler"] > 0
    # the mutator is the cell's figure, the collector and the scheduler beside it
    assert work["mutator"] == pytest.approx(cell["median"])
    names = [f[0] for f in cell["profile"]["functions"]]
    assert not any(n.startswith("0x") for n in names)
    assert "runtime.mallocgc" in names
    assert not leftovers(str(tmp_path))
