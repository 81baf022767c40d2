"""What an `icount serve` session will measure, and how: the plan.

`ServeRequest` is the session as asked (targets and options as given; None where the
default applies). It is saved in the provenance file, so that `--resume FILE`
continues with the same targets and options (`resume_request`). `prepare` resolves a
request into a `Plan`: the adapters, the backend, the load generator, the CPU split,
the per-target cell options, the fingerprint, the cells already measured, the shard
of the session this process measures (--shard) and the CPUs of each job (--jobs),
checking everything that can be checked before a server starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from icount import backends, environment, results, shards
from icount import cpus as cpus_mod
from icount.backends import Backend, BackendOptions
from icount.errors import ParseError, UsageError
from icount.numfmt import parse_percent
from icount.results import UNIT_PER_REQUEST, Results
from icount.results.details import COLD_START
from icount.results.merge import plan_differences
from icount.results.shard import ShardRecord
from icount.serve.adapter import Adapter, PathSpec
from icount.serve.runs import IDLE_SECONDS, CellOptions
from icount.serve.server import Target
from icount.serve.targets import CmdServer, choose_targets
from icount.serve.warmup import is_jit


@dataclass(frozen=True)
class ServeRequest:
    """`icount serve` as asked. None means: the default (which may depend on the backend
    or the adapter)."""

    targets: tuple[str, ...] = ()
    cmd: CmdServer | None = None
    runs: int = 3
    reps: int = 3
    requests: int | None = None
    warmup: str | None = None  # a count, "auto", or None: the default
    concurrency: int = 1
    load: str | None = None
    max_spread: str = "1%"
    backend: str = "auto"
    thread: int | None = None
    processes: str = "all"  # "root": the started process only
    warmup_instrumented: bool = False  # callgrind: warm up instrumented (slow; the old way)
    keep_profiles: bool = False
    server_cpus: str | None = None
    load_cpus: str | None = None
    max_load: float | None = None
    idle_seconds: float = IDLE_SECONDS  # an idle window after each run's reps; 0: none
    cold_start: bool = False  # a cold-start cell per target besides its paths

    def to_json(self, adapters: tuple[Target, ...]) -> dict[str, Any]:
        """The plan as the provenance records it (targets as absolute adapter paths)."""
        saved = {f: getattr(self, f) for f in RESUMED_OPTIONS}
        files = [str(t.adapter.directory / "adapter.toml") for t in adapters]
        return {
            **saved,
            "targets": [] if self.cmd else files,
            "cmd": self.cmd.to_json() if self.cmd else None,
        }


# Options that --resume takes from the file unless given again.
RESUMED_OPTIONS = (
    "runs",
    "reps",
    "requests",
    "warmup",
    "concurrency",
    "load",
    "max_spread",
    "backend",
    "thread",
    "processes",
    "warmup_instrumented",
    "idle_seconds",
    "cold_start",
)


def saved_plan(resume: Path) -> dict[str, Any]:
    """What the session being resumed was asked to do, from the provenance file beside
    it; empty when there is none."""
    try:
        doc = results.read_json(results.provenance_path(resume), "provenance file")
    except ParseError:  # missing, or not a regular file: never read a FIFO
        return {}
    plan = doc.get("plan") if isinstance(doc, dict) else None
    return plan if isinstance(plan, dict) else {}


def resume_request(request: ServeRequest, resume: Path, explicit: frozenset[str]) -> ServeRequest:
    """`request` completed from the session being resumed: its targets when none are
    given, and every option in RESUMED_OPTIONS not given explicitly."""
    plan = saved_plan(resume)
    changes: dict[str, Any] = {}
    if not request.targets and request.cmd is None:
        cmd = plan.get("cmd")
        if cmd is True:  # icount 0.1 recorded only that --cmd was used
            raise UsageError(
                f"{resume} was measured with --cmd", hint="give the same --cmd to resume it"
            )
        if isinstance(cmd, dict):
            changes["cmd"] = _cmd_from_json(cmd, resume)
        else:
            targets = plan.get("targets") or []
            if not targets:
                raise UsageError(
                    f"no record of what {resume} was measuring (its provenance file is missing)",
                    hint="name the targets and options again",
                )
            changes["targets"] = tuple(str(t) for t in targets)
    types = {f.name: f.type for f in fields(ServeRequest)}
    for option in RESUMED_OPTIONS:
        if option not in explicit and option in plan:
            value = plan[option]
            if value is not None and not _fits(value, str(types[option])):
                raise UsageError(f"{resume}: the recorded {option} {value!r} is not valid")
            changes[option] = value
    return replace(request, **changes)


def _fits(value: Any, annotation: str) -> bool:
    if isinstance(value, bool):
        return "bool" in annotation
    if isinstance(value, int):
        return "int" in annotation or "float" in annotation
    if isinstance(value, float):
        return "float" in annotation
    return isinstance(value, str) and "str" in annotation


def _cmd_from_json(doc: Mapping[str, Any], resume: Path) -> CmdServer:
    try:
        return CmdServer(
            cmd=str(doc["cmd"]),
            name=doc.get("name"),
            paths=tuple(doc.get("paths", ())),
            status=int(doc.get("status", 200)),
            body=doc.get("body"),
            json_text=doc.get("json"),
            headers=tuple(doc.get("headers", ())),
            ready_timeout=float(doc.get("ready_timeout", 60.0)),
            env=tuple(doc.get("env", ())),
            path_bodies=tuple(doc.get("path_bodies", ())),
            path_jsons=tuple(doc.get("path_jsons", ())),
        )
    except (KeyError, TypeError, ValueError):
        raise UsageError(f"{resume}: the recorded --cmd is not readable") from None


@dataclass(frozen=True)
class Plan:
    request: ServeRequest
    targets: tuple[Target, ...]
    skipped: tuple[tuple[str, str], ...]  # (bundled target, why it cannot run here)
    backend: Backend
    backend_why: str
    load_kind: str
    load_why: str
    cpus: cpus_mod.CpuSplit
    max_spread: float
    warmup: int | None  # --warmup N; None: the default, or auto when `auto_warmup`
    auto_warmup: bool
    fingerprint: dict[str, Any]
    out: Path
    start: Results  # the cells already measured (--resume)
    jobs: cpus_mod.JobCpus | None = None  # None: one job, on `cpus`
    shard: ShardRecord | None = None  # None: the whole session
    shard_spec: shards.ShardSpec | None = None

    @property
    def artifacts(self) -> Path:
        return self.out.with_suffix(".artifacts")

    def paths(self, target: Target) -> tuple[PathSpec, ...]:
        """The cells of a target: its paths, and with --cold-start one more, counted from
        exec to the first correct answer to its first path."""
        paths = target.adapter.paths
        if not self.request.cold_start:
            return paths
        first = paths[0]
        return (*paths, replace(first, name=COLD_START, cold_start=True))

    @property
    def job_cpus(self) -> cpus_mod.JobCpus:
        return self.jobs or cpus_mod.JobCpus((self.cpus,), "one job", False)

    def options(self, target: Target) -> CellOptions:
        defaults = self.backend.serve_defaults
        a = target.adapter
        if self.auto_warmup or (self.warmup is None and default_auto(a)):
            warmup = None
        elif self.warmup is not None:
            warmup = self.warmup
        else:  # the default, raised to the adapter's hint (JIT servers it was tuned for)
            warmup = max(defaults.warmup, a.warmup_hint or 0)
        return CellOptions(
            backend=self.backend,
            cpus=self.cpus,
            runs=self.request.runs,
            reps=self.request.reps,
            requests=self.request.requests or a.requests or defaults.requests,
            warmup=warmup,
            concurrency=self.request.concurrency,
            load_kind=self.load_kind,
            max_spread=self.max_spread,
            idle_seconds=self.request.idle_seconds,
        )

    def notes(self) -> list[str]:
        """What the user should know before the measurement starts."""
        fmt = cpus_mod.format_cpu_list
        jit = [
            f"{t.adapter.name} runs a JIT runtime ({Path(t.adapter.start[0]).name}): it warms "
            "up with --warmup auto (give --warmup N to fix a count)"
            for t in self.targets
            if self.warmup is None and not self.auto_warmup and default_auto(t.adapter)
        ]
        lines = [
            *(f"skipping {name}: {why}" for name, why in self.skipped),
            *jit,
            f"backend {self.backend.name}: {self.backend_why}",
            f"load generator {self.load_kind}: {self.load_why}",
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


def parse_warmup(text: str | None) -> tuple[bool, int | None]:
    """(auto?, count) of --warmup; (False, None) for the default."""
    if text is None:
        return False, None
    if text.strip() == "auto":
        return True, None
    try:
        n = int(text)
    except ValueError:
        raise UsageError(f"--warmup takes a request count or 'auto', got {text!r}") from None
    if n < 0:
        raise UsageError(f"--warmup must be >= 0, got {n}")
    return False, n


def _load_kind(load: str | None, backend: Backend) -> tuple[str, str]:
    from icount.serve import loadgen

    if load is None:
        return loadgen.default_load_kind(backend.serve_defaults.instrumented)
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
    """Resolve and check everything before the first server starts."""
    from icount.serve import session

    if not 0 <= request.idle_seconds <= 600:
        raise UsageError("--idle-seconds takes 0 to 600 seconds")
    if request.processes not in ("all", "root"):
        raise UsageError(f"--processes takes all or root, got {request.processes!r}")
    spread = parse_percent(request.max_spread, "--max-spread")
    auto, warmup = parse_warmup(request.warmup)
    split = cpus_mod.split(
        cpus_mod.parse_cpu_list(request.server_cpus, "--server-cpus")
        if request.server_cpus
        else None,
        cpus_mod.parse_cpu_list(request.load_cpus, "--load-cpus") if request.load_cpus else None,
    )
    chosen = choose_targets(request.targets, request.cmd)
    load1 = os.getloadavg()[0]
    if request.max_load is not None and load1 > request.max_load:
        raise UsageError(
            f"load average {load1:.2f} is above --max-load {request.max_load:g}; the machine "
            "is busy",
            hint="wait, or raise --max-load",
        )
    choice = backends.choose(request.backend)
    backend = backends.create(
        choice.backend,
        BackendOptions(
            thread=request.thread,
            processes=request.processes,
            keep_profiles=request.keep_profiles,
            warmup_instrumented=request.warmup_instrumented,
        ),
    )
    load_kind, load_why = _load_kind(request.load, backend)
    out = results.output_path(output if output is not None else resume, "serve")
    if out.exists() and not force and out != resume:
        raise UsageError(f"{out} exists; refusing to overwrite it", hint="pass --force")
    artifacts = out.with_suffix(".artifacts")
    targets = tuple(
        Target(a, artifacts / "build" / environment.safe_name(a.name)) for a in chosen.adapters
    )
    fp = backends.fingerprint(backend, "server")
    job_cpus = cpus_mod.split_jobs(
        split,
        jobs,
        explicit=bool(request.server_cpus or request.load_cpus),
        load_independent=backend.serve_defaults.instrumented,
        backend=backend.name,
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
        max_spread=spread,
        warmup=warmup,
        auto_warmup=auto,
        fingerprint=fp,
        out=out,
        start=Results(fp, ()),
        jobs=job_cpus,
    )
    previous = results.load(resume) if resume is not None else None
    if previous is not None and previous.shard is not None and shard is None:
        done = previous.shard
        shard = shards.ShardSpec(done.index, done.total, f"the file to resume, {resume}")
    if shard is not None:
        record = shards.make_record("serve", session.planned_cells(plan), shard)
        plan = replace(plan, shard=record, shard_spec=shard, start=Results(fp, (), record))
    if previous is not None:
        foreign = sorted(
            c.key_text
            for c in previous.cells
            if c.unit != UNIT_PER_REQUEST and c.path != COLD_START
        )
        if foreign:
            raise UsageError(
                "the file to resume holds cells that are not from icount serve "
                f"({', '.join(foreign)})",
                hint="start a new results file with -o",
            )
        _check_resumed_shard(previous, plan)
        session.check_resume(previous, plan)
        plan = replace(plan, start=Results(fp, previous.cells, plan.shard))
    return plan


def _check_resumed_shard(previous: Results, plan: Plan) -> None:
    before, now = previous.shard, plan.shard
    if before is None and now is None:
        return
    if before is None and now is not None:
        raise UsageError(
            f"the file to resume holds a whole session, not shard {now.label}",
            hint="resume it without --shard (or --shard none in a CI job that sets one)",
        )
    assert before is not None and now is not None
    if (before.index, before.total) != (now.index, now.total):
        raise UsageError(
            f"the file to resume is shard {before.label} of its session, not {now.label}",
            hint=f"resume it with --shard {before.label}",
        )
    if before.digest != now.digest:
        raise UsageError(
            f"the file to resume is a shard of another plan: {plan_differences(before, now)}",
            hint="use the same targets and options, or start a new results file with -o",
        )
