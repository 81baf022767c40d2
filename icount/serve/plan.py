"""What an `icount serve` session will measure, and how: the plan.

`ServeRequest` is the session as asked: targets and typed options, parsed once (by
the CLI, or from the provenance of the file to resume); None where the default
applies. It is saved in the provenance file, so that `--resume FILE` continues with
the same targets and options (`resume_request`). `prepare` resolves a request into a
`Plan`: the adapters, the backend, the load generator, the CPU split, the per-target
cell options, the fingerprint, the cells already measured, the shard of the session
this process measures (--shard) and the CPUs of each job (--jobs), checking
everything that can be checked before a server starts, the file to resume included.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from icount import backends, environment, shards
from icount import cpus as cpus_mod
from icount.backends import ServerBackend
from icount.errors import UsageError
from icount.results import UNIT_PER_REQUEST, Cell, Results
from icount.results.details import COLD_START, ServeParams, arrival_of
from icount.results.shard import ShardRecord
from icount.serve import arrival as arrival_mod
from icount.serve.adapter import Adapter, PathSpec
from icount.serve.cell_options import CellOptions
from icount.serve.server import Target
from icount.serve.targets import CmdServer, PathChoice, check_paths, choose_targets, selected_paths
from icount.serve.warmup import is_jit
from icount.session import options as o
from icount.session import planning
from icount.session import resume as resume_mod
from icount.session.options import Arrival, Processes, Warmup
from icount.text import printable


@dataclass(frozen=True)
class ServeRequest:
    """`icount serve` as asked. None means: the default (which may depend on the backend
    or the adapter)."""

    targets: tuple[str, ...] = ()
    cmd: CmdServer | None = None
    runs: int = o.RUNS
    reps: int = o.REPS
    requests: int | None = None
    warmup: Warmup | None = None
    concurrency: int = o.CONCURRENCY
    load: str | None = None
    arrival: Arrival | None = None  # None: idle with the built-in client, else closed
    connection: str = "auto"  # o.CONNECTIONS (serve/http_client.py)
    max_spread: float = o.MAX_SPREAD
    backend: str = "auto"
    thread: int | None = None
    processes: Processes = Processes.ALL
    warmup_instrumented: bool = False  # callgrind: warm up instrumented (slow; the old way)
    keep_profiles: bool = False
    collectors: tuple[str, ...] = ()  # callgrind --collector patterns (icount/runtimes.py)
    profile_top: int = o.PROFILE_TOP  # functions each cell's profile keeps (callgrind)
    server_cpus: tuple[int, ...] | None = None
    load_cpus: tuple[int, ...] | None = None
    max_load: float | None = None
    idle_seconds: float = o.IDLE_SECONDS  # an idle window after each run's reps; 0: none
    cold_start: bool = False  # a cold-start cell per target besides its paths
    memory: bool = False  # --memory: each cell's peak RSS from native runs (serve/native.py)
    # a collected runtime's windows added until its total's interval fits: a run's caps
    max_windows: int = o.MAX_WINDOWS
    max_extra_seconds: float = o.MAX_EXTRA_SECONDS
    # --path NAME / TARGET:NAME with adapter targets: only those paths (); every path
    only_paths: tuple[PathChoice, ...] = ()

    def backend_settings(self) -> dict[str, object]:
        """The settings the backend is built with (backends.settings), given or not."""
        return {
            "thread": self.thread,
            "processes": self.processes,
            "keep_profiles": self.keep_profiles,
            "warmup_instrumented": self.warmup_instrumented,
            "collector": self.collectors,
            "profile_top": self.profile_top,
        }

    def to_json(self, adapters: tuple[Target, ...]) -> dict[str, Any]:
        """The plan as the provenance records it (targets as absolute adapter paths),
        every option as --resume reads it back (`resume_request`)."""
        saved = {f: getattr(self, f) for f in RESUMED_OPTIONS}
        saved["warmup"] = None if self.warmup is None else self.warmup.to_json()
        saved["max_spread"] = o.percent_text(self.max_spread)
        saved["processes"] = str(self.processes)
        saved["arrival"] = None if self.arrival is None else str(self.arrival)
        saved["only_paths"] = [str(c) for c in self.only_paths]
        if not self.only_paths:  # only when given: a full session's plan keeps its old keys
            del saved["only_paths"]
        files = [str(t.adapter.directory / "adapter.toml") for t in adapters]
        return {
            **saved,
            "targets": [] if self.cmd else files,
            "cmd": self.cmd.to_json() if self.cmd else None,
        }


def _optional(read: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else read(value)


def _patterns(value: Any) -> tuple[str, ...]:
    """--collector patterns as recorded: a list of regular expressions."""
    for pattern in _list(value):
        if not isinstance(pattern, str):
            raise ValueError("not a pattern")
        try:
            re.compile(pattern)
        except re.error as e:
            raise ValueError(str(e)) from None
    return tuple(value)


# Options that --resume takes from the file unless given again, and how each is read.
RESUMED_OPTIONS: dict[str, Callable[[Any], Any]] = {
    "runs": lambda v: o.int_from_json(v, 1, 100),
    "reps": lambda v: o.int_from_json(v, 1, 100),
    "requests": _optional(lambda v: o.int_from_json(v, 1, 10**9)),
    "warmup": _optional(Warmup.from_json),
    "concurrency": lambda v: o.int_from_json(v, 1, 10000),
    "load": _optional(o.str_from_json),
    "arrival": _optional(lambda v: Arrival(o.str_from_json(v))),
    "connection": o.connection_from_json,
    "max_spread": o.spread_from_json,
    "backend": o.str_from_json,
    "thread": _optional(lambda v: o.int_from_json(v, 1, 10**6)),
    "processes": lambda v: Processes(o.str_from_json(v)),
    "warmup_instrumented": o.bool_from_json,
    "idle_seconds": lambda v: o.float_from_json(v, 0, o.MAX_IDLE_SECONDS),
    "cold_start": o.bool_from_json,
    "memory": o.bool_from_json,
    "profile_top": lambda v: o.int_from_json(v, 0, 10**6),
    "collectors": _patterns,
    "max_windows": lambda v: o.int_from_json(v, 1, o.MAX_WINDOWS_LIMIT),
    "max_extra_seconds": lambda v: o.float_from_json(v, 0, o.MAX_EXTRA_SECONDS_LIMIT),
    "only_paths": lambda v: tuple(PathChoice.from_json(c) for c in _list(v)),
}
# the command-line parameter of an option whose field is named otherwise
_PARAMETER = {"collectors": "collector", "only_paths": "path"}


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError("not a list")
    return value


def resume_request(request: ServeRequest, resume: Path, explicit: frozenset[str]) -> ServeRequest:
    """`request` completed from the session being resumed: its targets when none are
    given, and every option in RESUMED_OPTIONS not given explicitly. A --cmd server is
    never the file's: a results file from elsewhere (a cache, an artifact) must not choose
    the command that runs, so it is given again (the refusal names what the file records);
    adapters are files on this machine, taken by their recorded paths."""
    plan = resume_mod.saved_plan(resume)
    changes: dict[str, Any] = {}
    if not request.targets and request.cmd is None:
        cmd = plan.get("cmd")
        if cmd is True or isinstance(cmd, dict):  # icount 0.1 recorded only that it was used
            shown = f": {printable(str(cmd.get('cmd')))}" if isinstance(cmd, dict) else ""
            raise UsageError(
                f"--resume {resume} runs only a --cmd given again, never the one the file records",
                hint=f"give the same --cmd to resume it (the file records --cmd{shown})",
            )
        targets = plan.get("targets") or []
        if not targets:
            raise UsageError(
                f"no record of what {resume} was measuring (its provenance file is missing)",
                hint="name the targets and options again",
            )
        changes["targets"] = tuple(str(t) for t in targets)
    changes |= planning.resumed_options(RESUMED_OPTIONS, plan, explicit, resume, _PARAMETER)
    return replace(request, **changes)


@dataclass(frozen=True)
class Plan:
    request: ServeRequest
    targets: tuple[Target, ...]
    skipped: tuple[tuple[str, str], ...]  # (bundled target, why it cannot run here)
    backend: ServerBackend
    backend_why: str
    load_kind: str
    load_why: str
    cpus: cpus_mod.CpuSplit
    fingerprint: dict[str, Any]
    out: Path
    start: Results  # the cells already measured (--resume)
    jobs: cpus_mod.JobCpus | None = None  # None: one job, on `cpus`
    shard: ShardRecord | None = None  # None: the whole session
    shard_spec: shards.ShardSpec | None = None
    arrival: Arrival = Arrival.IDLE
    arrival_why: str = ""

    @property
    def artifacts(self) -> Path:
        return self.out.with_suffix(".artifacts")

    def paths(self, target: Target) -> tuple[PathSpec, ...]:
        """The cells of a target: its paths (those --path chose), and with --cold-start one
        more, counted from exec to the first correct answer to its first path (the
        adapter's first, chosen or not: the cell a full session measures)."""
        paths = selected_paths(target.adapter, self.request.only_paths)
        if not self.request.cold_start:
            return paths
        first = target.adapter.paths[0]
        return (*paths, replace(first, name=COLD_START, cold_start=True))

    def cells(self) -> list[tuple[Target, PathSpec]]:
        """Every (target, path) cell of the session, in order."""
        return [(t, p) for t in self.targets for p in self.paths(t)]

    @property
    def job_cpus(self) -> cpus_mod.JobCpus:
        return self.jobs or cpus_mod.JobCpus((self.cpus,), "one job", False)

    @property
    def digests(self) -> dict[str, str]:
        """Target name -> `target_digest`, for the provenance and --resume."""
        return {t.adapter.name: target_digest(t.adapter) for t in self.targets}

    def warmup(self, adapter: Adapter) -> Warmup:
        """--warmup, or the default: auto for a JIT runtime, else the backend's count
        raised to the adapter's hint (JIT servers it was tuned for)."""
        if self.request.warmup is not None:
            return self.request.warmup
        if default_auto(adapter):
            return o.AUTO
        return Warmup(max(self.backend.serve_defaults.warmup, adapter.warmup_hint or 0))

    def options(self, target: Target) -> CellOptions:
        defaults = self.backend.serve_defaults
        a = target.adapter
        return CellOptions(
            backend=self.backend,
            cpus=self.cpus,
            runs=self.request.runs,
            reps=self.request.reps,
            requests=self.request.requests or a.requests or defaults.requests,
            warmup=self.warmup(a),
            concurrency=self.request.concurrency,
            load_kind=self.load_kind,
            arrival=self.arrival,
            connection=self.request.connection,
            max_spread=self.request.max_spread,
            idle_seconds=self.request.idle_seconds,
            max_windows=self.request.max_windows,
            max_extra_seconds=self.request.max_extra_seconds,
        )

    def notes(self) -> list[str]:
        """What the user should know before the measurement starts."""
        fmt = cpus_mod.format_cpu_list
        jit = [
            f"{t.adapter.name} runs a JIT runtime ({Path(t.adapter.start[0]).name}): it warms "
            "up with --warmup auto (give --warmup N to fix a count)"
            for t in self.targets
            if self.request.warmup is None and default_auto(t.adapter)
        ]
        lines = [
            *(f"skipping {name}: {why}" for name, why in self.skipped),
            *jit,
            f"backend {self.backend.name}: {self.backend_why}",
            f"load generator {self.load_kind}: {self.load_why}",
            f"arrival {self.arrival}: {self.arrival_why}",
            f"server on CPU {fmt(self.cpus.server)}, load on CPU {fmt(self.cpus.load)} "
            f"({self.cpus.why})",
        ]
        jobs = self.job_cpus
        if len(jobs.splits) > 1:
            each = "; ".join(
                f"job {j + 1} server {fmt(c.server)} load {fmt(c.load)}"
                for j, c in enumerate(jobs.splits)
            )
            lines.append(f"{len(jobs.splits)} cells at once ({jobs.why}): {each}")
        if self.shard is not None and self.shard_spec is not None:
            lines.append(shards.describe(self.shard, self.shard_spec))
        return lines


def default_auto(adapter: Adapter) -> bool:
    """A server that warms up with `auto` when --warmup is not given: a known JIT runtime
    (node, bun, java...) whose adapter names no warm-up of its own."""
    return adapter.warmup_hint is None and is_jit(adapter.start[0])


def cell_params(path: PathSpec, opts: CellOptions) -> ServeParams:
    """What the cell is measured with: everything that moves a per-request figure but
    the request bytes, which the session adds once a run has sent them."""
    params: ServeParams = {
        "requests": opts.requests,
        "warmup": opts.warmup.param(),
        "concurrency": opts.concurrency,
        "load": opts.load_kind,
        "arrival": str(opts.arrival),
        "reps": opts.reps,
        "request_target": path.request_target,
        "http_method": path.http_method,
        **({"kind": "cold-start"} if path.cold_start else {}),
        "server_cpus": list(opts.cpus.server),
        "load_cpus": list(opts.cpus.load),
    }
    params.update(opts.backend.cell_params())  # type: ignore[typeddict-item]
    return params


def target_digest(adapter: Adapter) -> str:
    """sha256 of how a target is built, started and checked: not of where its adapter
    file lies, which differs between machines."""
    a = adapter
    what: tuple[object, ...] = (a.build, a.start, sorted(a.env.items()), a.ready_target,
                                a.ready_timeout_s, a.binary, a.paths, a.requires,
                                a.warmup_hint)  # fmt: skip
    if a.cwd is not None:  # only when given: digests of targets without one stay
        what += (a.cwd,)
    return hashlib.sha256(repr(what).encode()).hexdigest()


def planned_cells(plan: Plan) -> list[shards.PlannedCell]:
    """Every cell of the session, in order, as shards are assigned: what it is measured
    with (its params but the CPU numbers, which differ between machines) and its
    expected cost, the requests its runs send (a JIT server's larger warm-up included;
    `--warmup auto` counted at its least, two windows)."""
    planned = []
    for t in plan.targets:
        opts = plan.options(t)
        digest = target_digest(t.adapter)
        warmup = 2 * opts.requests if opts.warmup.count is None else opts.warmup.count
        cost = opts.runs * (warmup + opts.reps * opts.requests)
        for p in plan.paths(t):
            params: dict[str, Any] = dict(cell_params(p, opts))
            del params["server_cpus"], params["load_cpus"]
            if params["arrival"] == arrival_mod.LEGACY:  # shards planned before it was recorded
                del params["arrival"]
            identity = {**params, "runs": opts.runs, "max_spread": opts.max_spread,
                        resume_mod.TARGET_DIGESTS: digest}  # fmt: skip
            planned.append(
                shards.PlannedCell(t.adapter.name, p.name, plan.backend.name, identity, cost)
            )
    return planned


# The params two cells must share to sit in one results file (resume).
COMPARABLE_PARAMS = (
    "requests",
    "warmup",
    "concurrency",
    "load",
    "arrival",
    "reps",
    "request_target",
    "http_method",
    "thread",
    "processes",
    "collectors",  # absent where none were given: cells measured before compare alike
)


def _comparable(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: params.get(k) for k in COMPARABLE_PARAMS} | {"arrival": arrival_of(params)}


def _ours(cell: Cell) -> bool:
    return cell.unit == UNIT_PER_REQUEST or cell.path == COLD_START


def _load_kind(load: str | None, backend: ServerBackend) -> tuple[str, str]:
    from icount.serve import loadgen

    if load is None:
        return loadgen.default_load_kind(backend.instrumented)
    if load not in loadgen.KINDS:
        raise UsageError(
            f"unknown load generator {load!r}", hint=f"use --load {'|'.join(loadgen.KINDS)}"
        )
    return load, "asked for with --load"


def prepare(
    request: ServeRequest,
    *,
    output: Path | None,
    resume: Path | None,
    force: bool,
    shard: shards.ShardSpec | None = None,
    jobs: int = 1,
) -> Plan:
    """Resolve and check everything before the first server starts (`request`'s values
    are checked where it is made: by the CLI, or read back from a provenance)."""
    split = cpus_mod.split(request.server_cpus, request.load_cpus)
    chosen = choose_targets(request.targets, request.cmd)
    check_paths(chosen.adapters, request.only_paths)
    load1 = os.getloadavg()[0]
    if request.max_load is not None and load1 > request.max_load:
        raise UsageError(
            f"load average {load1:.2f} is above --max-load {request.max_load:g}; the machine "
            "is busy",
            hint="wait, or raise --max-load",
        )
    choice = backends.choose(request.backend)
    settings = backends.settings(choice.backend, request.backend_settings())
    backend = backends.server_backend(choice.backend, settings)
    load_kind, load_why = _load_kind(request.load, backend)
    arrival, arrival_why = arrival_mod.resolve(request.arrival, load_kind)
    if request.connection != "auto" and load_kind != "builtin":
        raise UsageError(
            f"--connection {request.connection} needs the built-in client: {load_kind} "
            "opens its connections itself",
            hint="use --load builtin, or leave --connection out",
        )
    fp = backends.fingerprint(backend, "server")
    job_cpus = cpus_mod.split_jobs(
        split,
        jobs,
        explicit=bool(request.server_cpus or request.load_cpus),
        load_independent=backend.instrumented,
        backend=backend.name,
    )
    with planning.reserved_output(output, resume, "serve", force=force) as out:
        artifacts = out.with_suffix(".artifacts")
        targets = tuple(
            Target(a, artifacts / "build" / environment.safe_name(a.name)) for a in chosen.adapters
        )
        plan = Plan(
            request=request,
            targets=targets,
            skipped=chosen.skipped,
            backend=backend,
            backend_why=choice.why,
            load_kind=load_kind,
            load_why=load_why,
            cpus=split,
            fingerprint=fp,
            out=out,
            start=Results(fp, ()),
            jobs=job_cpus,
            arrival=arrival,
            arrival_why=arrival_why,
        )
        return _resumed(plan, resume, shard)


def _resumed(plan: Plan, resume: Path | None, shard: shards.ShardSpec | None) -> Plan:
    """The plan of this shard (--shard, or the file's), starting from the file to resume."""
    previous, shard = planning.to_resume(resume, "serve", _ours, shard)
    record = planning.shard_record("serve", lambda: planned_cells(plan), shard)
    if record is not None:
        plan = replace(plan, shard=record, shard_spec=shard)
    if previous is not None:
        plan = _arrival_of(previous, plan)
    start = planning.start(
        plan.fingerprint,
        record,
        previous,
        resume,
        lambda: _planned_params(plan),
        lambda c: _comparable(c.params),
        plan.digests,
    )
    return replace(plan, start=start)


def _arrival_of(previous: Results, plan: Plan) -> Plan:
    """The arrival of the cells of the file to resume, where neither the command line nor
    its provenance says one (a session from before it was recorded: closed)."""
    if plan.request.arrival is not None:
        return plan
    kinds = {arrival_of(c.params) for c in previous.cells if c.path != COLD_START}
    if len(kinds) != 1 or kinds == {plan.arrival}:
        return plan  # none measured, or a mix: check_resume says which differ
    kind = Arrival(kinds.pop()) if kinds <= set(Arrival) else None
    if kind is None or (kind is Arrival.IDLE and plan.load_kind != "builtin"):
        return plan
    return replace(plan, arrival=kind, arrival_why="as the cells of the file to resume were")


def _planned_params(plan: Plan) -> dict[tuple[str, str, str], dict[str, Any]]:
    """What each cell of the plan is measured with, as a resumed file's cells must share."""
    return {
        (t.adapter.name, p.name, plan.backend.name): _comparable(cell_params(p, plan.options(t)))
        for t, p in plan.cells()
    }
