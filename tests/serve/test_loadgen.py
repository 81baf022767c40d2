"""External load tools: parsers on recorded real output, and live runs where installed.

fixtures/loadgen/*.txt are real h2load / ab / wrk outputs against c-epoll with fault
flags; each NAME.cmd next to them holds the server flags, the command and its exit
status (fixtures/loadgen/record.sh re-records them all).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icount import procs
from icount.errors import ParseError, ToolMissingError, UsageError
from icount.serve.adapter import Expect, PathSpec
from icount.serve.http_client import KeepAliveClient
from icount.serve.loadgen import (
    default_load_kind,
    make_load_generator,
    parse_ab,
    parse_h2load,
    parse_oha,
    parse_wrk,
)

from .conftest import HOST, StartServer

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "loadgen"
PLAIN = PathSpec("plaintext", "/plaintext", Expect(200, {}, b"Hello, World!"))


def fixture(name: str) -> str:
    return (FIX / f"{name}.txt").read_text()


def test_recorded_commands_match_the_parsed_counts() -> None:
    # The request counts the parsers read are the ones each recorded command asked for.
    for name, n in (("h2load_ok", 2000), ("ab_ok", 2000), ("h2load_500", 100), ("ab_500", 100)):
        assert f"-n {n} " in (FIX / f"{name}.cmd").read_text()


def test_h2load_ok() -> None:
    r = parse_h2load(fixture("h2load_ok"), 200)
    assert (r.requested, r.completed, r.failed, r.first_error) == (2000, 2000, 0, None)
    assert r.ok and 0 < r.wall_s < 1  # "finished in 27.57ms" or similar


def test_h2load_500_and_404() -> None:
    r = parse_h2load(fixture("h2load_500"), 200)
    assert (r.completed, r.failed) == (0, 100)
    assert r.first_error == (
        "h2load: 100 of 100 done, 0 errored, 0 timed out; status codes: 100 5xx (expected 200)"
    )
    # A path that is meant to answer 404: h2load calls those failed; icount does not.
    r404 = parse_h2load(fixture("h2load_404"), 404)
    assert (r404.completed, r404.failed, r404.ok) == (100, 0, True)


def test_h2load_crash() -> None:
    r = parse_h2load(fixture("h2load_crash"), 200)
    assert (r.requested, r.completed, r.failed) == (100, 50, 50)
    assert r.first_error is not None and "50 of 100 done, 50 errored" in r.first_error


def test_ab_ok_500_crash() -> None:
    ok = parse_ab(fixture("ab_ok"), 2000)
    assert (ok.completed, ok.failed, ok.first_error) == (2000, 0, None)
    bad = parse_ab(fixture("ab_500"), 100)
    assert (bad.completed, bad.failed) == (0, 100)
    assert bad.first_error == "ab: 100 of 100 complete, 0 failed, 100 non-2xx responses"
    crash = parse_ab(fixture("ab_crash"), 100)
    assert (crash.completed, crash.failed) == (50, 50)
    assert crash.first_error == "ab: apr_socket_recv: Connection reset by peer (104)"


def test_wrk_reports() -> None:
    ok = parse_wrk(fixture("wrk_ok"))
    assert ok.ok and ok.requested == ok.completed > 1000 and ok.wall_s == pytest.approx(1.1)
    bad = parse_wrk(fixture("wrk_500"))
    assert bad.completed == 0 and bad.failed == bad.requested > 0
    crash = parse_wrk(fixture("wrk_crash"))
    assert crash.completed == 50 and crash.failed > 0
    assert crash.first_error is not None and "socket errors: connect 0, read" in crash.first_error


def oha_report(codes: dict[str, int], errors: dict[str, int]) -> str:
    """The parts of oha's `--output-format json` report the parser reads, as documented by
    schema.json of hatoo/oha (oha is not installed here: no recorded real output)."""
    summary = {"successRate": 1.0, "total": 0.25, "slowest": 0.01, "fastest": 0.001,
               "average": 0.002, "requestsPerSec": 4000.0, "totalData": 1300,
               "sizePerRequest": 13, "sizePerSec": 5200.0}  # fmt: skip
    return json.dumps({"summary": summary, "statusCodeDistribution": codes,
                       "errorDistribution": errors})  # fmt: skip


def test_oha_documented_report() -> None:
    ok = parse_oha(oha_report({"200": 1000}, {}), 1000, 200)
    assert (ok.completed, ok.failed, ok.first_error, ok.wall_s) == (1000, 0, None, 0.25)
    bad = parse_oha(oha_report({"200": 10, "500": 88}, {"connection closed": 2}), 100, 200)
    assert (bad.completed, bad.failed) == (10, 90)
    assert bad.first_error == (
        "oha: status codes 10 x 200, 88 x 500 (expected 200); 2 errors, e.g. 2 x connection closed"
    )
    with pytest.raises(ParseError, match="not oha's JSON report"):
        parse_oha('{"summary": {}}', 10, 200)


@pytest.mark.parametrize(
    ("parse", "text"),
    [
        (lambda t: parse_h2load(t, 200), "connect: Connection refused\n"),
        (lambda t: parse_h2load(t, 200), ""),
        (lambda t: parse_ab(t, 10), "This is ApacheBench\n"),
        (parse_wrk, "unable to connect to 127.0.0.1:1 Connection refused\n"),
    ],
)
def test_unparseable_output_is_parse_error(parse: object, text: str) -> None:
    assert callable(parse)
    with pytest.raises(ParseError):
        parse(text)


def test_factory_errors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown load generator 'siege'"):
        make_load_generator("siege", HOST, 1, PLAIN, 1, 1.0, [])
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing installed
    for kind in ("h2load", "ab", "wrk", "oha"):
        with pytest.raises(ToolMissingError, match=f"{kind} not found on PATH"):
            make_load_generator(kind, HOST, 1, PLAIN, 1, 1.0, [])
    assert isinstance(make_load_generator("builtin", HOST, 1, PLAIN, 1, 1.0, []), KeepAliveClient)


def test_ab_refuses_a_non_2xx_expectation() -> None:
    if procs.which("ab") is None:
        pytest.skip("ab is not installed (apt-get install apache2-utils)")
    not_found = PathSpec("missing", "/missing", Expect(404))
    with pytest.raises(UsageError, match="ab tells only 2xx from other answers"):
        make_load_generator("ab", HOST, 1, not_found, 1, 1.0, [])


def test_default_kind() -> None:
    kind, why = default_load_kind(instrumented=True)
    assert kind == "builtin" and "server is the bottleneck" in why
    kind, why = default_load_kind(instrumented=False)
    assert kind in ("builtin", "h2load") and "scripts/bench_client.py" in why


@pytest.mark.parametrize("kind", ["h2load", "ab"])
def test_live_exact_tools(kind: str, c_server: StartServer) -> None:
    if procs.which(kind) is None:
        pytest.skip(f"{kind} is not installed")
    port = c_server()
    gen = make_load_generator(kind, HOST, port, PLAIN, 4, 5.0, [])
    gen.open()
    result = gen.run(500)
    gen.close()
    assert (result.requested, result.completed, result.failed, result.ok) == (500, 500, 0, True)
    assert gen.request_bytes is None and gen.name == kind
    crashing = c_server("--crash-after", "30")
    bad = make_load_generator(kind, HOST, crashing, PLAIN, 1, 5.0, []).run(100)
    assert not bad.ok and bad.first_error
    if kind == "h2load":
        assert (bad.completed, bad.failed) == (30, 70)
    else:  # ab's own count when it stops may include the request that failed
        assert bad.completed in (30, 31) and bad.first_error.startswith("ab: apr_socket_recv: ")


@pytest.mark.slow  # wrk runs for a duration (1 s at the least), not a request count
def test_live_wrk(c_server: StartServer) -> None:
    if procs.which("wrk") is None:
        pytest.skip("wrk is not installed (apt-get install wrk)")
    port = c_server()
    gen = make_load_generator("wrk", HOST, port, PLAIN, 2, 5.0, [])
    result = gen.run(1000)  # duration-based: about 1 s, however many that is
    assert result.ok and result.completed > 0
    status500 = c_server("--status", "500")
    bad = make_load_generator("wrk", HOST, status500, PLAIN, 2, 5.0, []).run(100)
    assert not bad.ok and bad.completed == 0
