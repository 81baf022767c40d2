"""A server that crashes before it is ready: the reason says it crashed and quotes
valgrind's log; only a server that exited (for want of its files, say) is told where it
ran and given --cwd."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from icount import procs
from icount.backends import valgrind
from icount.serve import server as server_mod
from icount.serve.adapter import adapter_from_table
from icount.serve.server import RunInvalid
from tests.serve.conftest import cells, run_icount

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "valgrind-logs"
WHERE = "it ran in /tmp/icount-w1, an empty directory (give --cwd DIR, ...)"


class _Ended:
    """A server gone before it was ready, as the backend would see it."""

    def __init__(self, tmp_path: Path, rc: int, log: str | None) -> None:
        self.rc = rc
        self.log = log
        self.run_dir = tmp_path
        (tmp_path / "server.stderr").write_text("")

    def alive(self) -> bool:
        return False

    def stop(self) -> int:
        return self.rc

    def left_behind(self) -> str | None:
        return None

    def failure(self) -> str | None:
        return None if self.log is None else valgrind.guest_crash(RECORDED / self.log)


def _reason(server: _Ended, tmp_path: Path) -> str:
    table = {"start": ["srv", "{port}"], "paths": [{"name": "plaintext", "target": "/p"}]}
    adapter = adapter_from_table(table, tmp_path, "test")
    with pytest.raises(RunInvalid) as e:
        server_mod._wait_ready(server, 1, adapter, lambda text: None, WHERE)  # type: ignore[arg-type]
    return str(e.value)


def test_a_guest_crash_quotes_the_log_and_gives_no_cwd_advice(tmp_path: Path) -> None:
    """BEAM's JIT crashed under valgrind, and the reason asked for --cwd (issue 29)."""
    why = _reason(_Ended(tmp_path, -11, "guest-sigsegv.log"), tmp_path)
    assert why.startswith(
        "the server killed by SIGSEGV; the program crashed under valgrind (SIGSEGV; "
        "guest-sigsegv.log: 'Process terminating with default action of signal 11"
    ), why
    assert why.endswith("not valgrind's complaint before it was ready"), why
    assert "--cwd" not in why


def test_a_signal_without_a_log_gives_no_cwd_advice(tmp_path: Path) -> None:
    why = _reason(_Ended(tmp_path, -6, None), tmp_path)
    assert why == "the server killed by SIGABRT before it was ready"


def test_a_server_that_exited_is_told_where_it_ran(tmp_path: Path) -> None:
    why = _reason(_Ended(tmp_path, 1, None), tmp_path)
    assert why == f"the server exited with status 1 before it was ready; {WHERE}"


@pytest.mark.slow
def test_a_server_that_crashes_under_callgrind_says_so_end_to_end(
    need_valgrind: None, tmp_path: Path
) -> None:
    """The recorded crashing program (fixtures/valgrind-logs/segv.c) started as a
    server: the cell's reason quotes valgrind's log, and gives no --cwd advice."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed (scripts/setup.sh installs it)")
    exe = tmp_path / "segv"
    built = procs.run(["gcc", "-O0", "-g", "-o", str(exe), str(RECORDED / "segv.c")])
    assert built.returncode == 0, built.stderr
    out = tmp_path / "r.json"
    done = run_icount(
        ["serve", "--cmd", f"{exe} {{port}}", "--path", "plaintext=/plaintext", "--runs", "1",
         "--requests", "100", "--warmup", "20", "--reps", "2", "--backend", "callgrind",
         "-q", "-o", str(out)],
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 5, done.stderr
    (cell,) = cells(out).values()
    why = cell["reason"]
    assert "killed by SIGSEGV; the program crashed under valgrind (SIGSEGV; valgrind.log." in why
    assert "Access not within mapped region at address 0x0 | at 0x" in why, why
    assert "crash (segv.c:4)" in why and "--cwd" not in why, why
