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


RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "valgrind-logs"


def test_a_callgrind_assertion_is_quoted_with_the_known_remedy() -> None:
    """valgrind 3.19's own words on a Go program run without GODEBUG=asyncpreemptoff=1
    (fixtures/valgrind-logs/record.sh): the tool's name capitalized, as valgrind prints
    it, and the remedy icount knows."""
    why = valgrind.valgrind_problem(RECORDED / "go-preempt-assertion.log")
    assert why == (
        "callgrind asserted while handling a signal (go-preempt-assertion.log: "
        "\"Callgrind: threads.c:247 (vgCallgrind_post_signal): Assertion 'sigNum == "
        "vgCallgrind_current_state.sig' failed.\"); Go programs need "
        "GODEBUG=asyncpreemptoff=1 under valgrind: add it to the adapter's [env] or pass "
        "--env GODEBUG=asyncpreemptoff=1"
    )
    assert valgrind.guest_crash(RECORDED / "go-preempt-assertion.log") is None
    assert valgrind.valgrind_problem(LOGS / "nope.log") is None  # no log, no complaint


def test_a_guest_crash_is_the_programs_with_the_logs_lines() -> None:
    """A program that writes through a null pointer under callgrind (record.sh): not a
    complaint of valgrind's, and the crash says where, from the log's own lines."""
    log = RECORDED / "guest-sigsegv.log"
    assert valgrind.valgrind_problem(log) is None
    why = valgrind.guest_crash(log)
    assert why == (
        "the program crashed under valgrind (SIGSEGV; guest-sigsegv.log: 'Process "
        "terminating with default action of signal 11 (SIGSEGV) | Access not within mapped "
        "region at address 0x0 | at 0x109149: crash (segv.c:4) | by 0x1FFF0005CF: ??? | "
        "by 0x109191: handle (segv.c:5) | by 0x109191: handle (segv.c:5)'): the crash is "
        "the program's, not valgrind's complaint"
    )


def test_a_quoted_crash_is_bounded_and_escaped(tmp_path: Path) -> None:
    """A log line holding an escape sequence or a thousand characters is quoted escaped
    and cut, and only the lines right after valgrind's own are quoted."""
    recorded = (RECORDED / "guest-sigsegv.log").read_text().splitlines()
    at = next(i for i, line in enumerate(recorded) if "at 0x109149" in line)
    recorded[at] = "==13313==    at 0x109149: \x1b[31m" + "x" * 1000
    log = tmp_path / "valgrind.log.13313"
    log.write_text("\n".join(recorded) + "\n")
    why = valgrind.guest_crash(log)
    assert why is not None and "\x1b" not in why and "\\x1b[31m" in why
    assert len(why) < 2 * valgrind.QUOTE_CHARS * (valgrind.CRASH_LINES + 1)
    assert "x" * (valgrind.QUOTE_CHARS - 3) not in why and "xxx..." in why
    assert why.count(" | ") == valgrind.CRASH_LINES
