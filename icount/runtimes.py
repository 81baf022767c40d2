"""The runtimes whose own work (collector, background compiler) is counted apart from
the work of serving requests, and how that work is found in a callgrind profile.

A collected runtime's windows differ because its collector runs in some and not in
others (Express's 1000-request windows 533.5k-600.2k per request, Go's 1-1.5%): the
mutator's per-request cost is stable, the collector's is stable only on average. So a
window is split into the runtime's work, found as the inclusive cost of the runtime's
collector and compiler entry points, and the rest (the mutator).

Which runtime a server runs is detected from the functions its profile names (each
runtime's `markers`), never configured; `--collector PATTERN` adds entry points for a
runtime not in the table. An entry's cost is the inclusive cost of the calls into it
from outside the runtime's work (callgrind's `calls=` lines; a call that is still running
when a window's dump is taken is counted up to the dump, so a helper thread's loop that
never returns is counted window by window). Calls between entry points are not counted
twice: each function is inside the runtime's work for the share of its instructions
its callers brought from inside it (`_inside`: 1 for a function called only from inside,
a fraction for a dispatcher both a helper thread and the main thread call), and its
calls into an entry point count only for the rest.

Helper threads (V8's platform workers, HotSpot's GC and compiler threads) are counted
whole through their thread's start function; work of theirs that a specific entry point
names goes to that entry's kind, the rest of the thread to the collector.

Evidence: an entry quotes what was measured where it was (the spread notes of the
bundled targets, issue 19, 2026-12-01); entries of runtimes not measured here say they
come from the runtime's sources.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from icount.callgrind.model import Profile

COLLECTOR = "collector"
COMPILER = "compiler"
HELPER = "helper"  # a helper thread's start function: the rest of the thread is the collector's
# counted by its self cost, not inclusively: for runtimes whose stacks callgrind cannot
# follow (Go switches goroutine and system stacks, and inclusive costs across a switch
# land on whatever callgrind's shadow stack held)
SELF = "collector-self"
# the runtime's scheduler (finding work, parking and waking goroutines and threads, its
# network poller), counted by self cost and kept apart from the collector: how much of it
# a request costs depends on whether the next request had arrived when the server looked
# for it (go-http, below), not on the code the request runs
SCHEDULER = "scheduler-self"
KINDS = (COLLECTOR, COMPILER)
USER = "user"  # the runtime name of a profile where only --collector patterns matched


@dataclass(frozen=True)
class Entry:
    pattern: str  # a regular expression matched against the whole function name
    kind: str  # COLLECTOR, COMPILER, HELPER or SELF
    evidence: str


@dataclass(frozen=True)
class Runtime:
    name: str
    markers: tuple[str, ...]  # a function whose name starts with one of these: this runtime
    entries: tuple[Entry, ...]


_V8_MEASURED = (
    "Express spread notes (8 windows after 100,000 requests): "
    "MarkingVisitorBase::ProcessStrongHeapObject +12.3k, ConcurrentMarking::RunMajor +8.1k, "
    "BodyDescriptorBase::IterateMaybeWeakPointers +7.7k, Sweeper::RawSweep +7.4k"
)

TABLE: tuple[Runtime, ...] = (
    Runtime(
        "v8",
        ("v8::internal::", "node::"),
        (
            # every main-thread collection (scavenge, mark-compact's atomic pause) enters
            # here; the marking and sweeping visitors measured run below it
            Entry(r"v8::internal::Heap::CollectGarbage\(.*", COLLECTOR, _V8_MEASURED),
            Entry(r"v8::internal::ConcurrentMarking::Run(Major|Minor)\b.*", COLLECTOR,
                  "ConcurrentMarking::RunMajor +8.1k per request between Express windows"),
            Entry(r"v8::internal::IncrementalMarking::(Step|AdvanceOnAllocation|AdvanceAndFinalizeIfComplete)\b.*",
                  COLLECTOR, "marking visitors measured in the spread notes; incremental steps "
                  "on the main thread (V8's sources)"),
            # starting a major GC's incremental marking marks the roots on the main thread,
            # from a foreground task (IncrementalMarkingJob) or an allocation limit, outside
            # CollectGarbage
            Entry(r"v8::internal::Heap::StartIncrementalMarking\(.*|"
                  r"v8::internal::IncrementalMarkingJob::Task::RunInternal\(.*", COLLECTOR,
                  "Express json (2026-12-02): IncrementalMarking::Start 1.52M-1.70M inclusive "
                  "in the windows it fell in (IterateObjectCache +607, WhiteToGreyAndPush "
                  "+221 per request between windows), from IncrementalMarkingJob::Task; "
                  "counted, one process's three mutator windows went from 0.43% apart to "
                  "0.11%"),
            # the allocation slow path asks whether the old generation has reached the
            # limit that starts marking: the collector's pacing, its cost growing with the
            # old generation between collections (OldGenerationSizeOfObjects walks spaces)
            Entry(r"v8::internal::Heap::StartIncrementalMarkingIfAllocationLimitIsReached\(.*",
                  COLLECTOR, "Express json (2026-12-02), the highest of 9 mutator windows "
                  "(526.4k per request against 520.9k-523.0k): OldGenerationSizeOfObjects "
                  "+760, IncrementalMarkingLimitReached +303, OldGenerationCapacity +204, "
                  "ShouldOptimizeForMemoryUsage +141 per request, all below this check "
                  "(1.41M inclusive in that window); counted, the 9 windows 1.10% apart "
                  "-> 0.86%"),
            # the main thread refilling its old-space allocation area from the free lists
            # the last mark-compact's sweeping left: a fresh page lasts for many
            # allocations, the fragments after a collection for few, so how often it runs
            # is the collector's doing, not the request's (the new space's bump pointer,
            # the allocation proper, stays the mutator's); the marking barrier runs only
            # while incremental marking is on, and is marking
            Entry(r"v8::internal::PagedSpaceBase::RefillLabMain\(.*", COLLECTOR,
                  "Express json (2026-12-02, 8 windows of one process after 30,000 "
                  "requests): RefillLabMain 0.81M-1.26M inclusive in the 3 windows whose "
                  "mutator was highest (1,436 calls, TryAllocationFromFreeListMain 1.11M "
                  "of it, in the highest), 0.03M-0.24M in the other 5; with the marking "
                  "barrier below, counted, the 8 mutator windows 0.36% apart -> 0.11%"),
            Entry(r"v8::internal::MarkingBarrier::Write\w*\(.*|"
                  r"v8::internal::WriteBarrier::Marking(Slow|FromCode)\w*\(.*", COLLECTOR,
                  "the same 8 Express windows: MarkingBarrier::Write 67k-131k and "
                  "WriteBarrier::MarkingSlow in the 3 windows with incremental marking on, "
                  "none in the other 5"),
            Entry(r"v8::internal::Sweeper::\w+::Run\b.*|v8::internal::Sweeper::(ParallelSweepSpace|SweepSpaceFromTask)\b.*",
                  COLLECTOR, "Sweeper::RawSweep +7.4k per request between Express windows"),
            Entry(r"v8::internal::ScavengerCollector::JobTask::Run\b.*", COLLECTOR,
                  "scavenging named among V8's heap functions in the Express windows"),
            # how much of it a request costs follows the arrival: under idle arrival
            # V8 compiles a router's per-request closure again after every major
            # collection (its code, held by live closures only, does not survive a
            # collection that finds no request in flight); with --arrival closed next
            # to none (docs/measuring.md, Express). Periodic in requests as the
            # collections are, it is part of a cycle's work (results/runtime.py's bound).
            Entry(r"v8::internal::(OptimizingCompileDispatcher::CompileTask::Run\w*|"
                  r"compiler::PipelineCompilationJob::ExecuteJobImpl|"
                  r"maglev::MaglevConcurrentDispatcher::JobTask::Run)\b.*",
                  COMPILER, "TurboFan's compiler::GraphReducer::ReduceTop/Reduce ~+0.9k "
                  "between Express windows, on its background compile job"),
            Entry(r"node::\(anonymous namespace\)::PlatformWorkerThread\(.*|"
                  r"node::WorkerThreadsTaskRunner::DelayedTaskScheduler::\w+\(.*",
                  HELPER, "Node's platform worker threads run V8's background jobs "
                  "(concurrent marking, sweeping, compile jobs) and nothing of a request"),
        ),
    ),
    Runtime(
        "go",
        ("runtime.mallocgc", "runtime.schedule", "runtime.goexit"),
        (
            # Measured on go-http (2 runs x 3 windows of 10,000 requests): counted
            # inclusively through gcBgMarkWorker, gcDrain, markroot, bgsweep..., the
            # windows' totals agreed (34.09k-34.46k) while the split moved: json's mutator
            # fell 37.35k -> 36.39k as its collector rose 1.77k -> 2.81k, the totals flat
            # at 39.1k. So Go's collector is counted by the self cost of functions that
            # only the collector runs; the spread notes named runtime.scanblock,
            # scanobject, findObject (mallocgc and memclrNoHeapPointers are the
            # allocating mutator's and stay its). So counted, go-http json (2 runs x 3
            # windows of 10,000): mutator 38.33k-38.61k, collector 792 ±52, total 39.32k
            # valid.
            Entry(r"runtime\.(scanobject|scanblock|scanstack|scanframeworker|greyobject|"
                  r"findObject|gcDrain|gcDrainN|markroot\w*|gcmarknewobject|wbBufFlush1?|"
                  r"gcBgMarkWorker|gcAssistAlloc1?|gcFlushBgCredit|gcStart|gcMarkDone|"
                  r"gcMarkTermination|gcSweep|sweepone|bgsweep|bgscavenge|"
                  r"\(\*gcWork\)\.\w+|\(\*gcBits\)\.\w+|\(\*markBits\)\.\w+|"
                  r"\(\*sweepLocked\)\.\w+|\(\*mspan\)\.(sweep|markBitsForIndex|"
                  r"refillAllocCache|countAlloc)|\(\*scavengerState\)\.\w+|"
                  r"\(\*pageAlloc\)\.scavenge\w*|markBitsForAddr|heapBitsForAddr|"
                  r"\(\*gcControllerState\)\.\w+)",
                  SELF, "go-http spread notes: runtime.scanblock, scanobject, findObject"),
            # The sweeper's frees and the mark bits of a new cycle: go-http plaintext, a
            # window of 10,000 requests with one more collection than another of the same
            # process (collector 716 vs 523 per request) also held (*mheap).freeSpanLocked
            # +9.2, nextSpanForSweep +6.9, (*spanSet).pop +6.7, (*pageAlloc).free +5.7,
            # newMarkBits +3.4, (*scavengeIndex).mark +3.2, (*activeSweep).end +2.7,
            # (*sweepLocker).tryAcquire +2.2 per request, none of which a request runs.
            Entry(r"runtime\.(\(\*mheap\)\.(freeSpan|freeSpanLocked|freeSpan\.func1|"
                  r"nextSpanForSweep)|\(\*spanSet\)\.\w+|\(\*pageAlloc\)\.free|"
                  r"newMarkBits|newAllocBits|\(\*activeSweep\)\.\w+|\(\*sweepLocker\)\.\w+|"
                  r"\(\*scavengeIndex\)\.\w+|\(\*mcache\)\.prepareForSweep)",
                  SELF, "go-http plaintext: a window with one more collection (2026-12-02)"),
            # Why go-http plaintext was refused (two processes 1.45% apart, spread notes
            # netpoll and stealWork): the scheduler, not the collector nor any state of the
            # process (GOMAXPROCS=1 from the one CPU icount pins it to, 6-7 threads, no
            # spinning M, in every process; one process's windows differed as much as two
            # processes'). With one keep-alive connection, after answering, the server
            # reads the next request: already there, it parses it at once; not yet there,
            # the read fails (EAGAIN), the goroutine parks, the P finds nothing to run
            # (findRunnable, stealWork), blocks in netpoll, and is woken when it comes.
            # Measured (plain callgrind, pinned, windows of one process, 2026-12-02,
            # machine loaded): a client that answers at once: 33.89k-34.14k per request,
            # 1.03-1.18 reads per request; the same client sleeping 2 ms before each
            # request (every read waits): 36.63k-36.75k, 2.0 reads. The 2.7k between them
            # is the scheduler's, poller's and syscall hand-off's functions below (netpoll
            # +451, stealWork +273, findRunnable +239, casgstatus +157, unlock2 +112,
            # nanotime1 +96, lock2 +86, pidleget +70 ...); net/http, bufio and textproto
            # read the same in both. In icount's windows the share of requests that waited
            # moved from window to window with the machine's load (netpoll 0.30-1.08 calls
            # per request), 33.73k-35.06k per request. Natively (/proc's syscr) the server
            # waits for nearly every request: 1.95 reads per request. Counted apart, the
            # rest read 29.54k-29.72k in those 9 windows (0.62%), 29.62k-29.68k and
            # 29.77k-29.78k with the client answering at once and sleeping. The locks and
            # the clock are here because the scheduler's wait is most of their variation;
            # what the request itself spends in them goes along (it stays in the total).
            Entry(r"runtime\.(netpoll\w*|stealWork|findRunnable|schedule|execute|park_m|"
                  r"gopark|goready|ready|casgstatus|pidleget|pidleput|wirep|acquirep|"
                  r"releasep|handoffp|checkTimers\w*|checkRunqsNoP|checkIdleGCNoP|"
                  r"timeSleepUntil|\(\*limiterEvent\)\.\w+|notetsleep\w*|notesleep|"
                  r"notewakeup|futexsleep|futexwakeup|futex(?:\.abi0)?|epollwait(?:\.abi0)?|stopm|"
                  r"startm|wakep|mPark|injectglist|runqget|runqput\w*|runqgrab|runqsteal|"
                  r"globrunq\w*|sysmon|retake|usleep(?:\.abi0)?|resetspinning|checkdead|"
                  r"incidlelocked|mcall|gogo(?:\.abi0)?|goexit\d*|gfget|gfput|newproc1?|"
                  r"updateTimerPMask|clearDeletedTimers|runtimer|dodeltimer0?|osyield(?:\.abi0)?|"
                  r"entersyscall\w*|exitsyscall\w*|reentersyscall|lock2|unlock2|"
                  r"nanotime1(?:\.abi0)?|save|systemstack(?:\.abi0)?|gosave_systemstack_switch)|gogo|gosave_systemstack_switch|"
                  r"internal/poll\.(runtime_pollWait|\(\*pollDesc\)\.wait\w*)",
                  SCHEDULER, "go-http plaintext: a client answering at once vs one sleeping "
                  "2 ms per request, 33.9k vs 36.7k per request, the difference all here"),
        ),
    ),
    Runtime(
        "cpython",
        ("_PyEval_EvalFrameDefault", "PyObject_GC_", "Py_RunMain"),
        (
            Entry(r"gc_collect_\w+|_PyGC_Collect|collect_with_callback", COLLECTOR,
                  "CPython's cyclic collector (Python/gc.c): not measured here"),
        ),
    ),
    Runtime(
        "hotspot",
        ("JVM_", "Threads::", "JavaThread::"),
        (
            Entry(r"VM_\w*(GC|Collect)\w*::doit\(.*|\w*GCTaskThread::run\(.*|"
                  r"ConcurrentGCThread::run\(.*|G1ConcurrentRefineThread::\w+\(.*|"
                  r"SafepointSynchronize::(begin|end)\(.*",
                  COLLECTOR, "HotSpot's GC operations, threads and safepoint phases (its "
                  "sources); the serial collector's young collections run in "
                  "VM_GenCollectForAllocation::doit (33.29M inclusive in one window of the "
                  "bundled jvm-http with a 16 MB heap, which VM_*GC*::doit missed)"),
            Entry(r"CompileBroker::compiler_thread_loop\(.*", COMPILER,
                  "HotSpot's JIT compiler threads (its sources; the bundled jvm-http's C1 "
                  "compiles counted through it, 2026-12-01)"),
        ),
    ),
    Runtime(
        "javascriptcore",
        ("JSC::",),
        (
            Entry(r"JSC::Heap::(collectSync|collectAsync|collectIfNecessaryOrDefer|"
                  r"runCurrentPhase|sweepSynchronously)\b.*|JSC::IncrementalSweeper::doSweep\b.*|"
                  r"JSC::SlotVisitor::drain\w*\b.*", COLLECTOR,
                  "JavaScriptCore's collector (its sources): not measured here"),
            Entry(r"JSC::(DFG|FTL|Wasm)::\w*Plan::compileInThread\b.*|JSC::JITWorklist\w*::\w+::work\b.*",
                  COMPILER, "JavaScriptCore's JIT plans (its sources): not measured here"),
        ),
    ),
)  # fmt: skip

_RECURSION = re.compile(r"'[0-9]+$")  # callgrind's name'2 for a recursive activation


@dataclass(frozen=True)
class RuntimeWork:
    """The runtime's own instructions in one profile (one window of one process)."""

    runtime: str | None  # the table's name; USER for --collector alone; None: none found
    collector: int = 0
    compiler: int = 0
    # calls into the entry points counted: the work comes in events of about
    # (collector + compiler) / calls, which bounds what a window's edges cut off
    calls: int = 0
    scheduler: int = 0  # SCHEDULER entries' self costs (not in collector or compiler)


