"""A served path's profile under callgrind (c-epoll, costs known by construction): two
builds that differ only in one named function's cost per request, and compare names
that function first with its per-request delta exact, the rest unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import AdapterMaker, run_icount

K = 1000  # periodic_work's loop iterations a request in the base (2 instructions each)
FAST = ["--runs", "1", "--reps", "2", "--requests", "200", "--warmup", "50", "--backend",
        "callgrind", "--idle-seconds", "0", "-q"]  # fmt: skip


@pytest.mark.slow
def test_compare_names_the_function_whose_cost_per_request_changed(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    files = []
    for side, loop in (("base", K), ("new", 2 * K)):
        # the same adapter name: the two cells compare as one
        target = make_adapter("every", "--every", "1", "--every-loop", str(loop))
        out = tmp_path / f"{side}.json"
        done = run_icount(["serve", str(target), *FAST, "-o", str(out)], tmp_path)
        assert done.returncode == 0, done.stderr
        files.append(out)
    (cell,) = json.loads(files[0].read_text())["cells"]
    profile = cell["profile"]
    assert profile["per"] == "request" and profile["windows"] == 2
    # every request runs periodic_work once
    by_name = {f[0]: f for f in profile["functions"]}
    assert by_name["periodic_work"][3] == 1.0
    assert by_name["periodic_work"][2] >= 2 * K
    done = run_icount(["compare", *map(str, files), "-f", "json"], tmp_path)
    assert done.returncode == 3, done.stderr
    (row,) = json.loads(done.stdout)["cells"]
    first, *rest = row["explained"]["functions"]
    assert first["function"] == "periodic_work"
    assert first["delta"] == 2 * K and first["base"] + 2 * K == first["new"]
    # the server's own work per request repeats to the instruction between builds
    assert all(abs(m["delta"]) < 1 for m in rest), rest
