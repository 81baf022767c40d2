"""Go's runtime work on recorded go-http windows: the scheduler's wait for a request that
has not arrived yet is counted apart from the collector and from the request's own work
(fixtures/go/README.md)."""

from __future__ import annotations

from pathlib import Path

from icount import runtimes
from icount.callgrind.parser import parse_bytes, parse_file

GO_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "go"


def per_request(name: str, requests: int) -> tuple[float, runtimes.RuntimeWork]:
    prof = parse_file(GO_FIXTURES / name)
    total = int(prof.self_cost[:, prof.event_index("Ir")].sum())
    return total / requests, runtimes.runtime_work(prof)


def test_the_scheduler_waiting_for_each_request_is_counted_apart_from_the_request() -> None:
    """Two windows of one go-http plaintext build: a client that sends each request as
    soon as it has the answer (most requests already there when the server reads), and
    one that sleeps 2 ms first (the server waits for every one). The whole counts differ
    by 8.4%; what is left once the collector and the scheduler are out differs by 0.4%."""
    answered_total, answered = per_request("plaintext-answered.callgrind", 10_000)
    waited_total, waited = per_request("plaintext-waited.callgrind", 5_000)
    assert answered.runtime == waited.runtime == "go"
    assert waited_total / answered_total > 1.08
    rest_answered = answered_total - (answered.collector + answered.scheduler) / 10_000
    rest_waited = waited_total - (waited.collector + waited.scheduler) / 5_000
    assert abs(rest_waited / rest_answered - 1) < 0.005
    # the difference is the scheduler's, not the collector's: the collector reads the same
    moved = waited.scheduler / 5_000 - answered.scheduler / 10_000
    assert moved > 0.9 * (waited_total - answered_total)
    assert abs(waited.collector / 5_000 - answered.collector / 10_000) < 20
    assert answered.compiler == waited.compiler == 0


def test_scheduler_functions_are_not_the_collectors_nor_the_requests() -> None:
    """Each Go function goes to one kind: findRunnable and netpoll (its recursive
    activation too) to the scheduler, scanobject to the collector, the handler and
    mallocgc to the request."""
    prof = parse_bytes(
        b"# callgrind format\nevents: Ir\n"
        b"fn=runtime.mallocgc\n0 40\n"
        b"fn=runtime.findRunnable\n0 30\n"
        b"fn=runtime.netpoll\n0 8\n"
        b"fn=runtime.netpoll'2\n0 2\n"
        b"fn=runtime.scanobject\n0 20\n"
        b"fn=main.handler\n0 100\n",
        "go",
    )
    work = runtimes.runtime_work(prof)
    assert (work.runtime, work.collector, work.compiler, work.scheduler) == ("go", 20, 0, 40)


def test_no_other_runtime_names_scheduler_work() -> None:
    """Only Go's entry has the scheduler's kind: elsewhere the field stays 0, so the
    runtimes measured before read as they did."""
    for runtime in runtimes.TABLE:
        kinds = {e.kind for e in runtime.entries}
        assert (runtimes.SCHEDULER in kinds) == (runtime.name == "go")