def detect(names: Sequence[str]) -> Runtime | None:
    """The first runtime of the table one of whose markers starts a function name."""
    for runtime in TABLE:
        if any(n.startswith(runtime.markers) for n in names):
            return runtime
    return None


def check_pattern(pattern: str) -> str | None:
    """Why `--collector PATTERN` is not a usable regular expression, or None."""
    try:
        re.compile(pattern)
    except re.error as e:
        return f"--collector {pattern!r} is not a regular expression: {e}"
    return None


def runtime_work(prof: Profile, extra: Sequence[str] = ()) -> RuntimeWork:
    """The collector's and the background compiler's instructions in `prof`."""
    names = [f.name for f in prof.functions]
    runtime = detect(names)
    entries = list(runtime.entries) if runtime else []
    entries += [Entry(p, COLLECTOR, "--collector") for p in extra]
    if not entries:
        return RuntimeWork(None)
    kind = np.full(len(names), -1, dtype=np.int64)  # index into all_kinds, -1: none
    all_kinds = (COLLECTOR, COMPILER, HELPER, SELF, SCHEDULER)
    compiled = [(re.compile(e.pattern), all_kinds.index(e.kind)) for e in entries]
    for i, name in enumerate(names):
        recursive = _RECURSION.search(name)
        base = _RECURSION.sub("", name)
        for rx, k in compiled:
            if rx.fullmatch(base):
                # a recursive activation is inside its first one's inclusive cost; its
                # self cost is its own
                if not recursive or k >= 3:
                    kind[i] = k
                break
    name = runtime.name if runtime else USER
    if not (kind >= 0).any():
        return RuntimeWork(name)
    ir = prof.event_index("Ir")
    self_kind = kind == 3
    sched_kind = kind == 4
    kind = np.where(self_kind | sched_kind, -1, kind)
    specific, calls = _cost_by_kind(prof, kind, ir, keep=(0, 1))
    whole, _ = _cost_by_kind(prof, kind, ir, keep=(0, 1, 2))
    rest = max(sum(whole) - sum(specific), 0)  # the helper threads' unnamed work
    own = sched = 0
    if (self_kind | sched_kind).any():  # self costs not already inside an entry's inclusive cost
        inside = _inside(prof, kind >= 0, ir)
        own = round(float((prof.self_cost[self_kind, ir] * (1 - inside[self_kind])).sum()))
        sched = round(float((prof.self_cost[sched_kind, ir] * (1 - inside[sched_kind])).sum()))
    return RuntimeWork(name, specific[0] + rest + own, specific[1], calls, sched)


