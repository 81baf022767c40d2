"""A window's edges under idle arrival (serve/arrival.settle): the client waits for an
idle server before the window opens and before it closes, as before a request, so that
neither edge falls in the tail of a request; one that never comes refuses the window
with the reason. Under closed arrival nothing waits."""

from __future__ import annotations

import time

import pytest

from icount.backends.protocol import WindowCount
from icount.serve import server as server_mod
from icount.serve.http_client import KeepAliveClient
from icount.serve.server import RunInvalid
from icount.serve.window import count_window

from .conftest import HOST, StartServer
from .test_arrival import PLAIN


class _Edges:
    """A server whose windows only record when they open and close."""

    close_latency_s = 0.0

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.opened_at = 0.0

    def open_window(self) -> None:
        self.events.append("open")
        self.opened_at = time.monotonic()

    def close_window(self) -> WindowCount:
        self.events.append("close")
        return WindowCount(1e6)

    def uncounted(self) -> list[str]:
        return []

    def alive(self) -> bool:
        return True


def test_each_edge_waits_for_an_idle_server(c_server: StartServer) -> None:
    port = c_server()
    events: list[str] = []

    def pace() -> str | None:
        events.append("idle")
        return None

    with KeepAliveClient(HOST, port, PLAIN, 1, 5.0, pace) as client:
        count_window(_Edges(events), client, 3, "rep 1", None)  # type: ignore[arg-type]
    # before the open, before each of the 3 requests, before the close
    assert events == ["idle", "open", "idle", "idle", "idle", "idle", "close"]


def test_closed_arrival_does_not_wait_at_the_edges(c_server: StartServer) -> None:
    port = c_server()
    events: list[str] = []
    with KeepAliveClient(HOST, port, PLAIN, 1, 5.0, None) as client:
        count_window(_Edges(events), client, 3, "rep 1", None)  # type: ignore[arg-type]
    assert events == ["open", "close"]


def test_a_server_never_idle_at_the_close_refuses_the_window(
    c_server: StartServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_mod, "EXIT_WAIT_S", 0.0)  # alive: nothing to wait for
    port = c_server()
    events: list[str] = []

    def pace() -> str | None:
        events.append("idle")
        return "the server was never idle within 5 s" if events.count("idle") == 5 else None

    with KeepAliveClient(HOST, port, PLAIN, 1, 5.0, pace) as client, pytest.raises(RunInvalid) as e:
        count_window(_Edges(events), client, 3, "rep 1", None)  # type: ignore[arg-type]
    assert str(e.value) == (
        "rep 1: before the window's close: the server was never idle within 5 s"
    )
    assert events == ["idle", "open", "idle", "idle", "idle", "idle"]
