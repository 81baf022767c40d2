"""`icount serve` with no target: every bundled target that can run here gives a valid
table, and those that cannot are named with the reason (README command 1, made small)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from icount.serve.adapter import bundled_adapter_paths, load_adapter, unavailable_reason

from .conftest import leftovers, run_icount

# One short run per cell keeps this to a few minutes. The spread rule is tested elsewhere:
# with 50 warm-up requests Node's JIT is still settling (runs differ by ~1.5%), which is
# why its adapter asks for 10,000 and README command 1 takes minutes. 500 requests a
# window, not fewer: nginx-workers' clock work during a window's edges (three processes
# dumped, each edge waiting for an idle server) is refused as uncertain once it passes
# half the spread limit of a window, which 200 requests did (0.74%).
SMALL = ["--runs", "1", "--reps", "2", "--requests", "500", "--warmup", "50"]


@pytest.mark.slow
def test_every_available_bundled_target_measures_valid(tmp_path: Path) -> None:
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed (scripts/setup.sh installs it)")
    adapters = [load_adapter(p) for p in bundled_adapter_paths()]
    # a target with `by_default = false` (jvm-http) is measured only when named
    runnable = sorted(a.name for a in adapters if unavailable_reason(a) is None and a.by_default)
    assert "c-epoll" in runnable, "gcc is part of the set-up; c-epoll must always run"
    # No -o, as in the README: the default file is relative to where icount runs.
    done = run_icount(["serve", *SMALL, "--backend", "callgrind", "-f", "csv"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "icount-results" / "serve-001.json"
    doc = json.loads(out.read_text())
    measured = sorted({c["name"] for c in doc["cells"]})
    assert measured == runnable
    for cell in doc["cells"]:
        assert cell["valid"], (cell["name"], cell["path"], cell["reason"])
        assert cell["median"] > 0
        assert cell["extra"].get("binary_bytes", 0) > 0
    medians = {(c["name"], c["path"]): c["median"] for c in doc["cells"]}
    if "nginx" in runnable:
        # master + 2 workers against one process: the same request path, plus what
        # EPOLLEXCLUSIVE wakeups and the idle worker's timers add (1-3% measured)
        for path in ("plaintext", "json"):
            one, workers = medians[("nginx", path)], medians[("nginx-workers", path)]
            assert abs(workers - one) / one < 0.05, (path, one, workers)
    for a in adapters:
        if a.name not in runnable:
            why = unavailable_reason(a) or f"measured only when named (icount serve {a.name})"
            assert f"{a.name}" in done.stderr and why in done.stderr
    assert leftovers(str(tmp_path)) == []
