"""`icount compare --confirm N` through the fake backend: the new file is measured by a
real `icount run` session (its provenance records the plan), a cell that crossed its
threshold by noise is measured again and passes, a real regression is measured again
and still fails, and the row keeps both measurements."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import pytest

from icount import environment, results, run_plan
from icount.backends.protocol import Counted
from icount.measure_command import CommandSpec
from tests.compare.conftest import Cli
from tests.support import fake_backend

PROG = "/bin/sh"  # never run: the fake backend counts by argv[1]
NOISY = CommandSpec("noisy", (PROG, "noisy"))
STEADY = CommandSpec("steady", (PROG, "steady"))
RERUN = ("--cmd", f"noisy={PROG} noisy")


class Scripted(fake_backend.FakeBackend):
    """Counts what `COUNTS[argv[1]]` yields next, and records every command it ran."""

    counts: ClassVar[dict[str, Iterator[int]]] = {}
    seen: ClassVar[list[tuple[str, ...]]] = []

    def count_command(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        timeout: float | None,
    ) -> Counted:
        Scripted.seen.append(tuple(argv))
        return Counted(next(Scripted.counts[argv[1]]), 0, False, None, 1)


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> type[Scripted]:
    from icount import backends

    monkeypatch.setitem(backends.REGISTRY, "fake", "tests.support.fake_backend")
    monkeypatch.setattr(fake_backend, "FakeBackend", lambda config=None: Scripted())
    Scripted.counts, Scripted.seen = {}, []
    return Scripted


def session(out: Path, noisy: Sequence[int], steady: Sequence[int]) -> Path:
    """`icount run` of the two commands, 3 runs each, counting these values."""
    Scripted.counts = {"noisy": iter(noisy), "steady": iter(steady)}
    request = run_plan.RunRequest(commands=(NOISY, STEADY), backend="fake", runs=3)
    plan = run_plan.prepare(request, output=out, resume=None, force=False)
    run_plan.run_session(plan, None, environment.ProvenanceRecorder(["icount", "run"]))
    return out


def test_a_cell_that_crossed_by_noise_is_rerun_and_passes(
    scripted: type[Scripted], tmp_path: Path, cli: Cli
) -> None:
    base = session(tmp_path / "base.json", [1_000_000, 1_000_100, 1_000_200], [5000] * 3)
    # a noisy measurement: every run 3% high, beyond a 1% threshold
    new = session(tmp_path / "new.json", [1_030_000, 1_030_100, 1_030_200], [5000] * 3)
    assert cli("compare", base, new).code == 3
    Scripted.seen = []
    Scripted.counts = {"noisy": iter([1_000_050, 1_000_150, 1_000_250, 1_000_100])}
    done = cli("compare", base, new, "--confirm", "4", *RERUN, "-f", "json", "-q")
    assert done.code == 0, done.out + done.err
    assert Scripted.seen == [NOISY.argv] * 4  # only the cell that crossed, 4 fresh runs
    row = next(r for r in json.loads(done.out)["cells"] if r["name"] == "noisy")
    assert row["verdict"] == "unchanged"
    assert row["new"]["median"] == 1_030_100  # the first measurement, kept
    confirmed = row["confirm"]
    assert (confirmed["median"], confirmed["min"], confirmed["max"], confirmed["runs"]) == (
        1_000_125, 1_000_050, 1_000_250, 4
    )  # fmt: skip
    assert row["why"] == "not confirmed: 4 reruns measured 0.00% (median 1.000M), unchanged"
    # the table says it too, under the first measurement's figures
    Scripted.counts = {"noisy": iter([1_000_000])}
    table = cli("compare", base, new, "--confirm", "1", *RERUN, "-q")
    assert table.code == 0
    noisy = next(line for line in table.out.splitlines() if line.startswith("noisy "))
    assert noisy.split()[1:5] == ["1.000M", "1.030M", "+30.00k", "+3.00%"]
    assert "[1] noisy: not confirmed: a rerun measured -0.01% (median 1.000M), unchanged" in (
        table.out
    )


def test_a_real_regression_is_rerun_and_still_fails(
    scripted: type[Scripted], tmp_path: Path, cli: Cli
) -> None:
    base = session(tmp_path / "base.json", [1_000_000] * 3, [5000] * 3)
    new = session(tmp_path / "new.json", [1_050_000] * 3, [5000] * 3)
    Scripted.seen = []
    Scripted.counts = {"noisy": iter([1_050_000] * 2)}
    done = cli("compare", base, new, "--confirm", "2", *RERUN, "-f", "junit", "-q")
    assert done.code == 3
    assert Scripted.seen == [NOISY.argv] * 2
    import xml.etree.ElementTree as ET

    suite = ET.fromstring(done.out).find("testsuite")
    assert suite is not None
    failed = [c for c in suite.iter("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["noisy"]
    message = failed[0].find("failure").get("message")  # type: ignore[union-attr]
    assert message == (
        "regressed +5.00%, beyond its threshold 1%: confirmed by 2 reruns: +5.00% (median 1.050M)"
    )
    out = failed[0].findtext("system-out") or ""
    assert "new: median 1050000" in out
    assert "rerun: median 1050000 (min 1050000, max 1050000, 2 runs)" in out


def test_confirm_never_runs_a_command_read_from_the_file(
    scripted: type[Scripted], tmp_path: Path, cli: Cli
) -> None:
    base = session(tmp_path / "base.json", [1_000_000] * 3, [5000] * 3)
    new = session(tmp_path / "new.json", [1_050_000] * 3, [5000] * 3)
    measured = list(Scripted.seen)
    done = cli("compare", base, new, "--confirm", "2")
    assert done.code == 2
    assert done.err.startswith(
        "icount: error: --confirm reruns only commands this invocation names, and none is "
        f"named noisy (the new file measured it as {PROG} noisy; a command read from a file "
        "is never run)"
    )
    assert len(done.err.splitlines()) == 1  # one line, its hint in it
    # a command named that is not the cell's is refused too, before anything runs
    other = cli("compare", base, new, "--confirm", "2", "--cmd", f"noisy={PROG} steady")
    assert other.code == 2
    assert f"--cmd noisy runs {PROG} steady, but the new file measured noisy as" in other.err
    assert Scripted.seen == measured  # nothing measured again


def test_a_crafted_provenance_command_is_not_run(
    scripted: type[Scripted], tmp_path: Path, cli: Cli
) -> None:
    """The reproducer: a new file whose cell and provenance record `/bin/sh -c ...` ran
    it under --confirm, the only line printed being the progress line."""
    base = session(tmp_path / "base.json", [1_000_000] * 3, [5000] * 3)
    new = session(tmp_path / "new.json", [1_050_000] * 3, [5000] * 3)
    crafted = ["/bin/sh", "-c", "touch pwned"]
    doc = json.loads(new.read_text())
    for c in doc["cells"]:
        c["params"]["argv"] = crafted
    new.write_text(json.dumps(doc))
    prov = results.provenance_path(new)
    pdoc = json.loads(prov.read_text())
    for c in pdoc["plan"]["commands"]:
        c["argv"] = crafted
    prov.write_text(json.dumps(pdoc))
    measured = list(Scripted.seen)
    done = cli("compare", base, new, "--confirm", "2", *RERUN)
    assert done.code == 2
    assert "but the new file measured noisy as /bin/sh -c 'touch pwned'" in done.err
    assert Scripted.seen == measured


def test_confirm_says_which_command_it_runs(
    scripted: type[Scripted], tmp_path: Path, cli: Cli
) -> None:
    base = session(tmp_path / "base.json", [1_000_000] * 3, [5000] * 3)
    new = session(tmp_path / "new.json", [1_050_000] * 3, [5000] * 3)
    results.provenance_path(new).unlink()  # the commands come from the invocation
    Scripted.counts = {"noisy": iter([1_050_000] * 2)}
    done = cli("compare", base, new, "--confirm", "2", *RERUN, "-q")
    assert done.code == 3
    assert f"icount: --confirm 2: measuring noisy again: {PROG} noisy\n" in done.err
    assert cli("compare", base, new, "--cmd", "x=y").err.startswith(
        "icount: error: --cmd and --file name the commands --confirm reruns"
    )


def test_confirm_refuses_serve_cells(tmp_path: Path, cli: Cli) -> None:
    from tests.compare.conftest import cell, res

    per_request = results.UNIT_PER_REQUEST
    base = tmp_path / "b.json"
    new = tmp_path / "n.json"
    results.save(base, res(cell("nginx", [100.0] * 3, "plaintext", unit=per_request)), None,
                 overwrite=False)  # fmt: skip
    results.save(new, res(cell("nginx", [110.0] * 3, "plaintext", unit=per_request)), None,
                 overwrite=False)  # fmt: skip
    done = cli("compare", base, new, "--confirm", "3", "--min-delta", "1")
    assert done.code == 2
    assert "1 cell that regressed (nginx/plaintext) is a serve cell" in done.err
