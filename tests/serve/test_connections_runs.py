"""Servers that close connections, through a whole run (`measure_run`: verify, warm-up,
windows): one that closes a keep-alive connection at a limit it does not announce, and
one whose idle timeout runs out while a window's edge is taken. The server is the fake
backend's, counting each connection it accepts as work, so that an accept inside a
window moves the figure as a real server's does."""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from icount.backends.protocol import Server
from icount.serve import adapter as adapters
from icount.serve.cell_options import CellOptions
from icount.serve.runs import RunOutcome, measure_run
from icount.serve.server import Target
from icount.session.options import Warmup
from tests.serve.test_runs import ADAPTER, SPLIT
from tests.support import fake_backend
from tests.support.fake_backend import BODIES, FakeBackend, FakeConfig, FakeServer

ACCEPT = 5000.0  # the work of a connection's accept and close, in the server's count
PER_REQUEST = 1000.0 + 27.0 / 100  # the fake's cost a request, its window cost shared


@dataclass
class Closes:
    """How the server closes connections. `limit`: after that many answers, without
    saying so; `idle_at_open`: which window openings (1, 2, ...) find every idle
    connection closed, as an idle timeout that runs out while a window's edge is taken."""

    limit: int | None = None
    idle_at_open: Sequence[int] = ()
    accepted: int = 0
    idle: dict[socket.socket, bool] = field(default_factory=dict)  # open connection: idle
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(socketserver.BaseRequestHandler):
    server: _HTTP

    def handle(self) -> None:
        owner, closes = self.server.owner, self.server.closes
        with owner._lock:
            owner.total += ACCEPT
        closes.accepted += 1
        with closes.lock:
            closes.idle[self.request] = True
        answers, data = 0, b""
        try:
            while closes.limit is None or answers < closes.limit:
                while b"\r\n\r\n" not in data:
                    chunk = self.request.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                with closes.lock:
                    closes.idle[self.request] = False
                head, data = data.split(b"\r\n\r\n", 1)
                _, body = BODIES[head.split(b" ", 2)[1]]
                owner.served()
                with closes.lock:  # idle before the answer is out: the client may go on
                    closes.idle[self.request] = True
                self.request.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                answers += 1
        except OSError:
            return
        finally:
            with closes.lock:
                closes.idle.pop(self.request, None)


class _HTTP(fake_backend._HTTP):
    def __init__(self, port: int, owner: FakeServer, closes: Closes) -> None:
        self.owner = owner
        self.closes = closes
        socketserver.ThreadingTCPServer.__init__(self, ("127.0.0.1", port), _Handler)


class ClosingServer(FakeServer):
    def __init__(self, argv: Sequence[str], run_dir: Path, config: FakeConfig, closes: Closes):
        super().__init__(argv, run_dir, config)
        assert self._http is not None
        port = self._http.server_address[1]
        self._http.shutdown()
        self._http.server_close()
        self.closes = closes
        http = _HTTP(port, self, closes)
        self._http = http
        threading.Thread(target=http.serve_forever, args=(0.005,), daemon=True).start()

    def open_window(self) -> None:
        if self.windows + 1 in self.closes.idle_at_open:
            with self.closes.lock:
                idle = [s for s, waits in self.closes.idle.items() if waits]
            for sock in idle:
                sock.shutdown(socket.SHUT_RDWR)  # the end reaches the client at once
        super().open_window()


class ClosingBackend(FakeBackend):
    def __init__(self, closes: Closes) -> None:
        super().__init__(FakeConfig())
        self.closes = closes

    def start_server(self, argv: Sequence[str], run_dir: Path, **kw: object) -> Server:
        return ClosingServer(argv, run_dir, self.config, self.closes)


def run(tmp_path: Path, closes: Closes, requests: int = 100, warmup: int = 20) -> RunOutcome:
    (tmp_path / "adapter.toml").write_text(ADAPTER)
    target = Target(adapters.load_adapter(tmp_path / "adapter.toml"), tmp_path / "build")
    opts = CellOptions(backend=ClosingBackend(closes), cpus=SPLIT, runs=1, reps=3,
                       requests=requests, warmup=Warmup(warmup), idle_seconds=0)  # fmt: skip
    return measure_run(target, target.adapter.paths[0], opts, tmp_path / "run-1", None, print)


def per_request(outcome: RunOutcome) -> list[float]:
    assert outcome.detail is not None, outcome.reason
    return [r.instructions / r.requests for r in outcome.detail.reps]


def test_an_unannounced_limit_met_in_the_warm_up_is_learnt_and_the_request_sent_again(
    tmp_path: Path,
) -> None:
    """A limit of 7 answers, said nowhere: the warm-up (never paced) sends its 8th request
    on the connection the server closes, meets the end with no byte of an answer, and sends
    it again on a new one. Every window then starts on fresh connections, and the same
    number open inside each."""
    outcome = run(tmp_path, Closes(limit=7))
    assert outcome.reason is None, outcome.reason
    figures = per_request(outcome)
    assert len(set(figures)) == 1, figures
    # 6 on the connection opened and sent 1 before each window, then 94 on new ones of
    # 7: 14 inside
    assert figures[0] == pytest.approx(PER_REQUEST + 14 * ACCEPT / 100)
    assert any(
        "closed each connection after 7 requests" in n and "14 more opened inside" in n
        for n in outcome.notes
    ), outcome.notes


def test_a_connection_closed_while_idle_during_a_windows_edge_is_not_counted_in_it(
    tmp_path: Path,
) -> None:
    """The server's idle timeout runs out while the first window's edge is taken: its
    first request would reopen the connection inside it, its accept counted. The window is
    taken again on connections reopened before it, and each window counts its requests
    only; the notes say the reopenings were outside the windows."""
    closes = Closes(idle_at_open=(1,))
    outcome = run(tmp_path, closes)
    assert outcome.reason is None, outcome.reason
    assert per_request(outcome) == pytest.approx([PER_REQUEST] * 3)
    assert any("taken again" in n and "outside it" in n for n in outcome.notes), outcome.notes
    # readiness's and verify's, the client's, the one reopened inside the first window
    # (taken again), then one before each window
    assert closes.accepted == 2 + 1 + 1 + 3


def test_a_server_whose_idle_timeout_always_runs_out_at_the_edge_is_refused(
    tmp_path: Path,
) -> None:
    """Every window's edge outlasts the idle timeout: the run is refused, naming it."""
    outcome = run(tmp_path, Closes(idle_at_open=range(1, 100)))
    assert outcome.value is None and outcome.reason is not None
    assert outcome.reason.startswith(
        "rep 1: the server closed an idle connection before the window's first request 3 "
        "times in a row, idle at most "
    ), outcome.reason
    assert "its keep-alive idle timeout is shorter than that" in outcome.reason


def test_a_limit_met_at_the_warm_ups_last_answer_is_not_called_an_idle_timeout(
    tmp_path: Path,
) -> None:
    """A limit of 21 and a warm-up of 21: the close comes after the warm-up's last answer
    and is found before the first window, as an idle close would be. The window's requests
    show the limit, and the notes name it, not an idle timeout."""
    outcome = run(tmp_path, Closes(limit=21), warmup=21)
    assert outcome.reason is None, outcome.reason
    assert any("closed each connection after 21 requests" in n for n in outcome.notes)
    assert not any("idle" in n for n in outcome.notes), outcome.notes
