"""The advice `--warmup auto` gives when it gives up, followed on the same constructed
server: the suggested warm-up gives reps that are no longer warming up, and the
suggested longer windows average a collector's noise to within the limit."""

from __future__ import annotations

import re

import pytest

from icount.serve import warmup
from icount.serve.warmup import WarmupFailed
from icount.stats import summarize
from tests.serve.test_warmup import Curve


def _slow_decay(i: int) -> float:
    return 1000.0 + 2000.0 * float(0.5 ** (i / 20000))


def _collector(i: int) -> float:
    """A collection every 1000 requests, alternately small and large: 1000-request
    windows hold one of either, 1050 or 1150 per request, and never agree."""
    if i % 1000:
        return 1000.0
    return 1000.0 + (50000.0 if (i // 1000) % 2 else 150000.0)


def test_the_suggested_warmup_gives_reps_that_have_settled() -> None:
    refused = Curve(_slow_decay)
    with pytest.raises(WarmupFailed) as info:
        warmup.auto_warmup(refused.probe, refused.warm, 100, 0.01, lambda s: None)
    n = int(re.search(r"try --warmup (\d+)$", str(info.value)).group(1))  # type: ignore[union-attr]
    server = Curve(_slow_decay)
    server.warm(n)
    reps = [server.probe(100) for _ in range(3)]
    assert warmup.still_warming(reps, 0.01) is None
    assert summarize(reps).spread < 0.01


def test_the_suggested_longer_windows_average_the_collector() -> None:
    server = Curve(_collector)
    with pytest.raises(WarmupFailed) as info:
        warmup.auto_warmup(server.probe, server.warm, 1000, 0.01, lambda s: None)
    message = str(info.value)
    assert "its windows differ by 8.70%" in message
    n = int(re.search(r"--requests (\d+) or more", message).group(1))  # type: ignore[union-attr]
    assert n == 18000
    fresh = Curve(_collector)
    fresh.warm(info.value.curve[-1][0])
    reps = [fresh.probe(n) for _ in range(3)]
    assert summarize(reps).spread < 0.01 / 2, reps  # half the limit: room to spare
    again = Curve(_collector)  # and --warmup auto with those windows settles
    served, _ = warmup.auto_warmup(again.probe, again.warm, n, 0.01, lambda s: None)
    assert served > 0
