"""How a server used the built-in client's connections, and what a cell says of it.

A server that closes connections is measured (serve/http_client.py says how the client
keeps each connection's work where it belongs). Here: before each window, a server that
closes at a keep-alive limit, or has closed one while idle, gets new connections, each
sent one request, outside the window; a window in which the client learned something new
of the server's connections (the first close at a limit, a server that closes after every
answer) is taken again, since the windows after it start otherwise, and so is one whose
first request reopened a connection the server closed while idle (a run whose windows do
so `IDLE_TRIES` times in a row is refused); and the cell's notes name what was found,
with the server's own setting where its Server header says which server it is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from icount.serve.http_client import KeepAliveClient, LoadResult
from icount.serve.loadgen import LoadGenerator

# (a Server header's product, lower-case: the setting that limits a connection's requests)
SETTINGS = (
    ("lighttpd", "lighttpd's server.max-keep-alive-requests"),
    ("apache", "Apache's MaxKeepAliveRequests"),
    ("nginx", "nginx's keepalive_requests"),
)
CLOSE = "close"
# a window whose connection the server closed while idle, before its first request, is
# taken again; one that meets it this many times in a row is refused
IDLE_TRIES = 3


@dataclass
class Said:
    """What a run found of the server's connections, for the cell."""

    notes: list[str] = field(default_factory=list)
    connection: str | None = None  # CLOSE where each request had its own connection


def setting(server_software: str | None) -> str | None:
    """The server's setting for its keep-alive limit, from its Server header."""
    product = (server_software or "").lower()
    return next((name for key, name in SETTINGS if product.startswith(key)), None)


def known(client: LoadGenerator) -> tuple[int | None, str] | None:
    """What the client knows of the server's connections (a window that changes it is
    taken again)."""
    if not isinstance(client, KeepAliveClient):
        return None
    return client.per_connection, client.mode


def before_window(client: LoadGenerator) -> LoadResult | None:
    """New connections, each sent one request, where the server closes at a limit or has
    closed one while idle."""
    return client.fresh() if isinstance(client, KeepAliveClient) else None


def idle_since(client: LoadGenerator) -> float:
    """Seconds since the client's last request was answered (its connections idle)."""
    return time.monotonic() - client.ended_at if isinstance(client, KeepAliveClient) else 0.0


def idle_refusal(idle_s: float) -> str:
    """Why a run ends whose windows met a connection the server had closed while idle,
    before their first request, `IDLE_TRIES` times in a row (each reopened inside the
    window, its accept and close counted, and taken again)."""
    return (
        f"the server closed an idle connection before the window's first request "
        f"{IDLE_TRIES} times in a row, idle at most {idle_s:.2f} s (from the requests "
        "before the window through icount's window edge: waiting for an idle server and "
        "the backend's open): its keep-alive idle timeout is shorter than that; raise it, "
        "or measure with --connection close"
    )


def describe(client: LoadGenerator, requests: int, inside: int, said: Said) -> None:
    """The cell's notes on how the server used its connections (none where it kept
    them open, idle or not), and the run's connection param; `inside`: the most connections a
    window of `requests` opened."""
    if not isinstance(client, KeepAliveClient):
        return
    if client.mode == CLOSE:
        said.connection = CLOSE
        how = (
            "--connection close"
            if client.connection == CLOSE
            else "the server closed every connection after one answer (Connection: close "
            "or HTTP/1.0)"
        )
        said.notes.append(
            f"{how}: each request had its own connection, opened inside the window, so "
            "its connect, accept and close are part of the figure (params: connection close)"
        )
        return
    if client.idle_closes:
        # no count: the runs' notes are said once each, and the counts differ by run
        said.notes.append(
            "the server closed idle connections while the client was away (a keep-alive "
            "idle timeout, not a limit): from then on every connection was reopened and "
            "sent one request before each window, outside it, and a window whose "
            "connection closed while idle before its first request was taken again"
        )
    limit = client.per_connection
    if limit is None:
        return
    name = setting(client.server_software)
    line = (
        f"the server closed each connection after {limit} requests"
        f"{f' ({name})' if name else ''}: every window started on new connections, opened "
        "and sent one request before it"
    )
    if inside:
        line += (
            f"; {inside} more opened inside each window ({client.concurrency} connection"
            f"{'s' if client.concurrency != 1 else ''} x {limit - 1} requests left < "
            f"{requests}), their accept and close counted with its requests: raise "
            f"{name or 'its keep-alive limit'} above --requests to keep them out"
        )
    said.notes.append(line)
