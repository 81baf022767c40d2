"""The built-in load generator: an exact-count HTTP/1.1 keep-alive client.

It runs inside icount's own process (pinned to the load CPUs by the caller). Its
connections are opened once, before the warm-up, and reused by every window, so no
accept/close cost falls inside a measured window. Each connection carries one request
at a time (no pipelining), `run(n)` sends exactly n requests, and every response is
checked: status, the headers that matter and the body.

Speed: one epoll set, level-triggered, non-blocking sockets, the request encoded once.
A response whose bytes equal a response already parsed and found correct is correct
too, so the common case costs one set lookup instead of a parse; anything else (a new
Date header, a wrong answer) goes through the full parser and check.

Framing is by Content-Length, or, for a response without one, the end of the connection
(HTTP/1.1's rule for a response the server closes). Chunked responses and bytes nobody
asked for are errors that end the connection's use.

A server that closes connections is measured, not refused. One that closes after every
response (`Connection: close`, an HTTP/1.0 answer without keep-alive: PHP's `php -S`) is
sent each request on a fresh connection, opened when the request is sent, so that each
request's connection (connect, accept, close) is part of its work, in every window
alike; `connection="close"` does so with any server. One that closes a connection after
some responses (a keep-alive limit: lighttpd's, Apache's, nginx's) gets a fresh
connection when it closes one, and `fresh()` before a window replaces every connection
and sends each one request, so that the window starts on connections the server has
accepted, each with the most requests left; `per_connection` is the limit found. A
limit it does not announce shows as a request that meets the connection's end or a reset
with no byte of its answer read: it goes again on a new connection (a GET is idempotent).
A connection the server closed while idle (a keep-alive idle timeout) is seen before a
request is sent on it, and replaced: by `fresh()` before a window, outside it
(`idle_closes`, not a limit; from then on `fresh()` replaces every connection), or when
the request goes (`LoadResult.idle_reopened`: a window that did so is taken again,
serve/connections.py).
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from icount.errors import RunFailedError
from icount.serve.adapter import PathSpec, check_response

MAX_HEAD_BYTES = 64 * 1024
CONNECTIONS = ("auto", "keep-alive", "close")  # how connections are used (--connection)
MAX_BODY_BYTES = 64 * 1024 * 1024
RECV_BYTES = 65536
_KNOWN_GOOD_MAX = 64  # distinct correct responses remembered (Date changes once a second)
_KEEP_ALIVE_NEEDED = (
    ": --connection keep-alive needs a server that keeps connections open; --connection "
    "close counts each request's connection as its work"
)
_END_AFTER_BYTES_S = 0.1  # how long bytes on an idle connection may precede its end


@dataclass(frozen=True)
class LoadResult:
    requested: int
    completed: int  # responses received that matched the expectation
    failed: int  # requested - completed: wrong answers, lost, timed out or never sent
    first_error: str | None
    wall_s: float
    # connections opened during the run: the server's accepts and closes it caused
    connections: int = 0
    # of those, connections the server had closed while idle before the run's first
    # request on them (a keep-alive idle timeout): a window's own accept, if it was one
    idle_reopened: int = 0

    @property
    def rps(self) -> float:
        return self.completed / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def ok(self) -> bool:
        # first_error also catches a connection the server closed after its last answer:
        # the count was exact, but keep-alive was broken and the next window cannot run.
        return self.completed == self.requested and self.failed == 0 and self.first_error is None


@dataclass(frozen=True)
class Response:
    status: int
    headers: Mapping[str, str]  # lower-case names
    body: bytes
    keep_alive: bool


class FramingError(Exception):
    """The bytes received are not one well-framed HTTP/1.x response."""


def encode_request(host: str, path: PathSpec) -> bytes:
    """The exact request bytes. Host carries no port, so the bytes (and the server's
    parsing cost) do not change with the port each server process gets."""
    lines = [f"{path.http_method} {path.request_target} HTTP/1.1", f"Host: {host}"]
    lines += [f"{k}: {v}" for k, v in path.request_headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _decimal(text: str) -> bool:
    # str.isdigit also takes '²' (latin-1 0xB2), which int() refuses
    return text.isascii() and text.isdigit()


def parse_response(
    data: bytes, *, head_only: bool = False, eof: bool = False
) -> tuple[int, Response] | None:
    """(bytes used, response) for the response at the start of `data`; None if incomplete.
    `eof`: the server closed the connection after `data`, which ends a body without a
    Content-Length."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        if len(data) > MAX_HEAD_BYTES:
            raise FramingError(f"no end of response head within {MAX_HEAD_BYTES} bytes")
        return None
    lines = data[:end].decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not _decimal(parts[1]):
        raise FramingError(f"not an HTTP/1.x status line: {lines[0][:60]!r}")
    status = int(parts[1])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            raise FramingError(f"malformed header line {line[:60]!r}")
        key = name.strip().lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    if "transfer-encoding" in headers:
        raise FramingError(
            f"Transfer-Encoding: {headers['transfer-encoding']} is not supported "
            "(the server must send Content-Length)"
        )
    length_text = headers.get("content-length")
    to_close = False  # the body runs to the end of the connection
    if head_only or status in (204, 304) or 100 <= status < 200:
        length = 0
    elif length_text is None:
        if len(data) - end - 4 > MAX_BODY_BYTES:
            raise FramingError(f"response without a length is over {MAX_BODY_BYTES} bytes")
        if not eof:
            return None
        to_close = True
        length = len(data) - end - 4
    elif not _decimal(length_text):
        raise FramingError(f"response without a valid Content-Length ({length_text!r})")
    else:
        length = int(length_text)
        if length > MAX_BODY_BYTES:
            raise FramingError(f"Content-Length {length} is over {MAX_BODY_BYTES} bytes")
    total = end + 4 + length
    if len(data) < total:
        return None
    conn = headers.get("connection", "").lower()
    keep_alive = "close" not in conn if parts[0] == "HTTP/1.1" else "keep-alive" in conn
    keep_alive = keep_alive and not to_close
    return total, Response(status, headers, data[end + 4 : total], keep_alive)


