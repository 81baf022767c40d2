"""Sessions: saving after every cell, --resume, Ctrl-C, --warmup auto."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from icount import results
from icount.session.options import Warmup
from tests.support.told import Told

from .conftest import JSON_PATH, PLAINTEXT, AdapterMaker, cells, leftovers, run_icount

FAST = ["--requests", "100", "--warmup", "20", "--reps", "2", "--backend", "callgrind"]


@pytest.mark.slow
def test_resume_measures_only_the_missing_cells(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    target = make_adapter("two-paths", paths=PLAINTEXT + JSON_PATH)
    full = tmp_path / "full.json"
    first = run_icount(
        ["serve", str(target), "--runs", "1", *FAST, "-o", str(full), "-q"], tmp_path
    )
    assert first.returncode == 0, first.stderr
    # an interrupted session: only the first cell made it to the file
    res = results.load(full)
    kept = next(c for c in res.cells if c.path == "plaintext")
    partial = tmp_path / "partial.json"
    results.save(partial, results.Results(res.fingerprint, (kept,)), None, overwrite=False)
    before = cells(partial)[("two-paths", "plaintext")]

    again = run_icount(["serve", str(target), "--runs", "1", *FAST, "--resume", str(partial)],
                       tmp_path)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "two-paths/plaintext/callgrind run" not in again.stderr  # not measured again
    assert "two-paths/json/callgrind run 1/1" in again.stderr
    after = cells(partial)
    assert after[("two-paths", "plaintext")] == before
    assert after[("two-paths", "json")]["valid"] is True
    prov = json.loads(results.provenance_path(partial).read_text())
    assert prov["resumed_cells"] == ["two-paths/plaintext/callgrind"]

    other = run_icount(["serve", str(target), "--runs", "1", *FAST, "--requests", "200",
                        "--resume", str(partial), "-q"], tmp_path)  # fmt: skip
    assert other.returncode == 2
    assert "measured with other parameters (requests 100 there, 200 now)" in other.stderr

    # Resuming with no targets and no options: both come from what the file recorded.
    plain = tmp_path / "plain.json"
    results.save(plain, results.Results(res.fingerprint, (kept,)), None, overwrite=False)
    bare = run_icount(["serve", "--resume", str(plain), "-q"], tmp_path)
    assert bare.returncode == 2 and "no record of what" in bare.stderr
    results.provenance_path(plain).write_text(results.provenance_path(full).read_text())
    bare = run_icount(["serve", "--resume", str(plain)], tmp_path)
    assert bare.returncode == 0, bare.stderr
    assert "two-paths/json/callgrind run 1/1" in bare.stderr
    assert "two-paths/plaintext/callgrind run" not in bare.stderr
    assert sorted(cells(plain)) == [("two-paths", "json"), ("two-paths", "plaintext")]
    assert cells(plain)[("two-paths", "json")]["params"]["requests"] == 100


@pytest.mark.slow
def test_warmup_auto_records_how_many_requests_it_took(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    target = make_adapter("auto")
    out = tmp_path / "r.json"
    done = run_icount(
        ["serve", str(target), "--runs", "1", "--requests", "100", "--reps", "2",
         "--backend", "callgrind", "--warmup", "auto", "-o", str(out), "-q"],
        tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    cell = cells(out)[("auto", "plaintext")]
    assert cell["params"]["warmup"] == "auto"
    detail = cell["runs"][0]["detail"]
    served = [n for n, _ in detail["warmup_curve"]]
    windows = [per_request for _, per_request in detail["warmup_curve"]]
    # probes of 100 requests with 100, 200, 400 ... uncounted between them, until two in
    # a row agree within half the limit (c-epoll is flat from the start: three probes)
    assert served == [100, 300, 600][: len(served)] and len(windows) >= 3
    assert abs(windows[-1] - windows[-2]) / windows[-1] < 0.01 / 2
    assert detail["warmup"] == served[-1]


@pytest.mark.slow
def test_ctrl_c_stops_every_process_and_keeps_finished_cells(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path, c_epoll: Path
) -> None:
    quick = make_adapter("a-quick")
    slow = make_adapter("b-slow", "--loop", "200000")  # ~0.4M instructions a request
    out = tmp_path / "r.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "icount", "serve", str(quick), str(slow), "--runs", "1",
         "--requests", "100000", "--warmup", "0", "--reps", "1", "--backend", "callgrind",
         "-o", str(out), "-q"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not out.exists():
            time.sleep(0.1)
        assert out.exists(), "the first cell was never saved"
        time.sleep(1.0)  # the second server is running now
        assert leftovers("b-slow") or leftovers(str(c_epoll))
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert list(cells(out)) == [("a-quick", "plaintext")]
    assert leftovers(str(c_epoll)) == []


@pytest.mark.slow
def test_thread_counts_one_valgrind_thread(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    """c-epoll has one thread: --thread 1 counts what the process total counts, and a
    thread number the server does not have is the cell's reason, not a crash."""
    target = make_adapter("one-thread")
    medians: dict[str, dict[str, Any]] = {}
    for flag in ([], ["--thread", "1"], ["--thread", "2"]):
        out = tmp_path / f"r{len(medians)}.json"
        run_icount(["serve", str(target), "--runs", "1", *FAST, *flag, "-o", str(out), "-q"],
                   tmp_path)  # fmt: skip
        medians[" ".join(flag)] = cells(out)[("one-thread", "plaintext")]
    assert medians[""]["median"] == medians["--thread 1"]["median"]
    assert medians["--thread 1"]["valid"] is True
    assert (
        "--thread 2: the server has no such valgrind thread (threads seen: 1)"
        in (medians["--thread 2"]["reason"])
    )


