"""The idle window after a run's reps: what the server executes on its own, driven by the
clock, and the share of a window its rate explains (serve/runs.py takes rate x each
window's seconds out of the mutator where that share is worth it, and refuses a run
whose window edges leave too much of it unplaced: `clock_uncertain`). Under idle arrival
the window is sent a request every IDLE_REQUEST_EVERY_S, their own work taken out at the
reps' figure, so that its rate holds the work the clock leaves for the next request
(lighttpd's stat cache, invalidated once a second) as well as the timer's."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

from icount.backends.protocol import Server
from icount.results.details import TIME_SHARE_SHOWN, IdleCount, Rep, ServeDetail
from icount.serve import arrival, connections
from icount.serve.http_client import KeepAliveClient
from icount.serve.loadgen import LoadGenerator
from icount.serve.server import RunInvalid, with_server_state
from icount.serve.window import load, reopened

IDLE_SETTLE_S = 0.5
# under idle arrival, the idle window's requests: one every this many seconds of it
IDLE_REQUEST_EVERY_S = 0.25


def idle_window(
    server: Server,
    seconds: float,
    reps: Sequence[Rep],
    walls: Sequence[float],
    client: LoadGenerator | None = None,
) -> tuple[IdleCount, float | None]:
    """An idle window of `seconds`, and the share of a rep's count its rate explains.
    Under idle arrival (a `client` that paces) the window is sent a request every
    IDLE_REQUEST_EVERY_S,
    each when the server is idle, so that the work the clock leaves for the next request
    (a cache its once-a-second handler invalidated, rebuilt lazily) is in the rate as it
    is in the reps; their own work, the reps' per request, is taken out of its count."""
    # Timers the reps delayed (a server busy with requests runs late) catch up first:
    # run inside the window, they would be counted as the idle window's own.
    time.sleep(IDLE_SETTLE_S)
    sender = _sender(client, reps)
    n = max(round(seconds / IDLE_REQUEST_EVERY_S), 1) if sender is not None else 0
    anchor = 0.0
    if sender is not None:
        # what the clock left for a request since the reps is done by one sent now, outside
        # the window; the schedule runs from its answer, so that the window's requests
        # find what `seconds` of the clock left, the last one at the end of them
        reopened(server, sender, "idle window") or load(server, sender, 1, "idle window")
        anchor = time.monotonic()
        arrival.settle(server, sender, "idle window", "open")
    server.open_window()
    answered = 0
    if sender is not None:
        for j in range(1, n + 1):
            time.sleep(max(anchor + seconds * j / n - time.monotonic(), 0.0))
            result = load(server, sender, 1, "idle window")
            if result.connections and sender.mode != connections.CLOSE:
                # a connection opened inside: its accept would read as the clock's work
                raise RunInvalid(with_server_state(
                    server, "idle window: the server closed a connection between two of its "
                    f"requests, {IDLE_REQUEST_EVERY_S:g} s apart (a keep-alive limit, or an "
                    "idle timeout shorter than that)"))  # fmt: skip
            answered += result.completed
        arrival.settle(server, sender, "idle window", "close")
    else:
        # the pause counts from the moment counting started to the moment it stops, not
        # from when opening began to when closing does
        elapsed = time.monotonic() - server.opened_at
        time.sleep(max(seconds - elapsed - server.close_latency_s, 0.0))
    # the time it counted, as a window's: a busy machine oversleeps, and a rate taken
    # over the asked-for seconds would then be too high and take too much out of the reps
    counted_s = time.monotonic() + server.close_latency_s - server.opened_at
    count = server.close_window()
    # the rate is taken out of each rep's mutator, which the runtime's own work counted
    # apart has already left (Go's idle sysmon and netpoll are its scheduler's): counted
    # in the rate too, it would be taken out twice
    work = count.runtime
    apart = work.collector + work.compiler + work.scheduler if work is not None else 0
    # the runtime's own work with no request, kept where there was some: its bound over
    # spans reads it (results/runtime.py)
    own = float(work.collector + work.compiler) if work is not None else 0.0
    clock, served = max(count.instructions - apart, 0), 0.0
    if answered:
        # The requests' work at the reps' mutator a request, the clock's share still in
        # it: that share is the rate x a window's seconds / its requests, so the rate
        # comes out low by answered x a window's seconds / (its requests x these seconds)
        # of itself (4 x 1.5 s / (1000 x 1 s): 0.6%), and the figure moves by that much of
        # the clock's share of a window (0.1%: 6 in a million): second order, left in.
        served = answered * statistics.median((r.instructions - r.apart) / r.requests
                                              for r in reps)  # fmt: skip
        clock = round(max(clock - served, 0), 3)
    idle = IdleCount(clock, round(counted_s, 6), own or None, answered, round(served, 3))
    # the seconds a window counted, which the rate is taken out for (the client's own
    # wall time leaves out the window's edges)
    counted = [r.seconds for r in reps if r.seconds]
    window_s = statistics.median(counted) if len(counted) == len(reps) else statistics.median(walls)
    per_window = statistics.median(r.instructions for r in reps)
    share = idle.instructions / idle.seconds * window_s / per_window if per_window else 0.0
    return idle, (float(f"{share:.2g}") if share >= TIME_SHARE_SHOWN else None)


def _sender(client: LoadGenerator | None, reps: Sequence[Rep]) -> KeepAliveClient | None:
    """The client that sends the idle window its requests: under idle arrival (only the
    built-in client paces; the closed loop's and external generators' windows stay
    without), where the reps counted no collected runtime's work apart. A JIT's few
    requests after pauses do not cost the reps' mean (inline caches missed, code not
    yet optimised): what they cost more would be read as the clock's and taken out
    of every window by its seconds (docs/measuring.md has node-http's). Its
    runtime's work, and the bound over spans that reads it, stay those of a window
    with no request."""
    if not isinstance(client, KeepAliveClient) or client.pace is None:
        return None
    return None if any(r.collector is not None for r in reps) else client


def clock_uncertain(detail: ServeDetail, took: Sequence[float], max_spread: float) -> str | None:
    """Why the clock's share cannot be taken out well enough, or None. Opening and
    closing a window holds the server (vgdb's dumps, perf's control fifo), and the
    clock's work due meanwhile runs after, inside the window or not, as the timer
    catches up or skips (what it leaves for the next request, in the next window's first):
    up to rate x that time per window that the subtraction cannot place. Where that is
    half the spread limit of a window or more, the subtracted figure could be off by
    about that much, which the spread rule would not see (every window is off alike):
    refused, longer windows shrinking it. Half, not all: it is a
    bound (ticks fall either side), and what is left of the limit is the windows' own."""
    if not detail.clock_subtracted or detail.idle is None or not detail.idle.seconds:
        return None
    held = [t - r.seconds for t, r in zip(took, detail.reps, strict=False) if r.seconds]
    window = statistics.median(r.instructions for r in detail.reps)
    if not held or not window:
        return None
    rate = detail.idle.instructions / detail.idle.seconds
    uncertain = rate * max(statistics.median(held), 0.0) / window
    if uncertain < max_spread / 2:
        return None
    return (
        f"the clock drives ~{(detail.time_share or 0.0) * 100:.2g}% of each window "
        f"({rate:,.0f} instructions/s while idle), and its work in the "
        f"{statistics.median(held) * 1000:.0f} ms opening and closing a window held the "
        f"server ({uncertain * 100:.2f}% of a window) may fall inside the window or not: "
        f"not below half of --max-spread {max_spread * 100:g}%; longer windows (--requests) "
        "shrink it"
    )
