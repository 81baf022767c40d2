"""Servers that answer wrongly, crash or vary: their own cells are '-' with the reason,
the other cells are measured, and no process is left behind."""

from __future__ import annotations

import dataclasses
import itertools
import json
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from icount.serve import server as server_mod
from icount.serve.adapter import Adapter, adapter_from_table
from icount.serve.server import RunInvalid

from .conftest import AdapterMaker, cells, leftovers, run_icount

FAST = ["--requests", "100", "--warmup", "20", "--reps", "2", "--backend", "callgrind"]


@pytest.mark.slow
def test_wrong_answers_and_a_crash_invalidate_only_their_cells(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path, c_epoll: Path
) -> None:
    good = make_adapter("good")
    wrong_body = make_adapter("wrong-body", "--body", "Hello, Wurld!")
    error_500 = make_adapter("error-500", "--status", "500")
    # not ready while it answers another status than the path's (a proxy's 502 at start)
    error_500.write_text(error_500.read_text().replace("timeout_s = 30", "timeout_s = 3"))
    # ready probe + verification + 20 warm-up = 22 requests: it dies inside rep 1
    crash = make_adapter("crash", "--crash-after", "60")
    out = tmp_path / "r.json"
    done = run_icount(
        ["serve", str(good), str(wrong_body), str(error_500), str(crash),
         "--runs", "2", *FAST, "-o", str(out), "-q", "--width", "200"],
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 5, done.stderr
    got = cells(out)
    assert got[("good", "plaintext")]["valid"] is True
    assert got[("good", "plaintext")]["median"] > 0
    body_reason = got[("wrong-body", "plaintext")]["reason"]
    assert "wrong answer from /plaintext: body differs at byte 8" in body_reason
    reason_500 = got[("error-500", "plaintext")]["reason"]
    assert "ready timeout: /plaintext answered 500 for " in reason_500, reason_500
    assert "s of the 3 s (expected 200; " in reason_500
    crash_reason = got[("crash", "plaintext")]["reason"]
    assert "rep 1" in crash_reason and "killed by SIGABRT" in crash_reason, crash_reason
    # the table: one valid row, three '-' rows with numbered reasons under it
    table = done.stdout
    rows = {line.split()[0]: line for line in table.splitlines() if line[:1].isalpha()}
    assert "-" not in rows["good"].split()[1]
    for name in ("crash", "error-500", "wrong-body"):
        assert rows[name].split()[1] == "-", table
    assert "body differs at byte 8" in table
    assert leftovers(str(c_epoll)) == []


@pytest.mark.slow
def test_spread_rule_with_a_server_whose_cost_varies_by_process(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path, c_epoll: Path
) -> None:
    """--vary FILE: process n of the cell costs 2,000 x n instructions per request more
    than c-epoll's own, so three processes differ by known amounts, whatever their pids."""
    vary = make_adapter("vary", "--vary", str(tmp_path / "processes-started"))
    out = tmp_path / "r.json"
    done = run_icount(
        ["serve", str(vary), "--runs", "3", *FAST, "-o", str(out), "-q"], cwd=tmp_path
    )
    cell = cells(out)[("vary", "plaintext")]
    values = [r["value"] for r in cell["runs"]]
    assert all(r["valid"] for r in cell["runs"])  # each process is measured fine...
    # ...2,000 instructions per request apart, to within a window's vgdb cost
    assert [round(b - a) for a, b in itertools.pairwise(values)] == [2000, 2000], values
    assert done.returncode == 5
    assert cell["valid"] is False  # ...but they disagree
    assert "is not below --max-spread 1%" in cell["reason"]
    # the same server passes when the limit is wider than its spread: processes 4..6 now,
    # 4,000 apart over a median of ~ 883 + 10,000: under 40%
    again = run_icount(
        ["serve", str(vary), "--runs", "3", *FAST, "--max-spread", "40%", "-o",
         str(tmp_path / "wide.json"), "-q"],
        cwd=tmp_path,
    )  # fmt: skip
    wide_cell = cells(tmp_path / "wide.json")[("vary", "plaintext")]
    assert again.returncode == 0, again.stderr
    assert wide_cell["valid"] is True
    assert 0.3 < wide_cell["spread"] < 0.4
    assert leftovers(str(c_epoll)) == []


@pytest.mark.slow
def test_server_that_never_becomes_ready(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    bad = make_adapter("bad-flag", "--no-such-flag")
    out = tmp_path / "r.json"
    done = run_icount(["serve", str(bad), "--runs", "1", *FAST, "-o", str(out), "-q"], tmp_path)
    assert done.returncode == 5
    reason = cells(out)[("bad-flag", "plaintext")]["reason"]
    assert "exited with status" in reason and "before it was ready" in reason, reason
    assert "usage: c-epoll" in reason  # the server's own last stderr line


def test_a_failed_build_invalidates_its_cells_with_the_tool_output(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    broken = make_adapter(
        "broken", extra='build = [["sh", "-c", "echo server.c:3: error: expected ; >&2; exit 1"]]'
    )
    out = tmp_path / "r.json"
    done = run_icount(["serve", str(broken), "--runs", "1", *FAST, "-o", str(out), "-q"], tmp_path)
    assert done.returncode == 5, done.stderr
    reason = cells(out)[("broken", "plaintext")]["reason"]
    assert reason.startswith("build failed: broken: build step exited with status 1"), reason
    assert "server.c:3: error: expected ;" in reason


@pytest.mark.slow
def test_a_launcher_script_is_refused_up_front_and_the_others_measured(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path, c_epoll: Path
) -> None:
    """valgrind runs a #! script's interpreter; what that execs escapes measurement
    (pyenv's python3 shim, console scripts such as gunicorn): the target's cells say
    which binary to start and how, before any server of it starts; others go on."""
    script = tmp_path / "launch.sh"
    script.write_text(f'#!/bin/sh\nexec {c_epoll} --port "$1"\n')
    script.chmod(0o755)
    launched = make_adapter("launched")
    text = launched.read_text().replace(json.dumps(str(c_epoll)), json.dumps(str(script)), 1)
    launched.write_text(text)
    good = make_adapter("good")
    out = tmp_path / "r.json"
    done = run_icount(
        ["serve", str(launched), str(good), "--runs", "2", *FAST, "-o", str(out), "-q"],
        cwd=tmp_path,
    )
    assert done.returncode == 5, done.stderr
    got = cells(out)
    cell = got[("launched", "plaintext")]
    sh = str(Path("/bin/sh"))
    assert cell["reason"] == (
        f"cannot measure {script} under callgrind: it is a #! script run by {sh}; start "
        f"the interpreter with the script as its argument: {sh} {script} --port '{{port}}'"
    ), cell["reason"]
    assert cell["runs"] == []  # refused before a server started
    assert got[("good", "plaintext")]["valid"] is True
    assert not (out.with_suffix(".artifacts") / "runs" / "launched").exists()
    assert leftovers(str(tmp_path)) == []


class _Statuses(socketserver.ThreadingTCPServer):
    """Answers every request with the next status of `statuses` (the last one repeats)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.asked = 0
        super().__init__(("127.0.0.1", 0), _StatusHandler)


class _StatusHandler(socketserver.BaseRequestHandler):
    server: _Statuses

    def handle(self) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            data += chunk
        s = self.server
        status = s.statuses[min(s.asked, len(s.statuses) - 1)]
        s.asked += 1
        self.request.sendall(f"HTTP/1.1 {status} X\r\nContent-Length: 2\r\n\r\nok".encode())


@pytest.fixture
def statuses() -> Iterator[_Statuses]:
    srv = _Statuses([])
    thread = threading.Thread(target=srv.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


class _Alive:
    def alive(self) -> bool:
        return True


def _ready_adapter(tmp_path: Path, timeout_s: float) -> Adapter:
    table = {"start": ["srv", "{port}"], "ready": {"timeout_s": timeout_s},
             "paths": [{"name": "plaintext", "target": "/plaintext"}]}  # fmt: skip
    return adapter_from_table(table, tmp_path, "test")


def test_readiness_waits_past_a_proxys_502_for_the_expected_status(
    statuses: _Statuses, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proxy answers 502 until its upstream is up: not ready yet, whatever it says."""
    monkeypatch.setattr(server_mod, "READY_POLL_S", 0.001)
    statuses.statuses = [502, 502, 503, 200]
    adapter = _ready_adapter(tmp_path, 30.0)
    port = statuses.server_address[1]
    server_mod._wait_ready(_Alive(), port, adapter, lambda text: None, "")  # type: ignore[arg-type]
    assert statuses.asked == 4


def test_a_ready_timeout_names_the_status_that_kept_coming(
    statuses: _Statuses, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_mod, "READY_POLL_S", 0.001)
    statuses.statuses = [502]
    adapter = _ready_adapter(tmp_path, 0.2)
    port = statuses.server_address[1]
    with pytest.raises(RunInvalid) as e:
        server_mod._wait_ready(_Alive(), port, adapter, lambda text: None, "")  # type: ignore[arg-type]
    assert str(e.value).startswith(
        "ready timeout: /plaintext answered 502 for 0 s of the 0.2 s (expected 200; raise "
        "[ready] timeout_s in the adapter, or --ready-timeout with --cmd)"
    ), e.value
    assert statuses.asked > 1


def test_a_ready_target_of_no_path_is_ready_at_any_status_below_500(
    statuses: _Statuses, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_mod, "READY_POLL_S", 0.001)
    statuses.statuses = [503, 404]
    adapter = dataclasses.replace(_ready_adapter(tmp_path, 30.0), ready_status=None)
    server_mod._wait_ready(_Alive(), statuses.server_address[1], adapter, lambda text: None, "")  # type: ignore[arg-type]
    assert statuses.asked == 2


class _StopsOnce:
    """A server whose first stop is interrupted by Ctrl-C (it ignores SIGTERM, and the
    user pressed Ctrl-C while icount waited out its grace)."""

    def __init__(self) -> None:
        self.stops: list[bool] = []  # hurried or not, per stop
        self.cleaned = False

    def stop(self) -> int:
        from icount import procs

        self.stops.append(bool(getattr(procs._HURRY, "on", False)))
        if len(self.stops) == 1:
            raise KeyboardInterrupt
        return -9

    def cleanup(self) -> None:
        self.cleaned = True


def test_a_ctrl_c_while_the_server_stops_still_removes_what_icount_made(
    tmp_path: Path,
) -> None:
    workdir = tmp_path / "icount-w0000001"
    workdir.mkdir()
    server = _StopsOnce()
    with pytest.raises(KeyboardInterrupt):
        server_mod._shut_down(server, workdir, interrupted=False)  # type: ignore[arg-type]
    assert server.stops == [False, True]  # the second stop is SIGKILL after a short grace
    assert server.cleaned and not workdir.exists()


def test_an_interrupted_run_stops_its_server_in_a_hurry(tmp_path: Path) -> None:
    workdir = tmp_path / "icount-w0000001"
    workdir.mkdir()
    server = _StopsOnce()
    server.stops.append(False)  # no interruption in this one's stop
    server_mod._shut_down(server, workdir, interrupted=True)  # type: ignore[arg-type]
    assert server.stops == [False, True] and server.cleaned and not workdir.exists()


@pytest.mark.slow
def test_a_server_that_needs_its_directory_says_where_it_ran_and_runs_with_cwd(
    need_valgrind: None, tmp_path: Path, c_epoll: Path
) -> None:
    """`gunicorn app:app` finds app.py where it starts: servers start in an empty work
    dir, so the reason says which, and --cwd DIR starts them there instead."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "c-epoll").symlink_to(c_epoll)
    cmd = ["--cmd", "/bin/sh -c 'exec ./c-epoll --port \"$0\"' {port}", "--path",
           "plaintext=/plaintext", "--runs", "1", *FAST, "-q"]  # fmt: skip
    out = tmp_path / "r.json"
    done = run_icount(["serve", *cmd, "-o", str(out)], cwd=tmp_path)
    assert done.returncode == 5, done.stderr
    (cell,) = cells(out).values()
    assert "before it was ready; it ran in /tmp/icount-" in cell["reason"], cell["reason"]
    assert cell["reason"].endswith(
        ", an empty directory (give --cwd DIR, or cwd in its adapter, for a server that "
        "reads files from where it starts)"
    ), cell["reason"]
    assert "./c-epoll: not found" in cell["reason"]  # the shell's own last words
    here = tmp_path / "here.json"
    done = run_icount(["serve", *cmd, "--cwd", "site", "-o", str(here)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (cell,) = cells(here).values()
    assert cell["valid"] is True and cell["median"] > 0
    assert leftovers(str(tmp_path)) == []
