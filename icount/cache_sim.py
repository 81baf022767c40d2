"""Estimated cycles, opt-in (`icount run --cache-sim`): callgrind's cache simulation.

Instructions are the figure icount gates on: exact, repeatable. Memory behaviour is not
in them, so a second figure estimates cycles the usual way from callgrind's simulated
caches (a first-level cache, and a last-level one of the host's geometry):

    RAM      = ILmr + DLmr + DLmw              (misses of the last level)
    LL hits  = I1mr + D1mr + D1mw - RAM        (first-level misses the last level served)
    L1 hits  = Ir + Dr + Dw - LL hits - RAM
    estimate = L1 hits + 5 x LL hits + 35 x RAM

It is a model (no out-of-order execution, no prefetcher), so it is shown beside the
count and never gated. The simulation costs several times the counted run: each cell
records both wall times, and the table states the ratio. Runs once per cell, after the
counted runs: the simulated caches are as deterministic as the instructions.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from icount import environment, numfmt, procs
from icount.backends.valgrind import require_valgrind, valgrind_options
from icount.errors import ParseError
from icount.results.extras import CACHE_EVENTS as EVENTS

KEY = "cache_sim"  # cell.extra[KEY]: {events: {name: count}, wall_s, counted_wall_s} or reason
LL_COST, RAM_COST = 5, 35
TITLE = "est. cycles"
CSV_COLUMN = "est_cycles"


def estimate(e: Mapping[str, int]) -> int:
    ram = e["ILmr"] + e["DLmr"] + e["DLmw"]
    ll_hits = e["I1mr"] + e["D1mr"] + e["D1mw"] - ram
    l1_hits = e["Ir"] + e["Dr"] + e["Dw"] - ll_hits - ram
    return l1_hits + LL_COST * ll_hits + RAM_COST * ram


def read_events(path: Path) -> dict[str, int]:
    """The totals of one callgrind profile by event name (its `events:` and `summary:`
    or `totals:` lines)."""
    names: list[str] = []
    totals: list[int] | None = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("events:"):
                names = line.split()[1:]
            elif line.startswith(("summary:", "totals:")):
                try:
                    totals = [int(v) for v in line.split()[1:]]
                except ValueError:
                    raise ParseError("a totals line that is not counts", source=str(path)) from None
    if not names or totals is None:
        raise ParseError("no events or totals: not a callgrind profile", source=str(path))
    found = dict(zip(names, totals + [0] * (len(names) - len(totals)), strict=True))
    missing = [e for e in EVENTS if e not in found]
    if missing:
        raise ParseError(f"no {', '.join(missing)}: not simulated", source=str(path))
    return {e: found[e] for e in EVENTS}


def simulate(
    argv: Sequence[str],
    env: Mapping[str, str],
    run_dir: Path,
    timeout: float | None,
    counted_wall_s: float,
) -> dict[str, Any]:
    """One run under callgrind --cache-sim=yes, every process summed, as the counted runs
    ran: the same environment, a fresh work dir, the program from its fixed path, ASLR
    off where permitted (it executes the very instructions counted)."""
    valgrind = require_valgrind()
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in run_dir.glob("cachesim.out.*"):
        stale.unlink()
    prefix, _ = environment.aslr_wrapper()
    opts = valgrind_options(
        run_dir / "cachesim.out.%p", run_dir / "valgrind.log.%p", trace_children=True
    )
    wd = environment.make_workdir()
    t0 = time.monotonic()
    try:
        done = procs.run(
            [
                *prefix,
                valgrind,
                *opts,
                "--cache-sim=yes",
                *environment.fixed_program(argv, wd),
            ],
            env=environment.clean_env(wd, env),
            cwd=wd,
            timeout=timeout,
            stdout=run_dir / "stdout",
            stderr=run_dir / "stderr",
        )
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    wall = round(time.monotonic() - t0, 3)
    if done.timed_out:
        return {"reason": f"the simulated run timed out after {timeout:g} s"}
    totals = dict.fromkeys(EVENTS, 0)
    try:
        for profile in sorted(run_dir.glob("cachesim.out.*")):
            for e, v in read_events(profile).items():
                totals[e] += v
            profile.unlink()
    except ParseError as err:
        return {"reason": f"the simulated run's profile: {err}"}
    if not totals["Ir"]:
        return {"reason": "the simulated run counted nothing"}
    return {"events": totals, "wall_s": wall, "counted_wall_s": round(counted_wall_s, 3)}


def text(cell: Any) -> str:
    doc = cell.extra.get(KEY)
    if not isinstance(doc, Mapping):
        return ""
    events = doc.get("events")
    return numfmt.si(estimate(events)) if isinstance(events, Mapping) else "-"


def csv_value(cell: Any) -> str:
    doc = cell.extra.get(KEY)
    events = doc.get("events") if isinstance(doc, Mapping) else None
    return str(estimate(events)) if isinstance(events, Mapping) else ""


def has_cache_sim(cells: Sequence[Any]) -> bool:
    return any(KEY in c.extra for c in cells)


def notes(cells: Sequence[Any]) -> list[str]:
    """What the estimate is, what the simulation cost, and why a cell has none."""
    out = [
        f"{TITLE}: L1 hits + {LL_COST} x LL hits + {RAM_COST} x RAM accesses from callgrind's "
        "cache simulation, one run; a model, never gated"
    ]
    for c in cells:
        doc = c.extra.get(KEY)
        if not isinstance(doc, Mapping):
            continue
        if doc.get("reason"):
            out.append(f"{c.key_text}: no {TITLE}: {doc['reason']}")
        elif doc.get("counted_wall_s"):
            ratio = float(doc["wall_s"]) / float(doc["counted_wall_s"])
            out.append(
                f"{c.key_text}: the simulated run took {float(doc['wall_s']):.2f} s, "
                f"{ratio:.1f}x a counted run's {float(doc['counted_wall_s']):.2f} s"
            )
    return out
