"""serve's options object: the ServeRequest built once from the typer parameters, read by
name (icount/cli/measure_options.py), with the defaults typer declares for them."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest

from icount.cli import cmd_interleave, cmd_serve
from icount.cli.measure_options import _MEASURE, MEASURE_OPTIONS, serve_request
from icount.errors import UsageError
from icount.serve.plan import ServeRequest
from icount.session import options as o


def test_the_defaults_typer_declares_make_the_default_request() -> None:
    declared = {param: spec[0] for param, spec in _MEASURE.items()}
    assert serve_request(**declared) == serve_request() == ServeRequest()


def test_serve_reads_every_measure_option_by_name() -> None:
    """serve_command passes each of MEASURE_OPTIONS to serve_request under its own name,
    and serve_request takes each: none is read back from the context."""
    taken = inspect.signature(serve_request).parameters
    assert set(MEASURE_OPTIONS) <= set(taken)
    source = inspect.getsource(cmd_serve.serve_command)
    assert "ctx.params" not in source
    for param in MEASURE_OPTIONS:
        assert f"{param}={param}," in source, param


def test_the_text_of_each_option_becomes_its_typed_value() -> None:
    request = serve_request(
        warmup="auto",
        server_cpus="0-1",
        load_cpus="3",
        arrival="closed",
        connection="close",
        max_spread="2%",
        processes="root",
        collector=["gc_.*"],
        targets=("a",),
        runs=5,
    )
    assert request.warmup == o.AUTO
    assert (request.server_cpus, request.load_cpus) == ((0, 1), (3,))
    assert (request.arrival, request.connection) == (o.Arrival.CLOSED, "close")
    assert (request.max_spread, request.processes) == (0.02, o.Processes.ROOT)
    assert (request.collectors, request.targets, request.runs) == (("gc_.*",), ("a",), 5)
    assert serve_request(warmup="250").warmup == o.Warmup(250)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"warmup": "lots"}, "--warmup takes a request count or 'auto', got 'lots'"),
        ({"arrival": "soon"}, "--arrival takes idle or closed, got 'soon'"),
        ({"processes": "some"}, "--processes takes all or root, got 'some'"),
        ({"idle_seconds": -1.0}, "--idle-seconds takes 0 to 600 seconds"),
        ({"max_windows": 0}, "--max-windows takes 1 to 1000 windows, got 0"),
        ({"server_cpus": "x"}, "--server-cpus"),
    ],
)
def test_a_bad_value_is_refused_when_the_request_is_made(
    given: dict[str, Any], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        serve_request(**given)


def test_interleave_reads_the_measure_options_it_takes_by_name() -> None:
    """interleave_command passes each of serve's measure options it declares to
    serve_request under its own name, as serve does; the others keep serve's defaults."""
    declared = inspect.signature(cmd_interleave.interleave_command).parameters
    taken = [param for param in MEASURE_OPTIONS if param in declared]
    assert {"reps", "warmup", "arrival", "collector"} <= set(taken)
    source = inspect.getsource(cmd_interleave.interleave_command)
    assert "ctx.params" not in source
    for param in taken:
        assert f"{param}={param}," in source, param
    # its declared defaults make serve's default request
    defaults = {param: declared[param].default.default for param in taken}
    assert serve_request(**defaults) == ServeRequest()


def test_the_saved_request_is_as_before() -> None:
    """The provenance --resume reads back: every option under its recorded name and form."""
    request = serve_request(warmup="auto", max_spread="2%", processes="root", arrival="idle")
    saved = request.to_json(())
    expected: dict[str, Any] = {
        "runs": 3, "reps": 3, "requests": None, "warmup": "auto", "concurrency": 1,
        "load": None, "arrival": "idle", "connection": "auto", "max_spread": "2%",
        "backend": "auto", "thread": None, "processes": "root",
        "warmup_instrumented": False, "idle_seconds": 1.0, "cold_start": False,
        "memory": False, "profile_top": 20, "collectors": [], "max_windows": 20,
        "max_extra_seconds": 120.0, "targets": [], "cmd": None,
    }  # fmt: skip
    assert json.dumps(saved) == json.dumps(expected)
