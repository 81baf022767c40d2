"""How long a callgrind server may take to exit on SIGTERM before it is killed: a whole
life's count reads the final profile valgrind writes then, so it gets the long grace; a
server counted in windows reads none, and one that does not exit (nginx under valgrind,
now and then) costs the shorter one."""

from __future__ import annotations

from icount.backends import callgrind_server as cs


class _Child:
    def __init__(self) -> None:
        self.graces: list[float] = []

    def stop(self, grace_s: float) -> int:
        self.graces.append(grace_s)
        return 0


def _server(instrumented: bool) -> tuple[cs.CallgrindServer, _Child]:
    server = object.__new__(cs.CallgrindServer)  # no valgrind: only its stop is asked
    child = _Child()
    server.child = child  # type: ignore[assignment]
    server._starts_instrumented = instrumented
    return server, child


def test_a_whole_life_waits_for_its_final_profile_and_windows_do_not() -> None:
    whole, whole_child = _server(instrumented=True)
    windows, windows_child = _server(instrumented=False)
    assert whole.stop() == 0 and windows.stop() == 0
    assert whole_child.graces == [cs.STOP_GRACE_S]
    assert windows_child.graces == [cs.WINDOWS_STOP_GRACE_S]
    assert cs.WINDOWS_STOP_GRACE_S < cs.STOP_GRACE_S
