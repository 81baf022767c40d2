"""Servers that close connections (issue 29): after every answer (`Connection: close`,
HTTP/1.0: PHP's `php -S`), at a keep-alive limit (lighttpd, Apache, nginx), or after a
body without a Content-Length. The built-in client measures them: the tests count the
connections a scripted server accepted, so that where each connection's work falls is
asserted, not assumed."""

from __future__ import annotations

import select
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from icount import procs
from icount.serve import connections
from icount.serve.adapter import Expect, PathSpec
from icount.serve.http_client import FramingError, KeepAliveClient, fetch, parse_response
from icount.spread_note import cell_notes

HOST = "127.0.0.1"
PLAIN = PathSpec("plaintext", "/plaintext", Expect(200, {}, b"Hello, World!"))
BODY = b"Hello, World!"
OK = b"HTTP/1.1 200 OK\r\nServer: %s\r\nContent-Length: 13\r\n\r\n" + BODY
CLOSING = b"HTTP/1.1 200 OK\r\nServer: %s\r\nContent-Length: 13\r\nConnection: close\r\n\r\n" + BODY
HTTP10 = b"HTTP/1.0 200 OK\r\nContent-Length: 13\r\n\r\n" + BODY
NO_LENGTH = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + BODY


@dataclass
class Scripted:
    """A server whose connections answer `reply(k)` to their k-th request (bytes, and
    whether to close after them), counting the connections it accepted."""

    reply: Callable[[int], tuple[bytes, bool]]
    accepted: int = 0
    closed: int = 0  # connections it closed
    inside: int = 0  # requests it has read and not yet answered (and closed after)
    lock: threading.Lock = field(default_factory=threading.Lock)
    expire: threading.Event = field(default_factory=threading.Event)

    def time_out(self) -> None:
        """Its idle timeout runs out now: its idle connection is closed, as a timer would
        close it (no real wait for one)."""
        closed = self.closed
        self.expire.set()
        assert procs.wait_until(lambda: self.closed > closed, 5)
        self.expire.clear()

    def idle(self) -> str | None:
        """A pace that waits, as the idle check does, until no request is inside."""
        assert procs.wait_until(lambda: self.inside == 0, 5)
        return None


Reply = Callable[[int], tuple[bytes, bool]]
Serve = Callable[..., tuple[Scripted, int]]


@pytest.fixture
def scripted() -> Iterator[Serve]:
    stop = threading.Event()
    threads: list[threading.Thread] = []
    listeners: list[socket.socket] = []

    def serve(
        reply: Reply,
        idle_reply: bytes = b"",
        reset: bool = False,
    ) -> tuple[Scripted, int]:
        """`idle_reply`: sent to an idle connection before it is closed at `time_out()` (a
        408); `reset`: closed with a reset, not an end."""
        state = Scripted(reply)
        lsock = socket.create_server((HOST, 0))
        lsock.settimeout(0.1)
        listeners.append(lsock)

        def conn_loop(conn: socket.socket) -> None:
            conn.settimeout(0.05)
            k, buf = 0, b""
            try:
                while not stop.is_set():
                    try:
                        data = conn.recv(4096)
                    except TimeoutError:
                        if state.expire.is_set():
                            conn.sendall(idle_reply)
                            return
                        continue
                    if not data:
                        break
                    with state.lock:
                        state.inside += 1
                    buf += data
                    while b"\r\n\r\n" in buf:
                        _, buf = buf.split(b"\r\n\r\n", 1)
                        k += 1
                        out, close = reply(k)
                        conn.sendall(out)
                        if close:
                            return
                    with state.lock:
                        state.inside -= 1
            finally:
                if reset:
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.close()
                with state.lock:
                    state.closed += 1
                    state.inside = 0

        def accept_loop() -> None:
            while not stop.is_set():
                try:
                    conn, _ = lsock.accept()
                except TimeoutError:
                    continue
                state.accepted += 1
                t = threading.Thread(target=conn_loop, args=(conn,), daemon=True)
                t.start()
                threads.append(t)

        t = threading.Thread(target=accept_loop, daemon=True)
        t.start()
        threads.append(t)
        return state, int(lsock.getsockname()[1])

    yield serve
    stop.set()
    for t in threads:
        t.join(5)
    for s in listeners:
        s.close()


def limit(n: int, server: bytes = b"lighttpd/1.4.69") -> Reply:
    """A keep-alive server that closes a connection after its n-th answer, and says so."""
    return lambda k: ((CLOSING if k >= n else OK) % server, k >= n)


