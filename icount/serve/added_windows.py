"""Windows after a run's reps while a collected runtime's total would not be valid, within
the caps (--max-windows, --max-extra-seconds): serve/runs.py's docstring says why and how
they are judged; results/runtime.py projects how many the cell needs."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence

from icount.backends.protocol import Server
from icount.results.details import ServeDetail
from icount.results.runtime import SpanBound, span_bound, span_refused, windows_to_fit
from icount.serve import window as win
from icount.serve.cell_options import CellOptions
from icount.serve.loadgen import LoadGenerator
from icount.serve.server import Note
from icount.session.options import Arrival


def added_windows(
    server: Server,
    client: LoadGenerator,
    opts: CellOptions,
    detail: ServeDetail,
    earlier: Sequence[ServeDetail],
    took: Sequence[float],
    note: Note,
) -> tuple[ServeDetail, tuple[float, ...]]:
    """Windows after the reps while the cell's total would not be valid, within the caps
    (see the module's docstring): `detail` with them, and their client throughputs."""
    per_window = statistics.median(took) if took else 0.0
    spent = 0.0
    rps: list[float] = []
    cap: str | None = None
    windows_cap = f"--max-windows {opts.max_windows}"
    time_cap = f"--max-extra-seconds {opts.max_extra_seconds:g}"
    idle = opts.arrival == Arrival.IDLE
    first = _bound(earlier, detail, idle)
    while True:
        have = len(detail.reps)
        need = windows_to_fit(earlier, detail, opts.runs, opts.max_spread, 1.0, idle)
        if need is not None and need <= have:
            break
        if span_refused([*earlier, detail], idle):
            break  # the bound does not hold here: no window brings it in (its reason says)
        # The need read with half the spread measured: beyond the caps, none are taken. A
        # few windows' spread may overstate the cycle's; under the bound over spans the
        # spread is C, the largest collection seen, which more windows only raise, so
        # half of it is no hope there. Only where the runs' spans disagree is C grown by
        # their disagreement, which longer spans may see as one cycle: half of that is
        # hoped for while the collection seen does not grow with the span (by more than
        # a tenth since the run began adding: then the collections are not seen whole).
        bound = _bound(earlier, detail, idle)
        grown = (
            first is not None and bound is not None and bound.collection > 1.1 * first.collection
        )
        hopeful = bound is None or (bound.refused is not None and not grown)
        hope = windows_to_fit(
            earlier, detail, opts.runs, opts.max_spread, 0.5 if hopeful else 1.0, idle
        )
        if have >= opts.max_windows or hope is None or hope > opts.max_windows:
            cap = windows_cap
            break
        if spent + per_window > opts.max_extra_seconds or (
            spent + (hope - have) * per_window > opts.max_extra_seconds
        ):
            cap = time_cap
            break
        n = have + 1
        note(f"rep {n}/{opts.max_windows} (added: the runtime's interval needs "
             f"{_about(need)} windows a run): {opts.requests} requests")  # fmt: skip
        t0 = win.CLOCK()
        rep, result, _, _, prepared = win.count_window(
            server, client, opts.requests, f"rep {n}", opts.backend.instruction_floor
        )
        spent += win.CLOCK() - t0 - prepared
        if not detail.clock_subtracted:
            rep = dataclasses.replace(rep, seconds=None)
        rps.append(round(result.rps, 1))
        detail = dataclasses.replace(
            detail, reps=(*detail.reps, rep), added_windows=detail.added_windows + 1
        )
        per_window = spent / detail.added_windows  # the added windows' own pace from now
    if cap is not None:
        note(f"windows added for the runtime's interval stopped at {cap} (it needs "
             f"{_about(need)} windows a run)")  # fmt: skip
        detail = dataclasses.replace(detail, window_cap=cap)
    return detail, tuple(rps)


def _bound(earlier: Sequence[ServeDetail], detail: ServeDetail, idle: bool) -> SpanBound | None:
    """The bound over the spans of `earlier` and `detail`, None where it does not judge
    them (the interval over windows does)."""
    details = [*earlier, detail]
    inside = idle and any(r.scheduler is not None for d in details for r in d.reps)
    return span_bound(details, inside)


def _about(windows: int | None) -> str:
    return "many" if windows is None else f"about {windows}"