def fetch(host: str, port: int, path: PathSpec, timeout_s: float) -> Response:
    """One request on a fresh connection (readiness and verification). OSError or
    RunFailedError when there is no complete answer."""
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.sendall(encode_request(host, path))
        data = b""
        while True:
            chunk = sock.recv(RECV_BYTES)
            if chunk:
                data += chunk
            try:
                parsed = parse_response(data, head_only=path.http_method == "HEAD", eof=not chunk)
            except FramingError as e:
                raise RunFailedError(f"{host}:{port}{path.request_target}: {e}") from e
            if parsed is not None:
                return parsed[1]
            if not chunk:
                raise RunFailedError(
                    f"{host}:{port}{path.request_target}: connection closed after "
                    f"{len(data)} bytes without a complete response"
                )


class KeepAliveClient:
    """`concurrency` keep-alive connections, exactly n validated requests per `run`.
    `connection`: CONNECTIONS (the module's docstring)."""

    name = "builtin"

    def __init__(
        self,
        host: str,
        port: int,
        path: PathSpec,
        concurrency: int,
        timeout_s: float,
        pace: Callable[[], str | None] | None = None,
    ) -> None:
        """`pace`: called before each wave of requests (serve/arrival.py), None once they
        may go, else why they never may; without it each connection sends its next
        request as soon as its answer is in."""
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        self.host = host
        self.port = port
        self.path = path
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.pace = pace
        self.request_bytes = encode_request(host, path)
        self._socks: list[socket.socket] = []
        self._ep: select.epoll | None = None
        self._known_good: set[bytes] = set()
        self._answered = [0] * concurrency  # responses per connection, for messages
        self._broken: str | None = None  # why the connections cannot be used any more
        self._index: dict[int, int] = {}  # an open connection's fd: its place in _socks
        self._stray: dict[int, int] = {}  # bytes an idle connection sent, with no end
        # a connection whose request was sent again on it, the server having closed the
        # one before: how, after how many answers, and the limit known before
        self._resent: dict[int, tuple[str, int, int | None]] = {}
        self.connection = "auto"
        # the fewest responses the server gave a connection before closing it; None: none
        # closed. 1: it closes after every response
        self.per_connection: int | None = None
        # the answers each connection the server closed while the client was away had
        # (between runs: a keep-alive idle timeout, or a limit reached at a run's last
        # answer, told apart once the limit is known: `idle_closes`)
        self._idle_at: list[int] = []
        self.ended_at = time.monotonic()  # when the last run ended: connections idle since
        self.server_software: str | None = None  # its Server header, which names its settings

    @property
    def idle_closes(self) -> int:
        """Connections the server closed while the client was away, before a limit (a
        close at as many answers as a limit found since is that limit's)."""
        cap = self.per_connection
        return sum(1 for k in self._idle_at if cap is None or k < cap)

    @property
    def renews(self) -> bool:
        """Whether every connection is replaced before each window: the server closes
        them at a limit, or has closed one while idle (the next may close while a window
        edge is dumped, and reopening it inside the window would count its accept)."""
        return self.per_connection is not None or bool(self._idle_at)

    def __enter__(self) -> KeepAliveClient:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        if self._ep is not None:
            return
        self._answered = [0] * self.concurrency  # fresh connections (also after close())
        self._broken = None
        self._stray = {}
        ep = select.epoll()
        try:
            for i in range(self.concurrency):
                sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
                self._socks.append(sock)
                self._register(ep, i, sock)
        except OSError as e:
            ep.close()
            self._close_sockets()
            raise RunFailedError(
                f"cannot open connection {len(self._socks) + 1} of {self.concurrency} to "
                f"{self.host}:{self.port}: {e.strerror or e}"
            ) from e
        self._ep = ep

    def close(self) -> None:
        if self._ep is not None:
            self._ep.close()
            self._ep = None
        self._close_sockets()

    def _close_sockets(self) -> None:
        for sock in self._socks:
            sock.close()
        self._socks = []
        self._index = {}

    def _register(self, ep: select.epoll, i: int, sock: socket.socket) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        ep.register(sock.fileno(), select.EPOLLIN)
        self._index[sock.fileno()] = i

    def _connect(self, i: int) -> str | None:
        """A new connection in place i (whose last one was closed); why not, or None."""
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        except OSError as e:
            return f"cannot open a new connection: {e.strerror or e}"
        assert self._ep is not None
        self._socks[i] = sock
        self._register(self._ep, i, sock)
        self._answered[i] = 0
        return None

    def _drop(self, i: int) -> None:
        """Close connection i, to be opened again when its next request is sent."""
        sock = self._socks[i]
        if sock.fileno() >= 0:
            self._index.pop(sock.fileno(), None)
            if self._ep is not None:
                self._ep.unregister(sock.fileno())
            sock.close()

    def _server_closed(self, i: int, how: str) -> str | None:
        """The server closed connection i (`how`) after its answers on it: the limit it
        keeps to is noted, and why the client cannot go on, if it cannot."""
        k = self._answered[i]
        self._drop(i)
        return None if self._limit(k) else f"{self._lost(i, how)}{_KEEP_ALIVE_NEEDED}"

    def _limit(self, k: int) -> bool:
        """The server closed a connection after k answers: the limit it keeps to is noted;
        False where the client cannot go on (--connection keep-alive, k = 1)."""
        if self.connection != "close":  # else the client closes them itself
            self.per_connection = k if self.per_connection is None else min(self.per_connection, k)
        return not (k == 1 and self.connection == "keep-alive")

    @property
    def mode(self) -> str:
        """'close' where each request has its own connection, else 'keep-alive'."""
        if self.connection == "close" or self.per_connection == 1:
            return "close"
        return "keep-alive"

    def _closed(self, i: int) -> bool:
        """Whether the server has closed connection i, which has no request in flight
        (the end of the connection is readable, or it was reset). Bytes it sent before
        its end (a 408 Request Timeout to an idle connection) are read and dropped; bytes
        without an end are kept for the next request to refuse (`_stray`)."""
        sock = self._socks[i]
        if sock.fileno() < 0:
            return False
        try:
            if sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                return True
        except BlockingIOError:
            return False
        except OSError:
            return True
        got = 0
        while True:  # bytes nobody asked for: does the end follow them?
            try:
                chunk = sock.recv(RECV_BYTES, socket.MSG_DONTWAIT)
            except BlockingIOError:
                if select.select([sock], [], [], _END_AFTER_BYTES_S)[0]:
                    continue
                self._stray[i] = got
                return False
            except OSError:
                return True
            if not chunk:
                return True
            got += len(chunk)
            if got > MAX_HEAD_BYTES:
                self._stray[i] = got
                return False

    def fresh(self) -> LoadResult | None:
        """Before a window, outside it: where the server closes connections at a limit,
        every connection replaced and sent one request, so that the window starts on
        connections the server has accepted (an accept inside it would be its work) with
        the most requests left; elsewhere, connections the server closed while idle (a
        keep-alive idle timeout: Apache's, lighttpd's and Node's are 5 s, and a window's
        dumps or the warm-up's end can leave one idle that long) replaced so, and counted
        in `idle_closes`. None where nothing was done."""
        if self.mode == "close" or self._broken is not None or self._ep is None:
            return None
        gone = [i for i in range(len(self._socks)) if self._closed(i)]
        self._idle_at += [self._answered[i] for i in gone]
        if self.renews:
            gone = list(range(len(self._socks)))
        if not gone:
            return None
        for i in gone:
            self._drop(i)
        return self.run(self.concurrency)

    def _lost(self, i: int, why: str) -> str:
        """Retire connection i; the message names it and how far it got. One whose request
        was sent again after the server closed its last connection, and met no answer on
        the new one either, is a server that went away, not a limit: the close it first
        met is the message."""
        self._drop(i)
        advice = _KEEP_ALIVE_NEEDED if why.endswith(_KEEP_ALIVE_NEEDED) else ""
        why = why.removesuffix(advice)
        first = self._resent.pop(i, None)
        if first is not None and not self._answered[i]:
            how, k, self.per_connection = first
            msg = f"connection {i + 1} {how} after {k} responses on it (sent again on a new "
            msg += f"connection: {why})"
        else:
            msg = f"connection {i + 1} {why} after {self._answered[i]} responses on it{advice}"
        self._broken = self._broken or msg
        return msg

    def run(self, n: int) -> LoadResult:  # one hot loop, kept in one piece for speed
        """Send exactly n requests over the open connections and check every answer."""
        t0 = time.perf_counter()
        if self._ep is None:
            raise RunFailedError("the client's connections are not open (call open() first)")
        if self._broken is not None:
            return LoadResult(n, 0, n, f"earlier: {self._broken}", 0.0)
        ep = self._ep
        socks = self._socks
        index = self._index
        close_each = self.connection == "close"  # the client closes after every answer
        # Under a keep-alive limit, each connection sends a fixed share of the n: which
        # one reaches the limit, and so where new connections open, is then the same in
        # every window, not left to which answers came first.
        limited = self.per_connection is not None and self.mode == "keep-alive"
        c = len(socks)
        quota = [n // c + (i < n % c) for i in range(c)] if limited else None
        req = self.request_bytes
        req_len = len(req)
        good = self._known_good
        expect = self.path.expect
        head_only = self.path.http_method == "HEAD"
        answered = self._answered
        resent = self._resent
        resent.clear()
        bufs: list[bytes] = [b""] * len(socks)
        busy = [False] * len(socks)  # a request is in flight on this connection
        sent_on = [False] * len(socks)  # a request was sent on this connection in this run
        pace = self.pace
        first_error: str | None = None
        sent = completed = inflight = received = opened = idle_reopened = 0
        stopping = False

        def send(i: int) -> str | None:
            nonlocal opened, idle_reopened
            # Closed since its last answer without saying so: paced, the server had time
            # to close it (at a limit it did not announce, if its last answer was in this
            # run; else while the client was away). Sent on, the request would meet the
            # end of the connection and read as a crash.
            if answered[i] and (pace is not None or not sent_on[i]) and self._closed(i):
                if sent_on[i]:
                    why = self._server_closed(i, "was closed by the server")
                    if why is not None:
                        return why
                else:
                    self._idle_at.append(answered[i])
                    self._drop(i)
                    idle_reopened += 1
            if self._stray.get(i):
                return f"unusable: {self._stray.pop(i)} bytes nobody asked for"
            sent_on[i] = True
            if socks[i].fileno() < 0:  # closed after its last answer: a new one
                why = self._connect(i)
                if why is not None:
                    return why
                opened += 1
            try:
                if socks[i].send(req) != req_len:
                    return "request only partly sent (socket buffer full)"
            except (ConnectionResetError, BrokenPipeError) as e:
                if not answered[i]:
                    return f"send failed: {e.strerror or e}"
                return resend(i, f"send failed: {e.strerror or e}")  # reset since its answer
            except OSError as e:
                return f"send failed: {e.strerror or e}"
            if quota is not None:
                quota[i] -= 1
            return None

        def resend(i: int, how: str) -> str | None:
            """Connection i ended (`how`) with the request on it unanswered, not one byte
            of its answer read, after answers on it: where a new connection opens, the
            server closed at a limit it did not announce, and the request goes again on
            it (a GET is idempotent); else it is gone, and `how` says so."""
            nonlocal opened
            k = answered[i]
            self._drop(i)
            if k == 1 and self.connection == "keep-alive":
                self._limit(k)
                return f"{how}{_KEEP_ALIVE_NEEDED}"
            if self._connect(i) is not None:
                return how
            opened += 1
            self._resent[i] = (how, k, self.per_connection)
            self._limit(k)
            return send(i)

        def again(i: int, how: str) -> str | None:
            """`resend` of the request in flight on connection i, which its send counted
            in the quota; why the connection is lost, where it cannot be."""
            if quota is not None:
                quota[i] += 1
            why = resend(i, how)
            return None if why is None else self._lost(i, why)

        waiting: list[int] = []  # paced: connections whose next request waits for the wave
        first = range(min(n, len(socks)))
        if pace is not None and first:
            first_error = pace()
            if first_error is not None:
                first, stopping = range(0), True
        for i in first:
            err = send(i)
            if err is not None:
                first_error = first_error or self._lost(i, err)
                stopping = True
                break
            sent += 1
            inflight += 1
            busy[i] = True

        while inflight:
            events = ep.poll(self.timeout_s)
            if not events:
                first_error = first_error or (
                    f"no response within {self.timeout_s:g} s "
                    f"({inflight} requests outstanding, {completed} completed)"
                )
                self._broken = self._broken or first_error
                break
            for fd, _ in events:
                i = index.get(fd, -1)
                if i < 0:  # closed by an earlier event of this batch
                    continue
                at_eof = False
                try:
                    data = socks[i].recv(RECV_BYTES)
                except BlockingIOError:
                    continue
                except OSError as e:
                    if (
                        busy[i]
                        and answered[i]
                        and not bufs[i]
                        and isinstance(e, ConnectionResetError)
                    ):  # reset at a limit, the request on it unanswered: again
                        lost = again(i, f"failed ({e.strerror or e})")
                    else:
                        lost = self._lost(i, f"failed ({e.strerror or e})")
                    if lost is not None:
                        first_error = first_error or lost
                        inflight -= busy[i]
                        busy[i] = False
                        stopping = True
                    continue
                if not data:
                    if busy[i] and bufs[i]:  # a body without a length ends here
                        data, bufs[i], at_eof = bufs[i], b"", True
                    elif not busy[i] and answered[i]:
                        # closed between requests, at a limit it did not announce: a new
                        # connection for the next request. One closed under a request in
                        # flight with part of an answer cannot be told from a crash, and
                        # is one.
                        why = self._server_closed(i, "was closed by the server")
                        first_error = first_error or why
                        stopping = stopping or why is not None
                        continue
                    elif busy[i] and answered[i]:
                        # closed at a limit it did not announce, the request on it not
                        # answered by one byte: again, on a new connection
                        lost = again(i, "closed by the server")
                        if lost is not None:
                            first_error = first_error or lost
                            inflight -= 1
                            busy[i] = False
                            stopping = True
                        continue
                    else:
                        how = "closed by the server"
                        if bufs[i]:
                            how += f" in the middle of a response ({len(bufs[i])} bytes)"
                        first_error = first_error or self._lost(i, how)
                        inflight -= busy[i]
                        busy[i] = False
                        stopping = True
                        continue
                if not busy[i]:
                    first_error = first_error or self._lost(
                        i, f"unusable: {len(data)} bytes nobody asked for"
                    )
                    stopping = True
                    continue
                if bufs[i]:
                    data = bufs[i] + data
                    bufs[i] = b""
                if data in good:  # byte-identical to a response already checked
                    completed += 1
                    keep_alive = True
                else:
                    try:
                        parsed = parse_response(data, head_only=head_only, eof=at_eof)
                    except FramingError as e:
                        first_error = first_error or self._lost(i, f"unusable: {e}")
                        inflight -= 1
                        busy[i] = False
                        stopping = True
                        continue
                    if parsed is None:
                        if at_eof:  # ended before its response did: readable for ever after
                            first_error = first_error or self._lost(
                                i,
                                f"closed by the server in the middle of a response "
                                f"({len(data)} bytes)",
                            )
                            inflight -= 1
                            busy[i] = False
                            stopping = True
                            continue
                        bufs[i] = data
                        continue
                    used, resp = parsed
                    if used != len(data):
                        first_error = first_error or self._lost(
                            i, f"unusable: {len(data) - used} bytes after a response"
                        )
                        inflight -= 1
                        busy[i] = False
                        stopping = True
                        continue
                    diff = check_response(expect, resp.status, resp.headers, resp.body)
                    keep_alive = resp.keep_alive
                    if self.server_software is None:
                        self.server_software = resp.headers.get("server", "")
                    if diff is None:
                        completed += 1
                        if keep_alive:
                            if len(good) >= _KNOWN_GOOD_MAX:
                                good.clear()
                            good.add(data)
                    else:
                        first_error = first_error or f"response {received + 1}: {diff}"
                answered[i] += 1
                if resent:
                    resent.pop(i, None)
                received += 1
                inflight -= 1
                busy[i] = False
                if close_each:
                    self._drop(i)
                elif not keep_alive:  # the server closes it: a new one for the next request
                    why = self._server_closed(i, "was closed by the server (Connection: close)")
                    if why is not None:
                        first_error = first_error or why
                        stopping = True
                        continue
                more = sent < n and not stopping and (quota is None or quota[i] > 0)
                if pace is not None:  # the next wave once every answer is in
                    if more:
                        waiting.append(i)
                    if inflight or stopping or not waiting:
                        continue
                    why = pace()
                    if why is not None:
                        first_error = first_error or why
                        stopping = True
                        continue
                    wave, waiting = waiting[: n - sent], []
                elif more:
                    wave = [i]
                else:
                    continue
                for j in wave:
                    err = send(j)
                    if err is not None:
                        first_error = first_error or self._lost(j, err)
                        stopping = True
                        break
                    sent += 1
                    inflight += 1
                    busy[j] = True
        wall = time.perf_counter() - t0
        self.ended_at = time.monotonic()
        return LoadResult(n, completed, n - completed, first_error, wall, opened, idle_reopened)
