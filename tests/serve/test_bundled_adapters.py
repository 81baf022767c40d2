"""Every bundled adapter builds, starts natively and answers both paths correctly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from icount import procs
from icount.serve import adapter as adapters
from icount.serve.http_client import KeepAliveClient, fetch

from .conftest import HOST, free_port, wait_ready

BUNDLED = adapters.bundled_adapter_paths()


@pytest.mark.slow  # builds each target (go-http alone takes ~15 s) and runs it as a server
@pytest.mark.parametrize("toml", BUNDLED, ids=[p.parent.name for p in BUNDLED])
def test_bundled_target_answers_both_paths(toml: Path, tmp_path: Path) -> None:
    target = adapters.load_adapter(toml)
    reason = adapters.unavailable_reason(target)
    if reason:
        pytest.skip(f"{target.name}: {reason}")
    build = tmp_path / "build"
    adapters.build_adapter(target, build)
    port = free_port()
    argv = adapters.expand(target.start, port=port, build_dir=build, adapter=target)
    env = {**os.environ, **adapters.expand_env(target, port=port, build_dir=build)}
    stderr = tmp_path / "stderr.txt"
    with procs.spawn(argv, env=env, cwd=build, stderr=stderr) as child:
        ready = next(p for p in target.paths if p.request_target == target.ready_target)
        wait_ready(port, ready, child, timeout=min(target.ready_timeout_s, 20))
        for path in target.paths:
            one = fetch(HOST, port, path, 5.0)
            diff = adapters.check_response(path.expect, one.status, one.headers, one.body)
            assert diff is None, f"{target.name} {path.name}: {diff}"
            assert one.keep_alive
            # Keep-alive holds for a run on several connections, every answer checked.
            with KeepAliveClient(HOST, port, path, 4, 5.0) as client:
                result = client.run(200)
            assert result.ok, f"{target.name} {path.name}: {result.first_error}"
        assert child.poll() is None, stderr.read_text()
    binary = adapters.binary_path(target, build)
    assert binary is not None and binary.is_file()


def test_bundled_bodies_are_byte_identical(tmp_path: Path) -> None:
    """The same two answers everywhere, so per-request counts compare like with like
    (a framework's own header parameters aside: Express adds `; charset=utf-8`)."""
    expects = {}
    for toml in BUNDLED:
        target = adapters.load_adapter(toml)
        expects[target.name] = [
            (p.name, p.request_target, p.expect.status, p.expect.body, p.expect.json,
             p.expect.headers["content-type"].split(";")[0])
            for p in target.paths
        ]  # fmt: skip
    assert len({repr(v) for v in expects.values()}) == 1, expects
