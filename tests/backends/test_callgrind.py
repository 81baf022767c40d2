"""The callgrind backend's handling of unreadable profiles."""

from pathlib import Path

from icount.backends import callgrind


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