def _cost_by_kind(prof: Profile, kind: npt.NDArray[np.int64], ir: int,
                  keep: tuple[int, ...]) -> tuple[list[int], int]:  # fmt: skip
    """Inclusive Ir of the calls into entry points of the kinds in `keep` from outside
    the runtime's work, by kind (COLLECTOR, COMPILER), and how many events those were.
    A call from a function partly inside the runtime's work counts for the part of its
    caller that is outside (`_inside`)."""
    is_entry = np.isin(kind, keep)
    caller, callee, count = prof.call_caller, prof.call_callee, prof.call_count
    other = caller != callee
    outside = np.where(other & is_entry[callee], 1.0 - _inside(prof, is_entry, ir)[caller], 0.0)
    into = outside > 0
    cost = prof.call_cost[:, ir] * outside
    called = np.zeros(len(kind), dtype=bool)
    called[callee[other]] = True
    incl = prof.inclusive_cost()[:, ir]
    out = [0.0, 0.0]
    for k in keep:
        mine = into & (kind[callee] == k)
        # an entry nobody calls here (a thread's start function callgrind saw no caller of)
        roots = np.flatnonzero((kind == k) & ~called)
        out[1 if k == 1 else 0] += float(cost[mine].sum()) + float(incl[roots].sum())
    # an entry called before the window opened and still running (a helper thread's
    # loop): the edge into it holds cost but no call; its events are its loop's rounds
    running = np.unique(np.concatenate([callee[into & (count == 0)],
                                        np.flatnonzero(is_entry & ~called)]))  # fmt: skip
    events = round(float((count * outside).sum()))
    return [round(c) for c in out], events + _rounds(prof, running)