def test_a_keep_alive_limit_is_found_and_connections_renewed(scripted: Serve) -> None:
    state, port = scripted(limit(4))
    with KeepAliveClient(HOST, port, PLAIN, 1, 5.0) as client:
        result = client.run(10)
        assert result.ok and result.completed == 10, result
        # closed after answers 4 and 8: two new connections, opened for requests 5 and 9
        assert result.connections == 2 and client.per_connection == 4
        assert client.mode == "keep-alive" and client.server_software == "lighttpd/1.4.69"
    assert state.accepted == 3


def test_fresh_connections_before_a_window_keep_its_requests_on_them(scripted: Serve) -> None:
    """`fresh()` replaces every connection and sends each one request: a window of up to
    concurrency x (limit - 1) requests then opens none; a longer one opens what it must,
    the same number in every window."""
    _, port = scripted(limit(4))
    with KeepAliveClient(HOST, port, PLAIN, 2, 5.0) as client:
        assert client.fresh() is None  # no limit known yet: nothing to do
        assert client.run(20).ok and client.per_connection == 4
        for window in (6, 6):
            primed = client.fresh()
            assert primed is not None and primed.ok and primed.completed == 2
            assert primed.connections == 2
            result = client.run(window)
            assert result.ok and result.connections == 0, result
        opened = set()
        for _ in range(3):
            client.fresh()
            result = client.run(10)
            assert result.ok
            opened.add(result.connections)
        assert opened == {2}, opened  # 10 requests on 2 x 3 left: two more connections


@pytest.mark.parametrize(
    "reply", [CLOSING % b"php", HTTP10, NO_LENGTH], ids=["close", "http10", "no-length"]
)
def test_a_server_that_closes_after_every_answer_gets_a_connection_per_request(
    scripted: Serve, reply: bytes
) -> None:
    """PHP's built-in server answers `Connection: close`; an HTTP/1.0 answer without
    keep-alive closes too, and so does a body without a Content-Length, which is read to
    the end of the connection. Every request then has its own connection, opened when it
    is sent, so that a window holds its requests' connections whole."""
    state, port = scripted(lambda k: (reply, True))
    with KeepAliveClient(HOST, port, PLAIN, 2, 5.0) as client:
        first = client.run(10)
        assert first.ok and client.per_connection == 1 and client.mode == "close", first
        assert first.connections == 8  # the two open() made served the first two
        second = client.run(10)
        assert second.ok and second.connections == 10, second
    assert state.accepted == 20


def test_a_forced_keep_alive_refuses_a_server_that_closes_each_connection(scripted: Serve) -> None:
    _, port = scripted(lambda k: (CLOSING % b"php", True))
    with KeepAliveClient(HOST, port, PLAIN, 1, 5.0) as client:
        client.connection = "keep-alive"
        result = client.run(5)
    assert not result.ok and result.completed == 1
    assert result.first_error == (
        "connection 1 was closed by the server (Connection: close) after 1 responses on it: "
        "--connection keep-alive needs a server that keeps connections open; --connection "
        "close counts each request's connection as its work"
    )


def test_a_forced_close_gives_a_keep_alive_server_a_connection_per_request(scripted: Serve) -> None:
    state, port = scripted(lambda k: (OK % b"x", False))
    with KeepAliveClient(HOST, port, PLAIN, 1, 5.0) as client:
        client.connection = "close"
        assert client.run(5).ok
        result = client.run(5)
        assert result.ok and result.connections == 5 and client.mode == "close"
        assert client.per_connection is None  # the client closed them, not the server
    assert state.accepted == 10


def test_fetch_reads_a_body_without_a_length_to_the_end(scripted: Serve) -> None:
    _, port = scripted(lambda k: (NO_LENGTH, True))
    resp = fetch(HOST, port, PLAIN, 5.0)
    assert resp.status == 200 and resp.body == BODY and not resp.keep_alive


def test_a_body_without_a_length_waits_for_the_end_and_is_bounded() -> None:
    head = b"HTTP/1.1 200 OK\r\n\r\n"
    assert parse_response(head + b"Hello") is None  # more may come
    used, resp = parse_response(head + b"Hello", eof=True) or (0, None)
    assert used == len(head) + 5 and resp is not None and resp.body == b"Hello"
    assert not resp.keep_alive
    with pytest.raises(FramingError, match="without a length is over"):
        parse_response(head + b"x" * (64 * 1024 * 1024 + 1))


