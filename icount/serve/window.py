"""One counted window of a run and the requests around it: the requests sent and checked
(`load`), the uncounted ones before (`warm`), a window of exactly n requests counted by
the backend (`count_window`, taken again where the server closed a connection inside
it), and whether a run's windows were taken back to back (`contiguous`). serve/runs.py
takes them in order; serve/idle_window.py and serve/added_windows.py take more."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping

from icount.backends.protocol import Server
from icount.results.details import ProcessShare, Rep
from icount.serve import arrival, connections
from icount.serve.http_client import KeepAliveClient, LoadResult
from icount.serve.loadgen import LoadGenerator
from icount.serve.server import RunInvalid, ended, with_server_state

# the wall clock that times the windows for the added windows' cap (a test gives its own,
# not a sleep)
CLOCK: Callable[[], float] = time.monotonic
# the last 1/this of a warm-up, at most WARMUP_PACED_MAX requests, reaches the server as
# the counted requests will (`paced_tail`): room for a few of a JIT's major collections
WARMUP_PACED_SHARE = 4
WARMUP_PACED_MAX = 5000


def warm(server: Server, client: LoadGenerator, n: int, what: str, paced: int = 0) -> LoadResult:
    """Requests that are not counted, sent as soon as their answers are in whatever the
    arrival, but for the last `paced` of them, which wait for an idle server as counted
    ones do (where the client paces at all): paced throughout, go-http's staggered
    warm-ups of 30,000 and 60,000 requests took as long as counted ones; unpaced
    throughout, a JIT reaches the windows in the closed loop's state (`paced_tail`).
    The wave after them waits for an idle server as every wave."""
    if not isinstance(client, KeepAliveClient) or client.pace is None:
        return load(server, client, n, what)
    paced = min(paced, n)
    if n > paced:
        pace, client.pace = client.pace, None
        try:
            result = load(server, client, n - paced, what)
        finally:
            client.pace = pace
        if not paced:
            return result
    return load(server, client, paced, what)


def paced_tail(warmup: int, extra: int) -> tuple[int, int]:
    """How many of the warm-up's and then of the staggered warm-up's requests are paced:
    the last WARMUP_PACED_SHARE of the two together, at most WARMUP_PACED_MAX. V8 keeps a
    function's optimized code alive through a major collection only while a request
    that uses it is in flight: after a closed-loop warm-up, where one always is, the first
    collections with none in flight (under idle arrival, every one) drop code that was
    inlined and compile its parts on their own, a one-time cost that then fell in the
    first windows (docs/measuring.md, Express)."""
    tail = min((warmup + extra) // WARMUP_PACED_SHARE, WARMUP_PACED_MAX)
    return max(tail - extra, 0), min(tail, extra)


def load(server: Server, client: LoadGenerator, n: int, what: str) -> LoadResult:
    result = client.run(n)
    if not result.ok:
        why = result.first_error or f"{result.failed} of {result.requested} requests failed"
        raise RunInvalid(with_server_state(server, f"{what}: {why}"))
    return result


def reopened(server: Server, client: LoadGenerator, what: str) -> LoadResult | None:
    """The connections the server closed since the last window opened again, each sent
    its first request outside the window (serve/connections.py), or None where none was;
    RunInvalid where they could not be."""
    primed = connections.before_window(client)
    if primed is not None and not primed.ok:
        lost = primed.first_error or f"{primed.failed} of {primed.requested} requests failed"
        raise RunInvalid(with_server_state(server, f"{what}: new connections: {lost}"))
    return primed


def count_window(
    server: Server,
    client: LoadGenerator,
    n: int,
    what: str,
    floor: float | None,
    tries: int = 0,
) -> tuple[Rep, LoadResult, Mapping[str, float] | None, str | None, float]:
    """One counted window of `n` requests: (its rep, the client's result, self costs by
    function, the collected runtime the backend found, if any, and the seconds spent
    before it on new connections or on a window taken again, which are not the
    window's: serve/connections.py). A window whose requests were answered by processes
    the backend does not count is refused: its figure would be a valid-looking part of
    the work, or zero. `tries`: times this window was taken again."""
    before = connections.known(client)
    t0 = time.monotonic()  # not CLOCK: a test's own clock counts windows, not this
    reopened(server, client, what)
    prepared = time.monotonic() - t0
    arrival.settle(server, client, what, "open")
    server.open_window()
    idle_s = connections.idle_since(client)
    result = load(server, client, n, what)
    arrival.settle(server, client, what, "close")
    # from the moment counting started to the moment it stops, as the idle window's
    counted_s = time.monotonic() + server.close_latency_s - server.opened_at
    count = server.close_window()
    shares = tuple(ProcessShare(i, p.role, p.instructions) for i, p in enumerate(count.processes))
    work = count.runtime
    rep = Rep(count.instructions, result.completed, shares, seconds=round(counted_s, 6),
              unsettled=count.unsettled)  # fmt: skip
    if work is not None:
        # the scheduler only where it ran: files of runtimes without one read as before
        rep = dataclasses.replace(rep, collector=float(work.collector),
                                  compiler=float(work.compiler),
                                  runtime_calls=work.calls,
                                  scheduler=float(work.scheduler) if work.scheduler
                                  else None)  # fmt: skip
    outside = server.uncounted()
    if outside:
        raise RunInvalid(
            f"{what}: processes of the server run outside the backend, so their work is "
            f"not counted: {'; '.join(outside)}"
        )
    if floor is not None and rep.per_request < floor:
        # a server that daemonized leaves its child serving uncounted in a new session
        # while its started process exits: that is the reason to give when it is so
        why = ended(server)
        if why:
            raise RunInvalid(f"{what}: {why}")
        counted = len(shares) or 1
        raise RunInvalid(
            f"{what}: the requests were served by processes icount did not count: "
            f"{rep.per_request:.1f} instructions per request in the {counted} counted "
            f"process{'es' if counted != 1 else ''}, below the floor of {floor:g} that any "
            "real request path exceeds (a server whose workers escaped counting?)"
        )
    if result.idle_reopened and tries + 1 >= connections.IDLE_TRIES:
        raise RunInvalid(f"{what}: {connections.idle_refusal(idle_s)}")
    if connections.known(client) != before or result.idle_reopened:
        # the server first closed a connection (or closed each) inside this window, or
        # closed one while idle that the window reopened: the windows after it start on
        # new connections, and so does this one, taken again
        again = time.monotonic()
        rep, result, functions, runtime, spent = count_window(
            server, client, n, what, floor, tries + 1
        )
        return rep, result, functions, runtime, spent + again - t0
    return rep, result, count.functions, None if work is None else work.runtime, prepared


def connections_seen(client: LoadGenerator) -> object:
    """What the client knows of the server's connections, and how many it reopened after
    an idle timeout (each sent a request outside the windows)."""
    closes = client.idle_closes if isinstance(client, KeepAliveClient) else 0
    return connections.known(client), closes


def contiguous(client: LoadGenerator, known: object) -> bool:
    """Whether the windows since the client saw `known` (`connections_seen`) were taken
    back to back: no window taken again (its requests uncounted), and no new connection
    sent a request between two windows (a server closing at a limit or after an idle
    timeout)."""
    if connections_seen(client) != known:
        return False
    return not (isinstance(client, KeepAliveClient) and client.renews)
