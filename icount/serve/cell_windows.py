"""What a serve cell's runs measured, gathered for its cell: the runs' figures, every
counted window with its functions (for the spread explanation and the notes), the valid
runs' window profiles (the cell's profile), what the runs said of the server's
connections, and the request they sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from icount.results import Run
from icount.results.cell_profile import PER_REQUEST, PER_RUN, CellProfile, cell_profile
from icount.results.details import WINDOW_DUMPS, RequestIdentity, ServeDetail
from icount.serve import spread
from icount.serve.runs import RunOutcome
from icount.window_profile import WindowProfile


@dataclass(frozen=True)
class Gathered:
    runs: tuple[Run, ...]
    windows: tuple[spread.Window, ...]  # every rep that kept its functions, runs in order
    profile: CellProfile | None
    notes: tuple[str, ...]  # what the runs said (serve/connections.py), each once
    connection: str | None  # "close" where a run's requests each had their own connection
    request: RequestIdentity | None  # the request the first run that recorded one sent


def gather(outcomes: Sequence[RunOutcome], cold_start: bool) -> Gathered:
    """The cell's share of its runs' outcomes (`cold_start`: one figure per run, so its
    profile is per run, not per request)."""
    runs = tuple(Run(o.value, o.reason is None, o.reason, o.detail) for o in outcomes)
    details = [r.detail for r in runs if isinstance(r.detail, ServeDetail)]
    windows: list[spread.Window] = []
    profiled: list[tuple[WindowProfile, int]] = []  # valid runs' windows, with their requests
    notes: list[str] = []
    for i, o in enumerate(outcomes):
        notes += [line for line in o.notes if line not in notes]
        if o.detail is None:
            continue
        pairs = list(zip(o.detail.reps, o.functions, strict=False))
        if o.reason is None:
            profiled += [(f, rep.requests) for rep, f in pairs if isinstance(f, WindowProfile)]
        windows += [
            # the figure the run's median takes: the mutator, for a collected runtime
            spread.Window(f"run {i + 1} rep {j + 1}", rep, functions, o.detail.mutator(rep))
            for j, (rep, functions) in enumerate(pairs)
            if functions is not None
        ]
    unsettled = unsettled_note(details)
    return Gathered(
        runs=runs,
        windows=tuple(windows),
        profile=cell_profile(profiled, PER_RUN if cold_start else PER_REQUEST),
        notes=(*notes, unsettled) if unsettled else tuple(notes),
        connection=next((o.connection for o in outcomes if o.connection), None),
        request=next((d.request for d in details if d.request), None),
    )


def unsettled_note(details: Sequence[ServeDetail]) -> str | None:
    """What the runs' window edges dumped inside the server's work mean, or None where
    every edge fell with the server idle. Such an edge splits what was in flight then
    between the window and what is outside it: a request a connection at most, or the
    work of a thread that never sleeps, which wall time drives alike in every window. The
    count stays a window's, off by up to that much, and the spread rule judges it."""
    reps = [r for d in details if d.window == WINDOW_DUMPS for r in d.reps]
    cut = [(r, edge) for r in reps for edge in r.unsettled]
    if not cut:
        return None
    # threads_idle's advice left out: the run may be closed already
    first = cut[0][1].split(" (measure it")[0].split(" (a thread that never sleeps")[0]
    return (
        f"{len(cut)} of {2 * len(reps)} window edges were dumped without the server seen "
        f"idle (first, {first}): such an edge falls inside the server's work, not between "
        "requests, and moves at most the requests in flight then, one a connection, "
        f"partly out of a window of {min(r.requests for r, _ in cut):,} requests or more; "
        "that alone leaves a window valid, its spread judged as any other's"
    )
