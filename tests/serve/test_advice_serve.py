"""Advice in a serve refusal, followed: longer windows for the clock's uncertainty, and a
longer ready timeout for a server slow to be ready."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from icount import procs
from icount.results.details import WINDOW_DUMPS, IdleCount, Rep, ServeDetail
from icount.serve import server as server_mod
from icount.serve.idle_window import clock_uncertain
from icount.serve.server import RunInvalid
from tests.serve.conftest import AdapterMaker, cells, run_icount
from tests.serve.test_faults import _Alive, _ready_adapter, _Statuses, statuses  # noqa: F401


def _detail(requests: int) -> ServeDetail:
    """Windows of `requests` at 12,700 instructions and 1 ms each, the idle clock 2M a
    second (tests/serve/test_runs.py's case), its share taken out."""
    reps = tuple(Rep(12_700 * requests, requests, seconds=requests / 1000) for _ in range(3))
    return ServeDetail(WINDOW_DUMPS, 100, reps, None, idle=IdleCount(2_000_000, 1.0),
                       time_share=0.16, clock_subtracted=True)  # fmt: skip


def test_longer_windows_shrink_the_clocks_uncertainty_as_advised() -> None:
    held = 0.2  # opening and closing a window held the server 200 ms
    why = clock_uncertain(_detail(1000), [1.0 + held] * 3, 0.01)
    assert why is not None and why.endswith("longer windows (--requests) shrink it")
    # --requests 10000: the same 200 ms are a tenth of the share
    assert clock_uncertain(_detail(10_000), [10.0 + held] * 3, 0.01) is None


def test_a_longer_ready_timeout_waits_for_a_server_slow_to_be_ready(
    statuses: _Statuses,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not ready for its first 20 answers (503): a timeout too short for them says to
    raise it; raised, the same server is ready."""
    monkeypatch.setattr(server_mod, "READY_POLL_S", 0.01)
    statuses.statuses = [503] * 20 + [200]
    port = statuses.server_address[1]
    with pytest.raises(RunInvalid) as e:
        server_mod._wait_ready(_Alive(), port, _ready_adapter(tmp_path, 0.05), lambda t: None, "")  # type: ignore[arg-type]
    assert "raise [ready] timeout_s in the adapter, or --ready-timeout with --cmd" in str(e.value)
    server_mod._wait_ready(_Alive(), port, _ready_adapter(tmp_path, 30.0), lambda t: None, "")  # type: ignore[arg-type]
    assert statuses.asked >= 21


@pytest.mark.slow
def test_a_process_execd_in_a_window_is_refused_and_warmup_instrumented_counts_it(
    need_valgrind: None, tmp_path: Path
) -> None:
    """A server that runs /bin/true for every request (exec_server.c): the warm-up runs
    uninstrumented, so the exec'd process executes nothing under callgrind and the window
    is refused with the advice; following it (--warmup-instrumented) counts it, valid."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed (scripts/setup.sh installs it)")
    exe = tmp_path / "exec_server"
    built = procs.run(
        ["gcc", "-O1", "-o", str(exe), str(Path(__file__).with_name("exec_server.c"))]
    )
    assert built.returncode == 0, built.stderr
    cmd = ["serve", "--cmd", f"{exe} {{port}}", "--name", "ex", "--path", "plaintext=/plaintext",
           "--expect-body", "Hello, World!", "--runs", "1", "--requests", "20", "--warmup", "5",
           "--reps", "2", "--backend", "callgrind", "-q"]  # fmt: skip
    refused = tmp_path / "refused.json"
    done = run_icount([*cmd, "-o", str(refused)], cwd=tmp_path)
    assert done.returncode == 5, done.stderr
    (cell,) = cells(refused).values()
    assert cell["reason"].endswith("measure this server with --warmup-instrumented"), cell
    followed = tmp_path / "followed.json"
    done = run_icount([*cmd, "--warmup-instrumented", "-o", str(followed)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (cell,) = cells(followed).values()
    assert cell["valid"] is True and cell["median"] > 10_000  # /bin/true's start-up in each


@pytest.mark.slow
def test_a_daemonizing_server_is_told_to_stay_in_the_foreground_which_is_measured(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path, c_epoll: Path
) -> None:
    """c-epoll --daemonize is refused with the advice to run it in the foreground;
    without the flag, as the advice says, the same server is a valid run."""
    from tests.serve.test_every_process import measure

    refused = measure(make_adapter, tmp_path, "daemon", "--daemonize")
    assert refused.reason is not None
    assert "icount counts a server that stays in the foreground" in refused.reason
    followed = measure(make_adapter, tmp_path, "foreground")
    assert followed.reason is None and followed.value is not None and followed.value > 0