@pytest.mark.parametrize(
    ("software", "setting"),
    [
        ("lighttpd/1.4.69", "lighttpd's server.max-keep-alive-requests"),
        ("Apache/2.4.57 (Debian)", "Apache's MaxKeepAliveRequests"),
        ("nginx", "nginx's keepalive_requests"),
        ("nginx/1.22.1", "nginx's keepalive_requests"),
        ("Caddy", None),
        (None, None),
    ],
)
def test_the_servers_setting_is_named_from_its_server_header(
    software: str | None, setting: str | None
) -> None:
    assert connections.setting(software) == setting


def _client(
    per_connection: int | None, software: str | None, concurrency: int = 1
) -> KeepAliveClient:
    client = KeepAliveClient(HOST, 1, PLAIN, concurrency, 1.0)
    client.per_connection = per_connection
    client.server_software = software
    return client


def test_a_limit_below_the_window_says_how_many_connections_it_opens() -> None:
    said = connections.Said()
    connections.describe(_client(100, "Apache/2.4.57 (Debian)", 2), 1000, 4, said)
    assert said.connection is None
    assert said.notes == [
        "the server closed each connection after 100 requests (Apache's "
        "MaxKeepAliveRequests): every window started on new connections, opened and sent "
        "one request before it; 4 more opened inside each window (2 connections x 99 "
        "requests left < 1000), their accept and close counted with its requests: raise "
        "Apache's MaxKeepAliveRequests above --requests to keep them out"
    ]


def test_an_unknown_server_and_a_server_that_keeps_its_connections() -> None:
    said = connections.Said()
    connections.describe(_client(None, "nginx"), 1000, 0, said)
    assert said.notes == [] and said.connection is None  # nothing to say
    connections.describe(_client(50, "Caddy"), 1000, 20, said)
    (note,) = said.notes
    assert note.startswith("the server closed each connection after 50 requests: every ")
    assert note.endswith("raise its keep-alive limit above --requests to keep them out")


def test_a_server_that_closes_each_connection_is_recorded_as_close() -> None:
    said = connections.Said()
    connections.describe(_client(1, "PHP"), 1000, 1000, said)
    assert said.connection == "close"
    (note,) = said.notes
    assert note.startswith("the server closed every connection after one answer")
    forced = connections.Said()
    client = _client(None, None)
    client.connection = "close"
    connections.describe(client, 1000, 1000, forced)
    assert forced.connection == "close" and forced.notes[0].startswith("--connection close: ")


def test_a_cells_notes_are_read_escaped_and_what_is_not_text_left_out() -> None:
    assert cell_notes({}) == [] and cell_notes({"notes": "one line"}) == []
    assert cell_notes({"notes": ["a\nb\x1b[31m", 3, None, "c"]}) == ["a\\nb\\x1b[31m", "c"]


def test_a_connection_closed_while_idle_is_replaced_before_the_window(scripted: Serve) -> None:
    """A keep-alive idle timeout that runs out while the client is away (a window's dumps):
    finds the connection closed before the next window and replaces it outside it, sent
    one request; not a keep-alive limit, and the window runs on the new connection."""
    state, port = scripted(lambda k: (OK % b"lighttpd/1.4.69", False))
    with KeepAliveClient(HOST, port, PLAIN, 1, 5.0) as client:
        assert client.run(5).ok
        state.time_out()
        primed = client.fresh()
        assert primed is not None and primed.ok and primed.connections == 1
        result = client.run(5)
        assert result.ok and result.connections == 0, result
        assert (client.idle_closes, client.per_connection, client.mode) == (1, None, "keep-alive")
        said = connections.Said()
        connections.describe(client, 5, 0, said)
    assert said.notes == [
        "the server closed idle connections while the client was away (a keep-alive idle "
        "timeout, not a limit): from then on every connection was reopened and sent one "
        "request before each window, outside it, and a window whose connection closed while "
        "idle before its first request was taken again"
    ]
    assert state.accepted == 2


def test_a_connection_closed_between_runs_is_replaced_when_the_next_run_sends(
    scripted: Serve,
) -> None:
    """Without fresh() (a warm-up's run after another), the first request of a run on a
    connection closed since finds it closed, and opens a new one."""
    state, port = scripted(lambda k: (OK % b"x", False))
    with KeepAliveClient(HOST, port, PLAIN, 1, 5.0) as client:
        assert client.run(3).ok
        state.time_out()
        result = client.run(3)
        assert result.ok and result.connections == 1, result
        assert (client.idle_closes, client.per_connection) == (1, None)


