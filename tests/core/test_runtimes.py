"""The runtime table on call graphs of known cost: detection from function names,
entry points counted inclusively and once, helper threads split by what they name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from icount import runtimes
from icount.callgrind.parser import parse_bytes, parse_file


def profile(body: str) -> bytes:
    return ("# callgrind format\nevents: Ir\n" + body).encode()


# main (10) -> Heap::CollectGarbage: 100 inclusive, which calls IncrementalMarking::Step
# through a visitor only the collector calls (its 30 must not count twice), and
# -> handler (50). A platform worker thread (no caller) runs ConcurrentMarking (70),
# a compile task (40) and 20 of its own.
V8 = profile("""fn=main
0 10
cfn=v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace)
calls=2 0
0 100
cfn=handler
calls=5 0
0 50
fn=handler
0 50
fn=v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace)
0 40
cfn=visitor
calls=3 0
0 60
fn=visitor
0 30
cfn=v8::internal::IncrementalMarking::Step(double)
calls=1 0
0 30
fn=v8::internal::IncrementalMarking::Step(double)
0 30
fn=node::(anonymous namespace)::PlatformWorkerThread(void*)
0 20
cfn=v8::internal::ConcurrentMarking::RunMajor(v8::JobDelegate*)
calls=4 0
0 70
cfn=v8::internal::OptimizingCompileDispatcher::CompileTask::RunInternal()
calls=1 0
0 40
fn=v8::internal::ConcurrentMarking::RunMajor(v8::JobDelegate*)
0 70
fn=v8::internal::OptimizingCompileDispatcher::CompileTask::RunInternal()
0 40
""")


def test_v8_is_detected_and_each_entry_counts_once() -> None:
    work = runtimes.runtime_work(parse_bytes(V8, "v8"))
    assert work.runtime == "v8"
    # 100 on the main thread (Step inside it counted once), the worker's marking 70 and
    # its own 20 to the collector; its compile task apart
    assert (work.collector, work.compiler) == (190, 40)
    assert work.calls == 2 + 4 + 1  # the calls into the entries; the worker is a root


def test_a_profile_without_runtime_markers_has_no_runtime_work() -> None:
    prof = parse_bytes(profile("fn=main\n0 10\ncfn=periodic_work\ncalls=1 0\n0 5\n"
                               "fn=periodic_work\n0 5\n"), "c")  # fmt: skip
    assert runtimes.runtime_work(prof) == runtimes.RuntimeWork(None)
    # --collector names it for a runtime outside the table
    assert runtimes.runtime_work(prof, ["periodic_work"]) == runtimes.RuntimeWork(
        runtimes.USER, 5, 0, 1
    )


def test_a_running_thread_loop_counts_its_rounds_as_events() -> None:
    """An entry whose call began before the dump: cost on its edge, no call."""
    prof = parse_bytes(profile("fn=start_thread\n0 1\ncfn=collector_thread\ncalls=0 0\n"
                               "0 300\nfn=collector_thread\n0 0\ncfn=work\ncalls=3 0\n0 300\n"
                               "fn=work\n0 300\n"), "t")  # fmt: skip
    work = runtimes.runtime_work(prof, ["collector_thread"])
    assert (work.collector, work.calls) == (300, 3)


def test_every_table_entry_is_a_regular_expression_with_evidence() -> None:
    for runtime in runtimes.TABLE:
        assert runtime.markers
        for entry in runtime.entries:
            re.compile(entry.pattern)
            assert entry.kind in (runtimes.COLLECTOR, runtimes.COMPILER, runtimes.HELPER,
                                  runtimes.SELF, runtimes.SCHEDULER)  # fmt: skip
            assert entry.evidence


@pytest.mark.parametrize("pattern", ["(", "a[", "*x"])
def test_a_bad_collector_pattern_is_refused_with_the_reason(pattern: str) -> None:
    why = runtimes.check_pattern(pattern)
    assert why is not None and why.startswith(f"--collector {pattern!r}")


def test_go_is_counted_by_the_self_cost_of_functions_only_its_collector_runs() -> None:
    """mallocgc (the allocating mutator's, 40) stays the mutator's; scanobject (its
    recursive activation too) and a gcWork method are the collector's, whoever called
    them: Go's stack switches leave inclusive costs unreliable."""
    prof = parse_bytes(profile("""fn=runtime.mallocgc
0 40
cfn=runtime.scanobject
calls=1 0
0 25
fn=runtime.scanobject
0 20
cfn=runtime.scanobject'2
calls=1 0
0 5
fn=runtime.scanobject'2
0 5
fn=runtime.(*gcWork).tryGet
0 7
fn=main.handler
0 100
"""), "go")  # fmt: skip
    work = runtimes.runtime_work(prof)
    assert work.runtime == "go"
    assert (work.collector, work.compiler) == (32, 0)


@pytest.mark.parametrize(
    ("name", "collector"),
    [
        ("VM_GenCollectForAllocation::doit()", True),  # the serial collector's young pauses
        ("VM_G1CollectForAllocation::doit()", True),
        ("VM_ParallelGCFailedAllocation::doit()", True),
        ("VM_Deoptimize::doit()", False),  # a safepoint operation that is no collection
    ],
)
def test_hotspot_collections_are_matched_whatever_the_collector(name: str, collector: bool) -> None:
    (hotspot,) = [r for r in runtimes.TABLE if r.name == "hotspot"]
    kinds = [e.kind for e in hotspot.entries if re.fullmatch(e.pattern, name)]
    assert kinds == ([runtimes.COLLECTOR] if collector else [])


@pytest.mark.parametrize(
    ("name", "scheduler"),
    [
        ("runtime.gosave_systemstack_switch", True),
        # Go 1.19's profiles name it bare (+6.6 per request where every read waited)
        ("gosave_systemstack_switch", True),
        ("runtime.findRunnable", True),
        ("runtime.mallocgc", False),  # the allocating mutator's
        ("runtime.futex.abi0", True),
        # a stripped binary's names come from .gopclntab, which has no ABI suffix
        # (caddy: ~845 per request of these fell in the mutator)
        ("runtime.futex", True),
        ("runtime.nanotime1", True),
        ("runtime.systemstack", True),
        ("runtime.gogo", True),
        ("runtime.epollwait", True),
        ("runtime.usleep", True),
        ("runtime.osyield", True),
    ],
)
def test_go_scheduler_names_are_matched_bare_or_qualified(name: str, scheduler: bool) -> None:
    (go,) = [r for r in runtimes.TABLE if r.name == "go"]
    kinds = [e.kind for e in go.entries if re.fullmatch(e.pattern, name)]
    assert (runtimes.SCHEDULER in kinds) is scheduler


def test_a_task_dispatcher_shared_by_a_worker_and_the_main_thread_counts_once() -> None:
    """V8's CancelableTask::Run thunk runs a worker's compile task (90) and the main
    thread's minor GC task (10): the worker is counted whole (its compile apart) and the
    main thread's collection once, whatever share of the thunk each thread brought."""
    prof = parse_bytes(profile("""fn=node::(anonymous namespace)::PlatformWorkerThread(void*)
0 5
cfn=thunk to v8::internal::CancelableTask::Run()
calls=3 0
0 90
fn=uv_run
0 200
cfn=thunk to v8::internal::CancelableTask::Run()
calls=1 0
0 10
fn=thunk to v8::internal::CancelableTask::Run()
0 0
cfn=v8::internal::OptimizingCompileDispatcher::CompileTask::RunInternal()
calls=3 0
0 90
cfn=v8::internal::MinorGCJob::Task::RunInternal()
calls=1 0
0 10
fn=v8::internal::OptimizingCompileDispatcher::CompileTask::RunInternal()
0 90
fn=v8::internal::MinorGCJob::Task::RunInternal()
0 0
cfn=v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace)
calls=1 0
0 10
fn=v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace)
0 10
"""), "v8")  # fmt: skip
    work = runtimes.runtime_work(prof)
    assert (work.collector, work.compiler) == (10 + 5, 90)


V8_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "v8"


def test_a_cold_node_window_counts_its_background_compiling_once() -> None:
    """A real window: node-http's 1000 requests after 1,100 (fixtures/v8/README.md). Its
    worker threads (the root PlatformWorkerThread) ran 32 TurboFan compile tasks through
    the thunk the main thread's minor GC task also goes through; counted twice (once
    in the thread, once through the thunk) the mutator read -229.6k per request. The
    main thread's root, uv_run, holds everything the worker does not."""
    prof = parse_file(V8_FIXTURES / "node-http-cold.callgrind")
    names = [f.name for f in prof.functions]
    incl = dict(zip(names, prof.inclusive_cost()[:, prof.event_index("Ir")].tolist(), strict=True))
    worker = incl["node::(anonymous namespace)::PlatformWorkerThread(void*)"]
    main_thread = incl["uv_run"]
    assert worker + main_thread == pytest.approx(prof.totals["Ir"], rel=0.005)
    work = runtimes.runtime_work(prof)
    compile_task = incl["v8::internal::OptimizingCompileDispatcher::CompileTask::RunInternal()"]
    assert work.compiler == pytest.approx(compile_task, rel=1e-4)
    # the rest of the worker (its scavenging jobs, waits) and the main thread's GCs
    main_gc = incl["v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace, "
                   "v8::internal::GarbageCollectionReason, v8::GCCallbackFlags)"]  # fmt: skip
    assert work.collector == pytest.approx(worker - compile_task + main_gc, rel=0.01)
    mutator = prof.totals["Ir"] - work.collector - work.compiler
    assert mutator == pytest.approx(main_thread - main_gc, rel=0.01)


def test_express_windows_agree_on_the_mutator_while_the_collector_moves() -> None:
    """Three real 1000-request windows of one Express process after 100,000 requests
    (fixtures/v8/README.md): their whole counts differ by 6.5% (concurrent marking,
    scavenges and sweeping in some windows), the mutator by 0.12%. Two of them start a
    major GC's incremental marking from V8's IncrementalMarkingJob task, 1.5M-1.7M of
    root marking outside CollectGarbage: left in the mutator, it read 0.43% apart."""
    totals, mutators = [], []
    for n in (2, 4, 6):
        prof = parse_file(V8_FIXTURES / f"express-json-{n}.callgrind")
        work = runtimes.runtime_work(prof)
        assert work.runtime == "v8" and work.compiler == 0
        totals.append(prof.totals["Ir"])
        mutators.append(prof.totals["Ir"] - work.collector)
    assert (max(totals) - min(totals)) / min(totals) > 0.06
    assert (max(mutators) - min(mutators)) / min(mutators) < 0.0015, mutators


def test_the_collectors_pacing_check_is_the_collectors() -> None:
    """A fourth real Express window, of another process (fixtures/v8/README.md): 615.7k
    per request whole, 9.8% above the lowest of the four. Its allocation slow path asked
    V8's allocation-limit check (Heap::StartIncrementalMarkingIfAllocationLimitIsReached,
    1.41M) more often and at a larger old generation; counted as the collector's, its
    mutator is within the 1% limit of the other three windows'."""
    totals, mutators = [], []
    for name in ("express-json-2", "express-json-4", "express-json-6", "express-json-limit"):
        prof = parse_file(V8_FIXTURES / f"{name}.callgrind")
        work = runtimes.runtime_work(prof)
        totals.append(prof.totals["Ir"])
        mutators.append(prof.totals["Ir"] - work.collector - work.compiler)
    assert (max(totals) - min(totals)) / min(totals) > 0.09
    assert (max(mutators) - min(mutators)) / min(mutators) < 0.01, mutators


def test_the_old_generations_refills_and_the_marking_barrier_are_the_collectors() -> None:
    """Two real Express windows of one process, the highest and the lowest mutator of
    eight (fixtures/v8/README.md has their figures). In the first, marking was on: the
    main thread refilled its old-space allocation area from the free lists the last
    sweeping left, and the marking barrier ran; in the second neither. The refills alone
    would keep the two mutators apart by more than the limit below; the barrier's part
    is smaller than its margin, so its functions are checked by name."""
    mutators = []
    for name in ("express-json-refill", "express-json-quiet"):
        prof = parse_file(V8_FIXTURES / f"{name}.callgrind")
        work = runtimes.runtime_work(prof)
        mutators.append(prof.totals["Ir"] - work.collector - work.compiler)
    assert abs(mutators[0] - mutators[1]) / min(mutators) < 0.0015, mutators
    (v8,) = [r for r in runtimes.TABLE if r.name == "v8"]
    prof = parse_file(V8_FIXTURES / "express-json-refill.callgrind")
    barrier = [f.name for f in prof.functions
               if re.search(r"MarkingBarrier::Write|WriteBarrier::Marking", f.name)]  # fmt: skip
    assert len(barrier) >= 4, barrier
    for name in barrier:
        first = next((e.kind for e in v8.entries if re.fullmatch(e.pattern, name)), None)
        assert first == runtimes.COLLECTOR, name