def _rounds(prof: Profile, functions: npt.NDArray[np.int64]) -> int:
    """For each function, the most calls it made to any one other function."""
    caller, callee, count = prof.call_caller, prof.call_callee, prof.call_count
    rounds = 0
    for f in functions:
        made = count[(caller == f) & (callee != f)]
        rounds += int(made.max()) if len(made) else 0
    return rounds


_SETTLED = 1e-9  # the fractions' largest change between rounds once settled
_MAX_ROUNDS = 1000  # mutual recursion converges geometrically; a bound all the same


def _inside(prof: Profile, entry: npt.NDArray[np.bool_], ir: int) -> npt.NDArray[np.float64]:
    """For each function, the fraction of its work done inside the runtime's work: 1 for
    the entry points; for every other function, its callers' fractions weighted by the
    instructions each call brought it (by call counts where those brought none), to a
    fixed point; 0 for a function with no caller.

    Callgrind's edges carry no context, and some functions are called both inside the
    runtime's work and outside it: on Node, V8's `CancelableTask::Run` thunk is called by
    the platform worker thread (319.8M in a cold 1000-request window, all TurboFan
    compile tasks) and by the main thread's foreground task runner (1.15M, a minor GC
    task). Taken as outside because one caller was, the thunk's calls into the compile
    task counted again what the worker thread, counted whole, already held: collector
    324.2M + compiler 319.8M of a 414.4M window, a mutator of -229.6k per request
    (fixtures/v8/). Split by its callers' instructions, what such a function passes on
    counts as outside only for the share that came from outside, an error bounded by
    that share (and none in the sum when all it passes on is the runtime's)."""
    caller, callee = prof.call_caller, prof.call_callee
    other = caller != callee
    caller, callee = caller[other], callee[other]
    n = len(entry)
    cost = prof.call_cost[other, ir].astype(np.float64)
    count = prof.call_count[other].astype(np.float64)
    by_cost = np.bincount(callee, weights=cost, minlength=n)
    weight = np.where(by_cost[callee] > 0, cost, count)
    inflow = np.bincount(callee, weights=weight, minlength=n)
    frac = entry.astype(np.float64)
    for _ in range(_MAX_ROUNDS):
        carried = np.bincount(callee, weights=weight * frac[caller], minlength=n)
        grown = np.where(entry, 1.0, np.divide(carried, inflow, out=np.zeros(n), where=inflow > 0))
        if np.abs(grown - frac).max(initial=0.0) < _SETTLED:
            return grown
        frac = grown
    return frac