def test_an_unannounced_limit_is_found_by_a_paced_client(scripted: Serve) -> None:
    """A server that closes after 4 answers without Connection: close. Paced, the client
    sends only once the server is idle, so it has closed by then: the close is seen
    before the request goes, and a new connection takes it (the limit is found)."""
    box: list[Scripted] = []
    state, port = scripted(lambda k: (OK % b"lighttpd/1.4.69", k >= 4))
    box.append(state)
    with KeepAliveClient(HOST, port, PLAIN, 1, 5.0, lambda: box[0].idle()) as client:
        result = client.run(10)
        assert result.ok and result.completed == 10, result
        assert (client.per_connection, client.idle_closes, result.connections) == (4, 0, 2)
    assert state.accepted == 3


@pytest.mark.parametrize("reset", [False, True])
def test_an_unannounced_limit_met_by_an_unpaced_client_sends_the_request_again(
    scripted: Serve, reset: bool
) -> None:
    """A server that closes after 4 answers without Connection: close (with an end, or a
    reset), and a client that sends the next request as soon as an answer is in (a
    warm-up): the request meets the close with no byte of its answer, and goes again on a
    new connection, the limit learnt."""
    state, port = scripted(lambda k: (OK % b"lighttpd/1.4.69", k >= 4), reset=reset)
    with KeepAliveClient(HOST, port, PLAIN, 1, 5.0) as client:
        result = client.run(10)
        assert result.ok and result.completed == 10, result
        assert (client.per_connection, client.idle_closes, result.connections) == (4, 0, 2)
    assert state.accepted == 3


def test_a_close_at_a_limit_found_between_runs_is_the_limits_once_it_is_learnt(
    scripted: Serve,
) -> None:
    """A limit of 4 met at a run's last answer is found at the next peek, as an idle close
    would be; once a run learns the limit of 4, that close counts as the limit's."""
    state, port = scripted(lambda k: (OK % b"x", k >= 4))
    with KeepAliveClient(HOST, port, PLAIN, 1, 5.0) as client:
        assert client.run(4).ok
        assert procs.wait_until(lambda: state.closed == 1, 5)
        primed = client.fresh()
        assert primed is not None and primed.ok and client.idle_closes == 1
        assert client.run(6).ok  # 3 left on the connection fresh() opened: the limit shows
        assert (client.per_connection, client.idle_closes) == (4, 0)


def test_bytes_an_idle_connection_is_sent_before_its_end_are_an_idle_close(
    scripted: Serve,
) -> None:
    """A server that answers an idle connection with 408 Request Timeout and closes it:
    fresh() reads the 408 and the end, and replaces the connection as an idle close."""
    timeout = b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    state, port = scripted(lambda k: (OK % b"x", False), idle_reply=timeout)
    with KeepAliveClient(HOST, port, PLAIN, 1, 5.0) as client:
        assert client.run(3).ok
        state.time_out()
        primed = client.fresh()
        assert primed is not None and primed.ok and primed.connections == 1, primed
        assert client.run(3).ok
        assert (client.idle_closes, client.per_connection) == (1, None)


def test_bytes_an_idle_connection_is_sent_without_an_end_refuse_the_next_request() -> None:
    """Bytes on a connection with no request on it, the connection still open: read at the
    next run's peek, they refuse its request as bytes nobody asked for."""
    answered = threading.Event()
    with socket.create_server((HOST, 0)) as lsock:

        def serve() -> None:
            conn, _ = lsock.accept()
            with conn:
                while b"\r\n\r\n" not in conn.recv(4096):
                    pass
                conn.sendall(OK % b"x")
                answered.wait(5)
                conn.sendall(b"junk")
                conn.recv(4096)  # open until the client is done

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        with KeepAliveClient(HOST, int(lsock.getsockname()[1]), PLAIN, 1, 5.0) as client:
            assert client.run(1).ok
            answered.set()
            assert select.select([client._socks[0]], [], [], 5)[0]
            result = client.run(1)
        t.join(5)
    assert not result.ok and result.first_error == (
        "connection 1 unusable: 4 bytes nobody asked for after 1 responses on it"
    ), result


def test_a_forced_keep_alive_refuses_a_server_that_closes_each_connection_unannounced(
    scripted: Serve,
) -> None:
    """The same server saying nothing of its closes: the request after the first answer
    meets the end (or a reset), and is not sent again where keep-alive was asked for."""
    state, port = scripted(lambda k: (OK % b"x", True))
    with KeepAliveClient(HOST, port, PLAIN, 1, 5.0) as client:
        client.connection = "keep-alive"
        result = client.run(5)
    assert not result.ok and result.completed == 1
    assert (result.first_error or "").startswith("connection 1 ")
    assert (result.first_error or "").endswith(
        "after 1 responses on it: --connection keep-alive needs a server that keeps "
        "connections open; --connection close counts each request's connection as its work"
    ), result
    assert state.accepted == 1
