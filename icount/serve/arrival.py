"""When the built-in client sends a request: the arrival discipline (`--arrival`).

`idle` (the default): each request is sent only when every thread of every process of
the server is blocked waiting in the kernel, so that its count is the work of one
request arriving at a server with nothing else to do. `closed`: the next request goes
as soon as the answer to the last one is in (the closed loop of every load generator).

Under callgrind a server runs 20-50x slower than natively, so a closed-loop client lands
its next request while the server is still finishing the last one (logging, closing the
round, polling again): an event loop then serves two requests in one wake-up, and the
count per request depends on how fast the client is relative to the server, that is on
the machine's load. Natively, at one connection, the server is idle before the client
has read its answer; `idle` gives the server that regime under any backend and load.

At --concurrency N the requests go in waves: when the server is idle, every connection
gets its next request at once, and the next wave waits until every answer is in and
the server is idle again. External load generators send their requests themselves:
they run `closed`.

Whether the server is idle is read from /proc by icount/threads_idle.py, which the
callgrind backend's window edges use too.
"""

from __future__ import annotations

from collections.abc import Callable

from icount.backends.protocol import Server
from icount.errors import UsageError
from icount.serve.http_client import KeepAliveClient
from icount.serve.server import RunInvalid, with_server_state
from icount.session.options import Arrival
from icount.threads_idle import Watch, wait_idle

IDLE, CLOSED = Arrival.IDLE, Arrival.CLOSED
LEGACY = CLOSED  # what a results file written before the field existed was measured with

Pace = Callable[[], str | None]  # None once the server is idle; else why it never was


def resolve(asked: Arrival | None, load_kind: str) -> tuple[Arrival, str]:
    """(arrival, why) for a session whose load generator is `load_kind`."""
    if asked is None:
        if load_kind == "builtin":
            return IDLE, "each request is sent when every thread of the server waits"
        return CLOSED, f"{load_kind} sends its requests itself (a closed loop)"
    if asked == IDLE and load_kind != "builtin":
        raise not_builtin(load_kind)
    return asked, "asked for with --arrival"


def not_builtin(load_kind: str) -> UsageError:
    return UsageError(
        f"--arrival idle needs the built-in client: {load_kind} sends its requests itself",
        hint="use --load builtin, or --arrival closed",
    )


def pacer(arrival: Arrival, pid: int, timeout_s: float) -> Pace | None:
    """What the built-in client calls before each wave of requests, or None (closed)."""
    if arrival != IDLE:
        return None
    watch = Watch(pid)
    return lambda: wait_idle(watch, timeout_s)


def settle(server: Server, client: object, what: str, edge: str) -> None:
    """Under idle arrival, wait for the server to be idle before a window's `edge` (open,
    close) as before a request, so that the edge falls between requests, not in the tail
    of the last one (the priming requests' before a window, the last counted one's after
    it); RunInvalid with the reason where it never is. The backend's own wait before a
    dump is shorter, and only holds the dump back."""
    pace = client.pace if isinstance(client, KeepAliveClient) else None
    if pace is None:
        return
    why = pace()
    if why is not None:
        raise RunInvalid(with_server_state(server, f"{what}: before the window's {edge}: {why}"))
