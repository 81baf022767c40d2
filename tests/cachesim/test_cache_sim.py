"""--cache-sim: callgrind's cache simulation and the estimated cycles beside the count."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from icount import cache_sim
from icount.errors import ParseError
from tests.conftest import Icount

PROFILE = """version: 1
creator: callgrind-3.19.0
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
fn=main
1 1000 300 200 10 20 5 4 6 1
totals: 1000 300 200 10 20 5 4 6 1
"""

LOOP_C = r"""
#include <stdlib.h>
#include <string.h>
char *volatile kept;
int main(void) {
    size_t n = 4 << 20;
    kept = malloc(n);
    for (int pass = 0; pass < 2; pass++) memset(kept, pass, n);
    return 0;
}
"""


def test_the_estimate_is_l1_hits_plus_5_ll_hits_plus_35_ram(tmp_path: Path) -> None:
    (tmp_path / "cachesim.out.1").write_text(PROFILE)
    events = cache_sim.read_events(tmp_path / "cachesim.out.1")
    assert events["Ir"] == 1000 and events["DLmw"] == 1
    ram = 4 + 6 + 1
    ll_hits = 10 + 20 + 5 - ram
    l1_hits = 1000 + 300 + 200 - ll_hits - ram
    assert cache_sim.estimate(events) == l1_hits + 5 * ll_hits + 35 * ram == 1970


def test_a_profile_without_simulated_caches_is_refused(tmp_path: Path) -> None:
    (tmp_path / "p").write_text("events: Ir\ntotals: 5\n")
    with pytest.raises(ParseError, match="no Dr, Dw, I1mr"):
        cache_sim.read_events(tmp_path / "p")


@pytest.mark.slow
def test_run_shows_the_estimate_beside_the_exact_count(
    icount: Icount, tmp_path: Path, need_valgrind: None
) -> None:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed (scripts/setup.sh installs it)")
    (tmp_path / "loop.c").write_text(LOOP_C)
    subprocess.run(["gcc", "-O2", "-o", str(tmp_path / "loop"), str(tmp_path / "loop.c")],
                   check=True)  # fmt: skip
    done = icount("run", "-q", "--cache-sim", "--backend", "callgrind", "--runs", "2",
                  "-o", "r.json", "--", str(tmp_path / "loop"), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    cell = json.loads((tmp_path / "r.json").read_text())["cells"][0]
    sim = cell["extra"]["cache_sim"]
    assert sim["events"]["Ir"] == cell["median"]  # the simulated run executes the same
    # 8 MiB written through caches smaller than that: misses to RAM, each 35 cycles
    assert sim["events"]["DLmw"] > 0
    assert cache_sim.estimate(sim["events"]) > cell["median"]
    assert sim["wall_s"] > 0 and sim["counted_wall_s"] > 0
    assert "est. cycles" in done.stdout
    assert "x a counted run's" in done.stdout
