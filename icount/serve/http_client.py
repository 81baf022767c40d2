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

Framing is by Content-Length only. Chunked responses, responses without a length and
bytes nobody asked for are errors that end the connection's use; so is a server that
closes a connection (or says `Connection: close`): the lost connection is reported and
the client sends no new requests, since reconnecting would put accept costs in the window.
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
MAX_BODY_BYTES = 64 * 1024 * 1024
RECV_BYTES = 65536
_KNOWN_GOOD_MAX = 64  # distinct correct responses remembered (Date changes once a second)


@dataclass(frozen=True)
class LoadResult:
    requested: int
    completed: int  # responses received that matched the expectation
    failed: int  # requested - completed: wrong answers, lost, timed out or never sent
    first_error: str | None
    wall_s: float

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


def parse_response(data: bytes, *, head_only: bool = False) -> tuple[int, Response] | None:
    """(bytes used, response) for the response at the start of `data`; None if incomplete."""
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
    if head_only or status in (204, 304) or 100 <= status < 200:
        length = 0
    elif length_text is None or not _decimal(length_text):
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
                parsed = parse_response(data, head_only=path.http_method == "HEAD")
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
    """`concurrency` keep-alive connections, exactly n validated requests per `run`."""

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
        ep = select.epoll()
        try:
            for _ in range(self.concurrency):
                sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
                self._socks.append(sock)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.setblocking(False)
                ep.register(sock.fileno(), select.EPOLLIN)
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

    def _lost(self, i: int, why: str) -> str:
        """Retire connection i; the message names it and how far it got."""
        sock = self._socks[i]
        if self._ep is not None and sock.fileno() >= 0:
            self._ep.unregister(sock.fileno())
        sock.close()
        msg = f"connection {i + 1} {why} after {self._answered[i]} responses on it"
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
        index = {sock.fileno(): i for i, sock in enumerate(socks)}
        req = self.request_bytes
        req_len = len(req)
        good = self._known_good
        expect = self.path.expect
        head_only = self.path.http_method == "HEAD"
        answered = self._answered
        bufs: list[bytes] = [b""] * len(socks)
        busy = [False] * len(socks)  # a request is in flight on this connection
        first_error: str | None = None
        sent = completed = inflight = received = 0
        stopping = False

        def send(i: int) -> str | None:
            try:
                if socks[i].send(req) != req_len:
                    return "request only partly sent (socket buffer full)"
            except OSError as e:
                return f"send failed: {e.strerror or e}"
            return None

        pace = self.pace
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
                i = index[fd]
                try:
                    data = socks[i].recv(RECV_BYTES)
                except BlockingIOError:
                    continue
                except OSError as e:
                    first_error = first_error or self._lost(i, f"failed ({e.strerror or e})")
                    inflight -= busy[i]
                    busy[i] = False
                    stopping = True
                    continue
                if not data:
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
                        parsed = parse_response(data, head_only=head_only)
                    except FramingError as e:
                        first_error = first_error or self._lost(i, f"unusable: {e}")
                        inflight -= 1
                        busy[i] = False
                        stopping = True
                        continue
                    if parsed is None:
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
                    if diff is None:
                        completed += 1
                        if keep_alive:
                            if len(good) >= _KNOWN_GOOD_MAX:
                                good.clear()
                            good.add(data)
                    else:
                        first_error = first_error or f"response {received + 1}: {diff}"
                answered[i] += 1
                received += 1
                inflight -= 1
                busy[i] = False
                if not keep_alive:
                    first_error = first_error or self._lost(
                        i,
                        "was closed by the server "
                        "(Connection: close; icount needs HTTP/1.1 keep-alive)",
                    )
                    stopping = True
                    continue
                if sent < n and not stopping:
                    wave = [i]
                    if pace is not None:  # the next wave once every answer is in
                        waiting.append(i)
                        if inflight:
                            continue
                        why = pace()
                        if why is not None:
                            first_error = first_error or why
                            stopping = True
                            continue
                        wave, waiting = waiting[: n - sent], []
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
        return LoadResult(n, completed, n - completed, first_error, wall)
