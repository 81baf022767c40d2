"""Adapter files mutated at random: every one loads, or is refused with one ParseError
naming it; what loads expands (placeholders, {render:FILE}, env, binary) without any
other exception, and never reads a file outside the adapter's folder.

The inputs are the bundled adapters, copied with their folders. A mutation either
changes the TOML text (bytes replaced, cut, repeated) or replaces one value of the
parsed document with a value of another kind or at an edge (placeholders, paths that
climb out, inf/nan, huge integers, Unicode digits), written back as TOML.
"""

from __future__ import annotations

import json
import math
import random
import re
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icount.errors import ParseError
from icount.serve import adapter as adapters
from tests.support.mutate import replace, slots

BUNDLED = adapters.bundled_adapter_paths()

EDGES: list[Any] = [
    "", "x", "{port}", "{build}/x", "{src}", "{python}", "{render:nginx.conf}",
    "{render:../../../../etc/shadow}", "{render:/etc/passwd}", "{render:}", "{render:.}",
    "{render:adapter.toml}", "{nope}", "{port", "/", "/\u00b2", "\u00b2\u00b3", "GET", "a b",
    0, -1, 1, 200, 99999, 2**63 - 1, -(2**63), 0.5, math.inf, -math.inf, math.nan, True,
    [], [""], ["{render:nginx.conf}"], [[]], {}, {"a": "b"}, {"content-type": 1},
]  # fmt: skip


def _toml(v: Any) -> str:
    """A value as TOML (inline tables and arrays: enough to write any document)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(str(k))} = {_toml(x)}" for k, x in v.items()) + "}"


def _document(doc: dict[str, Any]) -> str:
    return "".join(f"{json.dumps(k)} = {_toml(v)}\n" for k, v in doc.items())


def _mutated_text(rng: random.Random, text: str) -> str:
    if rng.random() < 0.4:  # the text itself
        data = bytearray(text.encode())
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            op = rng.random()
            if op < 0.4:
                data[at] = rng.randrange(256)
            elif op < 0.7:
                del data[at : at + rng.randint(1, 20)]
            else:
                data[at:at] = data[at : at + rng.randint(1, 40)]
        return data.decode("utf-8", "replace")
    doc: Any = tomllib.loads(text)
    for _ in range(rng.randint(1, 3)):
        doc = replace(doc, rng.choice(slots(doc)[1:]), rng.choice(EDGES))
    return _document(doc)


def _must_hold(path: Path, tmp_path: Path) -> None:
    try:
        a = adapters.load_adapter(path)
    except ParseError as e:
        assert str(e).startswith(f"{path}: ") and "\n" not in str(e)
        return
    for arg in a.start:
        for m in re.finditer(r"\{render:([^{}]*)\}", arg):
            assert adapters.adapter_file(a.directory, m.group(1)) is not None
    build = tmp_path / "build"
    try:
        argv = adapters.expand(a.start, port=8080, build_dir=build, adapter=a)
        assert all(isinstance(x, str) for x in argv)
    except ParseError:
        pass  # the run's reason (serve/server.py): a template that does not render
    adapters.expand_env(a, port=8080, build_dir=build)
    adapters.binary_path(a, build)
    adapters.working_dir(a, build)
    adapters.unavailable_reason(a)
    for p in a.paths:
        adapters.check_response(p.expect, 200, {"content-type": "text/plain"}, b"Hello, World!")


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.integers(min_value=0, max_value=2**32))
def test_mutated_adapters_load_or_are_refused(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    original = rng.choice(BUNDLED)
    folder = tmp_path / "adapter"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(original.parent, folder)
    path = folder / adapters.ADAPTER_FILE
    path.write_text(_mutated_text(rng, original.read_text()), encoding="utf-8")
    _must_hold(path, tmp_path)


@pytest.mark.parametrize("edge", EDGES, ids=repr)
def test_every_edge_in_every_slot_of_nginx(tmp_path: Path, edge: Any) -> None:
    """Each edge value in each slot of the adapter that renders a config, in turn."""
    original = next(p for p in BUNDLED if p.parent.name == "nginx")
    doc = tomllib.loads(original.read_text())
    doc["cwd"] = "{src}"  # keys no bundled adapter sets, mutated as well
    doc["ready"]["status"] = 200
    folder = tmp_path / "adapter"
    shutil.copytree(original.parent, folder)
    path = folder / adapters.ADAPTER_FILE
    for where in slots(doc)[1:]:
        path.write_text(_document(replace(doc, where, edge)), encoding="utf-8")
        _must_hold(path, tmp_path)
