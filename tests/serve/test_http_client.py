"""The built-in client: exact counts, and every kind of failure reported, never a hang.

Real-server cases use the bundled c-epoll server's fault flags. Framing cases (chunked,
Connection: close, silence) use a small scripted socket server in a thread, since no
bundled server misbehaves that way.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from icount.errors import RunFailedError
from icount.serve.adapter import Expect, PathSpec
from icount.serve.http_client import KeepAliveClient, LoadResult, encode_request, fetch

from .conftest import HOST, StartServer

PLAIN = PathSpec("plaintext", "/plaintext", Expect(200, {"content-type": "text/plain"},
                                                     b"Hello, World!"))  # fmt: skip
JSON = PathSpec("json", "/json", Expect(200, {"content-type": "application/json"}, None,
                                        {"message": "Hello, World!"}))  # fmt: skip


def load(port: int, n: int, c: int = 1, path: PathSpec = PLAIN, timeout: float = 5.0) -> LoadResult:
    with KeepAliveClient(HOST, port, path, c, timeout) as client:
        return client.run(n)


@pytest.mark.parametrize("concurrency", [1, 8])
def test_exact_count(c_server: StartServer, concurrency: int) -> None:
    # The server aborts on request N+1: if it is still alive after N requests and all N
    # were answered correctly, the client sent exactly N.
    n = 1000
    port = c_server("--crash-after", str(n))
    result = load(port, n, concurrency)
    assert (result.requested, result.completed, result.failed) == (n, n, 0)
    assert result.ok and result.first_error is None and result.rps > 0
    # Request N+1 makes it abort: it had answered exactly N, no fewer.
    with pytest.raises((OSError, RunFailedError)):
        fetch(HOST, port, PLAIN, 2.0)


def test_runs_reuse_the_same_connections(c_server: StartServer) -> None:
    port = c_server()
    with KeepAliveClient(HOST, port, JSON, 4, 5.0) as client:
        socks = list(client._socks)
        for n in (3, 100, 1):  # fewer requests than connections included
            result = client.run(n)
            assert (result.completed, result.ok) == (n, True)
        assert client._socks == socks and all(s.fileno() >= 0 for s in socks)


def test_wrong_body_is_counted_failed(c_server: StartServer) -> None:
    port = c_server("--body", "Hello, Wurld!")
    result = load(port, 50, 4)
    assert (result.completed, result.failed, result.ok) == (0, 50, False)
    assert result.first_error is not None
    assert "body differs at byte 8" in result.first_error


def test_status_500_is_counted_failed(c_server: StartServer) -> None:
    port = c_server("--status", "500")
    result = load(port, 20)
    assert (result.completed, result.failed) == (0, 20)
    assert result.first_error == "response 1: status 500, expected 200"


def test_server_crash_after_n(c_server: StartServer) -> None:
    port = c_server("--crash-after", "17")
    with KeepAliveClient(HOST, port, PLAIN, 1, 5.0) as client:
        result = client.run(100)
        assert (result.completed, result.failed, result.ok) == (17, 83, False)
        assert result.first_error in (
            "connection 1 closed by the server after 17 responses on it",
            # the server's end came before its exit: a new connection was accepted
            "connection 1 closed by the server after 17 responses on it (sent again on a new "
            "connection: failed (Connection reset by peer))",
        )
        assert client.per_connection is None
        again = client.run(10)  # the client says why it cannot go on
    assert (again.completed, again.failed) == (0, 10)
    assert again.first_error == f"earlier: {result.first_error}"


def test_reopen_after_a_server_restart(c_server: StartServer) -> None:
    port = c_server("--crash-after", "5")
    client = KeepAliveClient(HOST, port, PLAIN, 1, 5.0)
    client.open()
    assert not client.run(10).ok
    client.close()
    client.port = c_server()  # a fresh server; the same client object reconnects
    client.open()
    assert client.run(10).ok
    client.close()


def test_server_crash_with_many_connections(c_server: StartServer) -> None:
    port = c_server("--crash-after", "100")
    result = load(port, 1000, 8)
    assert result.completed == 100 and result.failed == 900
    # An abort resets connections with unread requests and closes idle ones.
    assert result.first_error is not None
    assert re.fullmatch(
        r"connection \d+ (closed by the server|failed \(Connection reset by peer\)|cannot open a "
        r"new connection: Connection refused) after \d+ responses on it( \(sent again .*\))?",
        result.first_error,
    )


def test_connection_refused_is_run_failed() -> None:
    with socket.socket() as s:
        s.bind((HOST, 0))
        port = s.getsockname()[1]  # bound, never listening
    client = KeepAliveClient(HOST, port, PLAIN, 2, 1.0)
    with pytest.raises(RunFailedError, match=r"cannot open connection 1 of 2 to 127\.0\.0\.1:\d+"):
        client.open()


def test_request_bytes_do_not_depend_on_the_port() -> None:
    a = KeepAliveClient(HOST, 8080, PLAIN, 1, 1.0).request_bytes
    b = KeepAliveClient(HOST, 18080, PLAIN, 1, 1.0).request_bytes
    assert a == b == b"GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    extra = PathSpec("p", "/p", Expect(), "POST", {"Accept": "*/*"})
    assert encode_request("h", extra) == b"POST /p HTTP/1.1\r\nHost: h\r\nAccept: */*\r\n\r\n"


# ------------------------------------------------------------------ scripted servers

OK = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!"


@pytest.fixture
def scripted() -> Iterator[Callable[[Callable[[int], bytes | list[bytes] | None]], int]]:
    """serve(reply) -> port: reply(k) gives the bytes for the k-th request of a
    connection (a list: written in parts; None: close it)."""
    stop = threading.Event()
    threads: list[threading.Thread] = []
    listeners: list[socket.socket] = []

    def serve(reply: Callable[[int], bytes | list[bytes] | None]) -> int:
        lsock = socket.create_server((HOST, 0))
        lsock.settimeout(0.1)
        listeners.append(lsock)

        def conn_loop(conn: socket.socket) -> None:
            conn.settimeout(0.1)
            k, buf = 0, b""
            with conn:
                while not stop.is_set():
                    try:
                        data = conn.recv(4096)
                    except TimeoutError:
                        continue
                    if not data:
                        return
                    buf += data
                    while b"\r\n\r\n" in buf:
                        _, buf = buf.split(b"\r\n\r\n", 1)
                        k += 1
                        out = reply(k)
                        if out is None:
                            return
                        for part in out if isinstance(out, list) else [out]:
                            conn.sendall(part)
                            time.sleep(0.005)  # separate TCP segments

        def accept_loop() -> None:
            while not stop.is_set():
                try:
                    conn, _ = lsock.accept()
                except TimeoutError:
                    continue
                t = threading.Thread(target=conn_loop, args=(conn,), daemon=True)
                t.start()
                threads.append(t)

        t = threading.Thread(target=accept_loop, daemon=True)
        t.start()
        threads.append(t)
        return int(lsock.getsockname()[1])

    yield serve
    stop.set()
    for t in threads:
        t.join(5)
    for s in listeners:
        s.close()


def test_server_closing_a_connection_with_a_request_unanswered(
    scripted: Callable[..., int],
) -> None:
    """A server that reads a connection's 6th request and closes it without one byte of
    an answer: a close at a limit of 5 it did not announce, and the request goes again on
    a new connection (a GET is idempotent)."""
    port = scripted(lambda k: OK if k <= 5 else None)
    with KeepAliveClient(HOST, port, PLAIN, 1, 5.0) as client:
        result = client.run(10)
        assert (result.completed, result.failed, result.first_error) == (10, 0, None)
        assert (client.per_connection, result.connections) == (5, 1)


def test_connection_close_header_is_a_keep_alive_limit(scripted: Callable[..., int]) -> None:
    """A server that says `Connection: close` on its third answer closes at a limit: the
    client opens a new connection for the next request (tests/serve/test_connections.py)."""
    closing = OK.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n", 1)
    port = scripted(lambda k: OK if k < 3 else closing)
    with KeepAliveClient(HOST, port, PLAIN, 1, 5.0) as client:
        result = client.run(5)
        assert (result.completed, result.failed, result.ok) == (5, 0, True)
        assert result.connections == 1 and client.per_connection == 3


def test_chunked_response_is_refused(scripted: Callable[..., int]) -> None:
    chunked = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n"
               b"\r\nd\r\nHello, World!\r\n0\r\n\r\n")  # fmt: skip
    port = scripted(lambda k: chunked)
    result = load(port, 4)
    assert (result.completed, result.failed) == (0, 4)
    assert result.first_error == (
        "connection 1 unusable: Transfer-Encoding: chunked is not supported "
        "(the server must send Content-Length) after 0 responses on it"
    )


def test_response_split_over_many_packets(scripted: Callable[..., int]) -> None:
    head, body = OK.split(b"\r\n\r\n")
    # The head in three writes (cut inside "\r\n\r\n"), then the body in two.
    parts = [head + b"\r\n", b"\r", b"\n" + body[:5], body[5:]]
    port = scripted(lambda k: parts)
    result = load(port, 5, 2)
    assert result.ok, result.first_error


def test_silent_server_times_out(scripted: Callable[..., int]) -> None:
    port = scripted(lambda k: OK if k == 1 else b"")  # answers once, then says nothing
    t0 = time.monotonic()
    result = load(port, 3, timeout=0.5)
    assert time.monotonic() - t0 < 3
    assert (result.completed, result.failed) == (1, 2)
    assert result.first_error == "no response within 0.5 s (1 requests outstanding, 1 completed)"


def test_unsolicited_bytes_are_an_error(scripted: Callable[..., int]) -> None:
    port = scripted(lambda k: OK + OK)
    result = load(port, 2)
    assert not result.ok and result.first_error is not None
    assert "bytes after a response" in result.first_error


def test_garbage_status_line(scripted: Callable[..., int]) -> None:
    port = scripted(lambda k: b"SSH-2.0-OpenSSH_9.2\r\n\r\n")
    result = load(port, 2)
    assert result.first_error is not None
    assert "not an HTTP/1.x status line: 'SSH-2.0-OpenSSH_9.2'" in result.first_error


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 2\xb200 OK\r\nContent-Length: 2\r\n\r\nhi",  # latin-1 '²' in the status
        b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\nhi",
        b"HTTP/1.1 200 OK\r\nContent-Length: \xb9\xb2\r\n\r\nhi",
    ],
)
def test_unicode_digits_are_a_framing_error(head: bytes) -> None:
    from icount.serve.http_client import FramingError, parse_response

    with pytest.raises(FramingError):
        parse_response(head)


@pytest.mark.parametrize(
    "cut",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello",  # in the body
        b"HTTP/1.1 200 OK\r\nContent-Len",  # in the head
    ],
)
def test_a_connection_closed_in_the_middle_of_a_response_ends_the_run(cut: bytes) -> None:
    """The end of a connection leaves it readable for ever: an incomplete response there
    was kept to wait for the rest, and the client spun until killed (a 2 s timeout still
    running after 8 s). It is a lost connection, said at once (milliseconds here; the
    bound is the timeout's, which an ending by timeout would reach)."""
    lsock = socket.create_server((HOST, 0))

    def once() -> None:
        conn, _ = lsock.accept()
        with conn:
            conn.recv(4096)
            conn.sendall(cut)

    t = threading.Thread(target=once, daemon=True)
    t.start()
    started = time.monotonic()
    try:
        result = load(int(lsock.getsockname()[1]), 1, timeout=5.0)
    finally:
        t.join(5)
        lsock.close()
    assert time.monotonic() - started < 4.0  # the error, well before the timeout
    assert (result.completed, result.failed) == (0, 1)
    assert result.first_error is not None
    assert "closed by the server in the middle of a response" in result.first_error