@pytest.mark.slow
def test_kept_profiles_of_an_earlier_session_are_not_counted_again(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    target = make_adapter("kept")
    out = tmp_path / "r.json"
    args = ["serve", str(target), "--runs", "1", *FAST, "-o", str(out), "-q", "--keep-profiles"]
    first = run_icount(args, tmp_path)
    assert first.returncode == 0, first.stderr
    run_dir = tmp_path / "r.artifacts" / "runs" / "kept" / "plaintext" / "run-1"
    kept = sorted(p.name for p in run_dir.glob("callgrind.out*"))
    pids = {name.split(".")[2] for name in kept}  # callgrind.out.PID[.DUMP]
    assert len(pids) == 1, kept
    pid = pids.pop()
    # the final profile plus an opening and a closing dump per rep (2 reps) and for the
    # idle window after them
    assert kept == [f"callgrind.out.{pid}", *(f"callgrind.out.{pid}.{i}" for i in range(1, 7))]

    def instructions() -> list[int]:
        reps = cells(out)[("kept", "plaintext")]["runs"][0]["detail"]["reps"]
        return [rep["instructions"] for rep in reps]

    before = instructions()
    again = run_icount([*args, "--force"], tmp_path)
    assert again.returncode == 0, again.stderr
    # the same windows again (c-epoll is deterministic), not the old files summed in
    assert instructions() == before


@pytest.mark.slow
def test_two_invocations_give_byte_identical_results_and_tables(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    target = make_adapter("same", paths=PLAINTEXT + JSON_PATH)
    outputs = []
    for i in (1, 2):
        out = tmp_path / f"r{i}.json"
        args = ["serve", str(target), "--runs", "2", *FAST, "-o", str(out), "-q", "-f", "md"]
        done = run_icount(args, tmp_path)
        assert done.returncode == 0, done.stderr
        csv = run_icount(["table", "-f", "csv", str(out)], tmp_path).stdout
        outputs.append((out.read_text(), done.stdout, csv))
    assert outputs[0] == outputs[1]
    prov = json.loads((tmp_path / "r1.provenance.json").read_text())
    assert "same/plaintext/callgrind" in prov["client_rps_per_run_and_rep"]
    assert "client_rps" not in outputs[0][0]


# ------------------------------------------------------- the same logic, fake backend


FAKE_ADAPTER = """
name = "fake"
start = ["true", "--port", "{port}"]
[[paths]]
name = "plaintext"
target = "/plaintext"
[paths.expect]
body = "Hello, World!"
[[paths]]
name = "json"
target = "/json"
[paths.expect]
json = { message = "Hello, World!" }
"""


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The fake backend registered as `--backend fake`; returns its adapter file."""
    from icount import backends
    from tests.support import fake_backend

    monkeypatch.setitem(backends.REGISTRY, "fake", "tests.support.fake_backend")
    monkeypatch.setattr(fake_backend, "CONFIG", fake_backend.FakeConfig(cost=lambda i, p: 800.0))
    (tmp_path / "fake").mkdir()
    (tmp_path / "fake" / "adapter.toml").write_text(FAKE_ADAPTER)
    return tmp_path / "fake" / "adapter.toml"


def _session(request: Any, out: Path | None, resume: Path | None = None) -> results.Results:
    from icount import environment
    from icount.serve import plan as plan_mod
    from icount.serve import session

    plan = plan_mod.prepare(request, output=out, resume=resume, force=False)
    recorder = environment.ProvenanceRecorder(["icount", "serve"])
    return session.run_session(plan, lambda text, done, total: None, recorder)


def test_resume_measures_only_the_missing_cells_fake(fake: Path, tmp_path: Path) -> None:
    from icount.errors import UsageError
    from icount.serve.plan import ServeRequest, resume_request
    from tests.support import fake_backend

    request = ServeRequest(
        targets=(str(fake),),
        backend="fake",
        runs=2,
        reps=2,
        requests=50,
        warmup=Warmup(5),
        idle_seconds=0,
    )
    full = tmp_path / "full.json"
    res = _session(request, full)
    # 50 requests of 800 and the window's 27, per request: exact, in both cells
    assert {c.path: (c.valid, c.summary and c.summary.median) for c in res.cells} == {
        "plaintext": (True, 800.54),
        "json": (True, 800.54),
    }
    assert results.load(full).sorted() == res.sorted()
    assert len(fake_backend.CONFIG.started) == 4  # 2 cells x 2 runs

    # an interrupted session: only the first cell made it to the file
    kept = next(c for c in res.cells if c.path == "plaintext")
    partial = tmp_path / "partial.json"
    results.save(partial, results.Results(res.fingerprint, (kept,)), None, overwrite=False)
    results.provenance_path(partial).write_text(results.provenance_path(full).read_text())
    resumed = resume_request(ServeRequest(), partial, frozenset())
    assert (resumed.targets, resumed.backend, resumed.requests) == ((str(fake),), "fake", 50)
    again = _session(resumed, None, resume=partial)
    assert len(fake_backend.CONFIG.started) == 6  # the json cell's 2 runs, nothing else
    assert sorted(c.path for c in again.cells) == ["json", "plaintext"]
    assert next(c for c in again.cells if c.path == "plaintext") == kept
    prov = json.loads(results.provenance_path(partial).read_text())
    assert prov["resumed_cells"] == ["fake/plaintext/fake"]

    # options given again win over the file's, and must match what it measured
    other = resume_request(ServeRequest(requests=60), partial, frozenset({"requests"}))
    with pytest.raises(
        UsageError, match=r"measured with other parameters \(requests 50 there, 60 now\)"
    ):
        _session(other, None, resume=partial)
    # each recorded option is read as its type: a value that is not one is refused
    prov = results.provenance_path(partial)
    for option, value in (("processes", "some"), ("warmup", "lots"), ("runs", True)):
        doc = json.loads(prov.read_text())
        doc["plan"][option] = value
        prov.write_text(json.dumps(doc))
        with pytest.raises(UsageError, match=f"the recorded {option} {value!r} is not valid"):
            resume_request(ServeRequest(), partial, frozenset())
        prov.write_text(results.provenance_path(full).read_text())
    # a file without provenance cannot say what it was measuring
    bare = tmp_path / "bare.json"
    results.save(bare, results.Results(res.fingerprint, (kept,)), None, overwrite=False)
    with pytest.raises(UsageError, match="no record of what"):
        resume_request(ServeRequest(), bare, frozenset())


def test_resume_refuses_a_target_whose_adapter_changed_fake(fake: Path, tmp_path: Path) -> None:
    """Cells of an adapter as it was must not sit beside cells of the adapter as it is."""
    from icount.errors import UsageError
    from icount.serve.plan import ServeRequest, resume_request

    request = ServeRequest(targets=(str(fake),), backend="fake", runs=1, reps=1, requests=20,
                           warmup=Warmup(0), idle_seconds=0)  # fmt: skip
    full = tmp_path / "full.json"
    res = _session(request, full)
    partial = tmp_path / "partial.json"
    results.save(partial, results.Results(res.fingerprint, res.cells[:1]), None, overwrite=False)
    results.provenance_path(partial).write_text(results.provenance_path(full).read_text())
    fake.write_text(fake.read_text().replace('"{port}"]', '"{port}", "--verbose"]'))
    with pytest.raises(UsageError) as info:
        _session(resume_request(ServeRequest(), partial, frozenset()), None, resume=partial)
    assert str(info.value) == (
        f"target fake changed since {partial} was measured (its adapter builds, starts or "
        "checks it differently now) (start a new results file with -o, or undo the change "
        "to fake's adapter)"
    )


def test_a_cmd_session_resumes_with_its_cmd_fake(fake: Path, tmp_path: Path) -> None:
    """--resume of a --cmd session runs only the --cmd given again, never the command
    the file records (a results file from a cache or an artifact would choose what runs):
    the refusal names it; given again, the rest of the plan is restored."""
    from dataclasses import replace

    from icount.errors import UsageError
    from icount.serve.plan import ServeRequest, resume_request
    from icount.serve.targets import CmdServer

    cmd = CmdServer("true --port {port}", name="viacmd", paths=("a=/plaintext", "b=/json"),
                    body="Hello, World!")  # fmt: skip
    out = tmp_path / "cmd.json"
    first = _session(ServeRequest(cmd=cmd, backend="fake", runs=1, reps=1, idle_seconds=0), out)
    by_path = {c.path: c for c in first.cells}
    assert by_path["a"].valid and not by_path["b"].valid  # /json does not answer that body
    with pytest.raises(UsageError, match="runs only a --cmd given again") as refused:
        resume_request(ServeRequest(), out, frozenset())
    assert "the file records --cmd: true --port {port}" in str(refused.value.hint)
    resumed = resume_request(ServeRequest(cmd=cmd), out, frozenset({"cmd"}))
    assert resumed.cmd == cmd and resumed.runs == 1

    # each path can have its own answer; one kept in the provenance like the rest
    own = replace(cmd, path_jsons=('b={"message": "Hello, World!"}',))
    second = _session(ServeRequest(cmd=own, backend="fake", runs=1, reps=1, idle_seconds=0),
                      tmp_path / "own.json")  # fmt: skip
    assert all(c.valid for c in second.cells), [c.reason for c in second.cells]
    for wrong, message in (
        (replace(cmd, path_bodies=("c=x",)), "'c', which no --path names"),
        (replace(cmd, path_jsons=("b={",)), "--path-json b: not JSON"),
        (replace(cmd, path_bodies=("b=x",), path_jsons=("b=1",)), "its own answer twice"),
    ):
        with pytest.raises(UsageError, match=message):
            _session(ServeRequest(cmd=wrong, backend="fake", runs=1, reps=1), tmp_path / "w.json")


def test_resume_of_a_path_through_dot_dot_continues_the_file_fake(
    fake: Path, tmp_path: Path
) -> None:
    """--resume sub/../r.json was refused as 'r.json exists; refusing to overwrite it':
    the output is named normalised, and the file to resume was not."""
    from icount.serve.plan import ServeRequest
    from tests.support.cli import run_icount_here

    request = ServeRequest(targets=(str(fake),), backend="fake", runs=1, reps=1, idle_seconds=0)
    first = _session(request, tmp_path / "r.json")
    (tmp_path / "sub").mkdir()
    again = run_icount_here(["serve", "--resume", "sub/../r.json", "-q"], cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert results.load(tmp_path / "r.json").sorted() == first.sorted()


def test_a_spread_between_windows_is_explained_by_the_functions_behind_it_fake(
    fake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every 250th request also runs `gc_cycle` (50,000 instructions): one window in
    three counts it. The cell names the function, in its results and in its table."""
    from icount import results_table
    from icount.serve.plan import ServeRequest
    from tests.support import fake_backend

    monkeypatch.setattr(
        fake_backend,
        "CONFIG",
        fake_backend.FakeConfig(
            cost=lambda i, p: 1000.0 + (5e4 if i % 250 == 0 else 0.0),
            function=lambda i: "gc_cycle" if i % 250 == 0 else "handle_request",
            window_cost=0,
        ),
    )
    request = ServeRequest(targets=(str(fake),), backend="fake", runs=2, reps=3, requests=100,
                           warmup=Warmup(20), idle_seconds=0)  # fmt: skip
    res = _session(request, tmp_path / "r.json")
    cell = next(c for c in res.cells if c.path == "plaintext")
    assert cell.valid  # the runs agree (median of reps 1000, 1000): the windows do not
    explained = cell.extra["spread_explained"]
    assert explained["functions"][:2] == [["gc_cycle", 510.0], ["handle_request", -10.0]]
    assert explained["high"] == {"window": "run 2 rep 3", "per_request": 1500.0}  # ties: by name
    assert explained["explained"] == 1.0
    notes = results_table.build_table(res).notes
    assert any(
        "fake/plaintext/fake: windows differ by 50.00% (run 2 rep 3 1.500k vs run 1 rep 1 "
        "1.000k per request); per request, the highest minus the lowest: gc_cycle +510.0, "
        "handle_request -10.0, vgdb +0.0; the median depends on which windows that work "
        "fell in" in n
        for n in notes
    ), notes


def test_a_config_that_fails_to_render_invalidates_only_its_cells_fake(
    fake: Path, tmp_path: Path
) -> None:
    """The template of one target is broken by the time its server starts: its cells
    say which file and why; the other target is measured; the session ends normally."""
    from icount.serve.plan import ServeRequest

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "adapter.toml").write_text(
        FAKE_ADAPTER.replace('name = "fake"', 'name = "broken"').replace(
            '"{port}"]', '"{port}", "-c", "{render:srv.conf}"]'
        )
    )
    (broken / "srv.conf").write_text("listen {port};\n")
    request = ServeRequest(
        targets=(str(broken / "adapter.toml"), str(fake)),
        backend="fake", runs=1, reps=1, requests=20, warmup=Warmup(0),
        idle_seconds=0,  # the idle window sleeps, and these cells are about their start
    )  # fmt: skip
    (broken / "srv.conf").write_text("listen {port}; user {nobody};\n")  # after loading
    res = _session(request, tmp_path / "r.json")
    reasons = {c.key_text: c.reason for c in res.cells}
    assert reasons["fake/plaintext/fake"] is None and reasons["fake/json/fake"] is None
    for path in ("plaintext", "json"):
        assert reasons[f"broken/{path}/fake"] == (
            f"run 1 of 1: cannot start the server: {broken / 'srv.conf'}: "
            "placeholder '{nobody}' cannot be used here"
        )
    assert results.load(tmp_path / "r.json").sorted() == res.sorted()


def test_a_cold_start_cell_counts_from_exec_to_the_first_correct_answer_fake(
    fake: Path, tmp_path: Path
) -> None:
    """--cold-start adds a cell per target: one figure per fresh server, not per request."""
    from icount.results import UNIT_INSTRUCTIONS
    from icount.results.details import ServeDetail
    from icount.serve.plan import ServeRequest

    request = ServeRequest(targets=(str(fake),), backend="fake", runs=2, reps=1, requests=20,
                           warmup=Warmup(0), idle_seconds=0, cold_start=True)  # fmt: skip
    res = _session(request, tmp_path / "r.json")
    cold = next(c for c in res.cells if c.path == "cold-start")
    assert cold.unit == UNIT_INSTRUCTIONS and cold.params["kind"] == "cold-start"
    # the first request is the first correct answer: 800, and 27 for closing the count
    assert cold.values == [827.0, 827.0] and cold.valid
    detail = cold.runs[0].detail
    assert isinstance(detail, ServeDetail) and detail.window == "cold-start"
    assert [c.path for c in sorted(res.cells, key=lambda c: c.order)] == [
        "plaintext",
        "json",
        "cold-start",
    ]
    assert results.load(tmp_path / "r.json").sorted() == res.sorted()  # saved and read back
    assert "cold-start: instructions from exec to the first answer" in report_title(res)


def report_title(res: results.Results) -> str:
    from icount import results_table

    title = results_table.build_table(res).title
    assert title is not None
    return title


def test_resume_restores_memory_profile_top_and_collectors_unless_given(tmp_path: Path) -> None:
    """Options a session was asked for that change what its cells hold: a resumed session
    that silently dropped them would measure its last cells without them."""
    import json

    from icount.errors import UsageError
    from icount.results.files import provenance_path
    from icount.serve.plan import ServeRequest, resume_request

    out = tmp_path / "r.json"
    plan = {"targets": ["/a/adapter.toml"], "memory": True, "profile_top": 5,
            "collectors": ["my_gc_.*", "Sweep::run"]}  # fmt: skip
    provenance_path(out).write_text(json.dumps({"plan": plan}))
    resumed = resume_request(ServeRequest(), out, frozenset())
    assert (resumed.memory, resumed.profile_top) == (True, 5)
    assert resumed.collectors == ("my_gc_.*", "Sweep::run")
    # given again on the command line (the parameter is --collector): that one wins
    given = ServeRequest(collectors=("other",), profile_top=7)
    again = resume_request(given, out, frozenset({"collector", "profile_top"}))
    assert (again.collectors, again.profile_top, again.memory) == (("other",), 7, True)
    plan["collectors"] = ["("]
    provenance_path(out).write_text(json.dumps({"plan": plan}))
    with pytest.raises(UsageError, match="recorded collectors"):
        resume_request(ServeRequest(), out, frozenset())


def test_the_time_left_follows_what_the_runs_cost_not_how_many_fake(
    fake: Path, tmp_path: Path
) -> None:
    """A target whose runs send 10 times the requests of another's: before its first run,
    its cells are counted at 10 times the first target's runs, not as many runs. The
    clock is the fake servers' requests, 10 ms each: no run takes real time to count."""
    from icount import environment
    from icount.serve import plan as plan_mod
    from icount.serve import session
    from icount.serve.plan import ServeRequest
    from tests.support import fake_backend

    targets = []
    for name, requests in (("small", 20), ("big", 200)):
        (tmp_path / name).mkdir()
        adapter = tmp_path / name / "adapter.toml"
        own = f'name = "{name}"\nrequests = {requests}'
        adapter.write_text(FAKE_ADAPTER.replace('name = "fake"', own))
        targets.append(str(adapter))
    request = ServeRequest(targets=tuple(targets), backend="fake", runs=2, reps=1,
                           warmup=Warmup(0), idle_seconds=0)  # fmt: skip
    plan = plan_mod.prepare(request, output=tmp_path / "r.json", resume=None, force=False)
    told = Told()

    def clock() -> float:
        return 0.01 * sum(s.requests for s in fake_backend.CONFIG.started)

    recorder = environment.ProvenanceRecorder(["icount", "serve"])
    res = session.run_session(plan, told, recorder, clock=clock)
    assert all(c.valid for c in res.cells)

    def first(head: str) -> tuple[str, float | None]:
        return next((t, left) for t, left in told.lines if t.startswith(head))

    assert first("small/plaintext/fake run 1/2") == (
        "small/plaintext/fake run 1/2: waiting for the server (up to 30 s)",
        None,  # nothing measured yet
    )
    # 4 small runs of 20 requests each (and the server's probes) are done, 4 big ones of
    # 200 are left: 10 times the time so far, where counting runs said as much again
    _, left = first("big/plaintext/fake run 1/2")
    so_far = 0.01 * sum(s.requests for s in fake_backend.CONFIG.started[:4])
    assert so_far == pytest.approx(0.8, rel=0.1)
    assert left == pytest.approx(4 * 200 * so_far / 80)
    # the next big cell takes the big target's own rate: its 2 runs, the session's last
    text, left = first("big/json/fake run 1/2")
    big = 0.01 * sum(s.requests for s in fake_backend.CONFIG.started[4:6])
    assert text.endswith(f"(cell eta {big:.0f} s)") and big == pytest.approx(4.0, rel=0.05)
    assert left == pytest.approx(big)


def test_a_targets_sizes_are_read_once_for_all_its_cells_fake(
    fake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its binary's sizes and build label are the same for each of its cells: read once,
    after the builds, and each cell holds them (a --cmd target has a binary)."""
    from icount.serve import targets
    from icount.serve.plan import ServeRequest
    from icount.serve.targets import CmdServer

    read: list[str] = []
    binary_sizes = targets.binary_sizes

    def counted(target: Any) -> dict[str, Any]:
        read.append(target.adapter.name)
        return binary_sizes(target)

    monkeypatch.setattr(targets, "binary_sizes", counted)
    cmd = CmdServer("true --port {port}", name="viacmd", paths=("a=/plaintext", "b=/plaintext"),
                    body="Hello, World!")  # fmt: skip
    res = _session(ServeRequest(cmd=cmd, backend="fake", runs=1, reps=1, idle_seconds=0,
                                cold_start=True), tmp_path / "r.json")  # fmt: skip
    assert read == ["viacmd"]
    assert [c.path for c in res.cells] == ["a", "b", "cold-start"]
    shown = [{k: v for k, v in c.extra.items() if k.startswith(("binary", "build"))}
             for c in res.cells]  # fmt: skip
    assert shown[0]["binary"] == "true" and shown[0]["binary_bytes"] > 0 and "build" in shown[0]
    assert shown[1] == shown[0] and shown[2] == shown[0]
