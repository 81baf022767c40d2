"""The callgrind backend's handling of unreadable profiles."""

from pathlib import Path

from icount.backends import callgrind, valgrind


def test_garbage_and_truncated_profiles_become_reasons(tmp_path: Path) -> None:
    garbage = tmp_path / "callgrind.out.1"
    garbage.write_bytes(b"\x00\x01 this is not a profile\n")
    total, problem = callgrind.sum_profiles([garbage])
    assert total is None and problem is not None and "unreadable callgrind profile" in problem
    truncated = tmp_path / "callgrind.out.2"
    truncated.write_text(
        "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\nevents: Ir\n"
        "fl=(1) a.c\nfn=(1) main\n5 1"
    )
    total, problem = callgrind.sum_profiles([truncated])
    assert total is None and problem is not None


LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "callgrind" / "logs"


def test_a_profile_callgrind_could_not_write_is_named() -> None:
    """Recorded: `valgrind --tool=callgrind --callgrind-out-file=/nonexistent/dir/cg.%p`."""
    why = valgrind.valgrind_problem(LOGS / "cannot-write-profile.log")
    assert why is not None
    assert why.startswith("a process could not write its callgrind profile")
    assert "can not open cache simulation output file `/nonexistent/dir/cg.9855'" in why


def test_a_callgrind_assertion_is_quoted_with_the_known_remedy(tmp_path: Path) -> None:
    """The line a Go server under callgrind printed (issue 10), in valgrind's log format:
    it does not happen on every run, so the parser is tested on the line itself."""
    log = tmp_path / "valgrind.log.4242"
    log.write_text(
        "==4242== Callgrind, a call-graph generating cache profiler\n==4242== \n"
        "callgrind: threads.c:247 (vgCallgrind_post_signal): Assertion "
        "'sigNum == vgCallgrind_current_state.sig' failed.\n"
    )
    why = valgrind.valgrind_problem(log)
    assert why is not None and why.startswith("callgrind asserted while handling a signal")
    assert "threads.c:247" in why and "GODEBUG=asyncpreemptoff=1" in why
    assert valgrind.valgrind_problem(LOGS / "nope.log") is None  # no log, no complaint
