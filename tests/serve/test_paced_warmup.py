"""Under idle arrival the last quarter of a warm-up (at most 5,000 requests) reaches an idle
server, as the counted requests will (serve/window.py `warm`): the rest goes as fast as
the answers come, and a staggered warm-up's tail is the one paced where it is long
enough."""

from __future__ import annotations

import pytest

from icount.serve import window as window_mod
from icount.serve.http_client import KeepAliveClient, LoadResult


def _client(paced: bool) -> KeepAliveClient:
    client = object.__new__(KeepAliveClient)  # no connection: `_load` is recorded instead
    client.pace = (lambda: None) if paced else None
    return client


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    calls: list[tuple[int, bool]] = []

    def load(server: object, client: KeepAliveClient, n: int, what: str) -> LoadResult:
        calls.append((n, client.pace is not None))
        return object.__new__(LoadResult)

    monkeypatch.setattr(window_mod, "load", load)
    return calls


def test_the_last_quarter_is_paced_and_the_pace_is_given_back(
    sent: list[tuple[int, bool]],
) -> None:
    client = _client(paced=True)
    pace = client.pace
    window_mod.warm(None, client, 20_000, "warm-up", window_mod.paced_tail(20_000, 0)[0])  # type: ignore[arg-type]
    assert sent == [(15_000, False), (5_000, True)]
    assert client.pace is pace
    window_mod.warm(None, client, 8, "warm-up", 20)  # type: ignore[arg-type]
    window_mod.warm(None, client, 8, "warm-up", 0)  # type: ignore[arg-type]
    assert sent[2:] == [(8, True), (8, False)] and client.pace is pace


def test_a_closed_loop_sends_every_warm_up_request_at_once(sent: list[tuple[int, bool]]) -> None:
    window_mod.warm(None, _client(paced=False), 20_000, "warm-up", 5_000)  # type: ignore[arg-type]
    assert sent == [(20_000, False)]


@pytest.mark.parametrize(
    ("warmup", "extra", "tails"),
    [
        (20_000, 0, (5_000, 0)),
        (100, 30_000, (0, 5_000)),  # go-http's second run: the staggered part's, capped
        (10_000, 1_000, (1_750, 1_000)),  # a short stagger: paced whole, and the rest before
        (100, 0, (25, 0)),
        (3, 0, (0, 0)),
    ],
)
def test_the_tail_is_taken_from_the_end_of_both(
    warmup: int, extra: int, tails: tuple[int, int]
) -> None:
    assert window_mod.paced_tail(warmup, extra) == tails
