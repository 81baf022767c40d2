"""scripts/lifetime_reference.py refuses a pair of lives it cannot subtract before it
builds or runs anything (each life is minutes under callgrind), and splits two lives'
profiles as icount's callgrind backend splits a window's (--split)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "lifetime_reference.py"
FIXTURES = ROOT / "fixtures" / "go"


@pytest.mark.parametrize(("n1", "n2"), [("5", "5"), ("10", "3"), ("-1", "20")])
def test_lives_that_cannot_be_subtracted_are_refused_first(n1: str, n2: str) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "no-such-target", "--n1", n1, "--n2", n2],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith(f"error: --n2 must be more than --n1 (0 or more), got --n1 {n1} --n2 {n2}")
    )
    assert "Traceback" not in done.stderr


def _script() -> ModuleType:
    """The script as a module (scripts/ is no package)."""
    if "lifetime_reference" in sys.modules:
        return sys.modules["lifetime_reference"]
    spec = importlib.util.spec_from_file_location("lifetime_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


ANSWERED = FIXTURES / "plaintext-answered.callgrind"  # 10,000 requests
WAITED = FIXTURES / "plaintext-waited.callgrind"  # 5,000 requests


def test_split_of_two_lives_is_the_extra_work_per_request_as_icount_splits_it() -> None:
    """Two real go-http windows as lives: life 1 one process (the waited window), life 2
    two processes (the same and the answered one), so the difference is the answered
    window's 10,000 requests, split as icount's backend splits a window (figures in
    fixtures/go/README.md)."""
    ref = _script()
    first = ref.split_files([WAITED])
    second = ref.split_files([WAITED, ANSWERED])
    assert second.runtime == first.runtime == "go"
    f = ref.per_request(first, second, 10000)
    assert f["whole"] == pytest.approx(33899.471)
    assert f["collector"] == pytest.approx(814.2138)
    assert f["compiler"] == 0
    assert f["scheduler"] == pytest.approx(3421.6455)
    assert f["mutator"] == pytest.approx(29663.6117)
    # what icount's total compares with: mutator + collector + compiler, no scheduler
    assert f["total"] == pytest.approx(f["whole"] - f["scheduler"])
    assert f["total"] == pytest.approx(f["mutator"] + f["collector"] + f["compiler"])


def test_every_process_is_summed_as_the_backend_sums_a_window() -> None:
    ref = _script()
    both = ref.split_files([ANSWERED, WAITED])
    for field in ("whole", "collector", "compiler", "scheduler"):
        one = [getattr(ref.split_files([f]), field) for f in (ANSWERED, WAITED)]
        assert getattr(both, field) == sum(one), field
    assert both.mutator == 29663.6117 * 10000 + 29783.3836 * 5000


def test_lives_that_serve_the_same_requests_give_no_figure() -> None:
    ref = _script()
    life = ref.split_files([ANSWERED])
    with pytest.raises(ValueError, match="differ by 1 request or more"):
        ref.per_request(life, life, 0)


class _Client:
    """Answers every GET with `status`, recording it in `log`."""

    def __init__(self, log: list[str], status: int = 200) -> None:
        self.log, self.status = log, status

    def get(self, target: str) -> tuple[int, bytes]:
        self.log.append(f"GET {target}")
        return self.status, b"{}"


def test_idle_arrival_waits_for_the_server_before_every_request() -> None:
    ref = _script()
    log: list[str] = []

    def idle() -> str | None:
        log.append("idle?")
        return None

    ref.send(_Client(log), "/json", 3, idle=idle)
    assert log == ["idle?", "GET /json"] * 3
    log.clear()
    ref.send(_Client(log), "/json", 2)  # closed: sent as soon as the last answer is in
    assert log == ["GET /json"] * 2


def test_a_server_never_idle_is_refused_with_the_reason_before_its_request() -> None:
    ref = _script()
    log: list[str] = []
    answers = iter([None, "the server was never idle within 120 s: pid 7 kept it busy"])
    with pytest.raises(SystemExit, match=r"^/json: the server was never idle within 120 s"):
        ref.send(_Client(log), "/json", 5, idle=lambda: next(answers))
    assert log == ["GET /json"]  # the second request was never sent


def test_a_wrong_status_ends_the_life() -> None:
    with pytest.raises(SystemExit, match=r"^/json: status 500$"):
        _script().send(_Client([], status=500), "/json", 1)
