"""`icount serve`: instructions per request of servers on pinned CPUs."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from icount.errors import ToolMissingError, UsageError

HELP = """Count the server's user-space instructions per request (fresh processes, median).

\b
Examples:
  icount serve                       # every bundled target available here
  icount serve c-epoll nginx --runs 3 --format md
  icount serve adapters/node-http/adapter.toml --warmup auto
  icount serve --cmd './myserver --port {port}' --path hello=/hello --expect-body 'hi'
  icount serve c-epoll --backend perf --load h2load --concurrency 64
  icount serve --resume icount-results/serve-001.json

\b
Per cell (target x path x backend), each of --runs fresh server processes is pinned
to --server-cpus (the load generator to --load-cpus), checked to give the expected
answer, warmed up with --warmup requests, then counted over --reps windows of
exactly --requests requests on --concurrency keep-alive connections. Per-request =
the server's instructions in the window / completed requests; run value = median
of reps; cell value = median of runs. Any failed request, a wrong answer, a server
that exits, or a spread over runs >= --max-spread makes the cell '-' with the reason.
callgrind windows are taken by callgrind dumps through vgdb (differential method
over two lifetimes where ptrace is not allowed); perf windows by enable/disable on
perf stat's control fifo. One server process serves one path (no cross-path state).
Work driven by wall time (nginx's clock refresh) grows with time, not requests.
--warmup auto warms up with windows of --requests until two in a row agree within a
quarter of --max-spread (at most 30 windows) and records how many requests it took.
"""


def register(app: typer.Typer) -> None:
    app.command("serve", help=HELP)(serve_command)


def serve_command(
    ctx: typer.Context,
    targets: list[str] = typer.Argument(None, help="adapter.toml paths or bundled names."),
    cmd: str = typer.Option(None, "--cmd", help="A server command line with {port}."),
    name: str = typer.Option(None, "--name", help="Row name for --cmd [program name]."),
    path: list[str] = typer.Option([], "--path", help="--cmd: NAME=TARGET (repeatable) [root=/]."),
    expect_status: int = typer.Option(200, "--expect-status", help="--cmd: expected status."),
    expect_body: str = typer.Option(None, "--expect-body", help="--cmd: exact expected body."),
    expect_json: str = typer.Option(None, "--expect-json", help="--cmd: expected JSON body."),
    expect_header: list[str] = typer.Option(
        [], "--expect-header", help="--cmd: 'Name: value' required (repeatable)."
    ),
    ready_timeout: float = typer.Option(
        60.0, "--ready-timeout", help="--cmd: seconds to wait for the first answer."
    ),
    env: list[str] = typer.Option([], "--env", help="--cmd: KEY=VALUE for the server."),
    runs: int = typer.Option(3, "--runs", min=1, max=100, help="Fresh server processes per cell."),
    reps: int = typer.Option(3, "--reps", min=1, max=100, help="Windows per server process."),
    warmup: str = typer.Option(
        None,
        "--warmup",
        help="Requests before counting, or auto [callgrind 100, perf 1000, or the "
        "adapter's warmup_hint when larger].",
    ),
    requests: int = typer.Option(
        None, "--requests", min=1, help="Requests per window [callgrind 1000, perf 40000]."
    ),
    concurrency: int = typer.Option(
        1, "--concurrency", "-c", min=1, max=10000, help="Keep-alive connections."
    ),
    server_cpus: str = typer.Option(None, "--server-cpus", help="CPUs for the server [half]."),
    load_cpus: str = typer.Option(None, "--load-cpus", help="CPUs for the load [other half]."),
    backend: str = typer.Option("auto", "--backend", help="auto, callgrind or perf."),
    load: str = typer.Option(None, "--load", help="builtin, h2load, ab, wrk or oha [auto]."),
    max_spread: str = typer.Option("1%", "--max-spread", help="Spread limit for a valid cell."),
    max_load: float = typer.Option(None, "--max-load", help="Refuse to start above this load1."),
    thread: int = typer.Option(
        None, "--thread", min=1, help="callgrind: count only this valgrind thread number."
    ),
    keep_profiles: bool = typer.Option(False, "--keep-profiles", help="Keep callgrind files."),
    resume: Path = typer.Option(None, "--resume", help="Continue this results file."),
    fmt: str = typer.Option("table", "--format", "-f", help="table, md, csv or json."),
    output: Path = typer.Option(
        None, "--output", "-o", help="Results file [icount-results/serve-NNN.json]."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite --output if it exists."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress output."),
    width: int = typer.Option(120, "--width", help="Table width in characters."),
) -> None:
    import os

    from icount import environment, measure_command, results
    from icount.backends import choose
    from icount.cli.options import (
        argv_tail,
        check_format,
        output_path,
        parse_percent,
        print_results,
    )
    from icount.cli.progress import progress
    from icount.serve import cpus as cpus_mod
    from icount.serve import method, session

    check_format(fmt)
    if resume is not None:
        resume = resume.absolute()
        plan = _saved_plan(resume)
        if not targets and cmd is None:
            if plan.get("cmd"):
                raise UsageError(
                    f"{resume} was measured with --cmd", hint="give the same --cmd to resume it"
                )
            targets = list(plan.get("targets", []))
            if not targets:
                raise UsageError(
                    f"no record of what {resume} was measuring (its provenance file is missing)",
                    hint="name the targets and options again",
                )

        def saved(option: str, given: Any) -> Any:
            # Options left at their defaults take the value the file was measured with.
            source = ctx.get_parameter_source(option)
            unset = source is None or source.name == "DEFAULT"
            return plan[option] if unset and option in plan else given

        runs, reps, requests = saved("runs", runs), saved("reps", reps), saved("requests", requests)
        warmup, concurrency = saved("warmup", warmup), saved("concurrency", concurrency)
        load, max_spread = saved("load", load), saved("max_spread", max_spread)
        backend = saved("backend", backend)
    spread = parse_percent(max_spread, "--max-spread")
    auto_warmup, warmup_n = _parse_warmup(warmup)
    split = cpus_mod.split(
        cpus_mod.parse_cpu_list(server_cpus, "--server-cpus") if server_cpus else None,
        cpus_mod.parse_cpu_list(load_cpus, "--load-cpus") if load_cpus else None,
    )
    if cmd is not None and targets:
        raise UsageError("give either TARGETS or --cmd, not both")
    flags = _CmdFlags(cmd, name, path, expect_status, expect_body, expect_json, expect_header,
                      ready_timeout, env)  # fmt: skip
    adapters, skipped = _targets(targets or [], flags)
    if not quiet:
        for label, why in skipped:
            typer.echo(f"icount: skipping {label}: {why}", err=True)
    if not adapters:
        raise ToolMissingError("no target can run here", hint="see the skipped reasons above")
    load1 = os.getloadavg()[0]
    if max_load is not None and load1 > max_load:
        raise UsageError(
            f"load average {load1:.2f} is above --max-load {max_load:g}; the machine is busy",
            hint="wait, or raise --max-load",
        )

    choice = choose(backend)
    if thread is not None and choice.backend != "callgrind":
        raise UsageError("--thread needs the callgrind backend", hint="pass --backend callgrind")
    load_kind, load_why = _load_kind(load, choice.backend)
    if not quiet:
        typer.echo(f"icount: backend {choice.backend}: {choice.why}", err=True)
        typer.echo(f"icount: load generator {load_kind}: {load_why}", err=True)
        typer.echo(
            f"icount: server on CPU {cpus_mod.format_cpu_list(split.server)}, load on CPU "
            f"{cpus_mod.format_cpu_list(split.load)} ({split.why})",
            err=True,
        )

    out = output_path(output if output is not None else resume, "serve")
    if out.exists() and not force and out != resume:
        raise UsageError(f"{out} exists; refusing to overwrite it", hint="pass --force")
    artifacts = out.with_suffix(".artifacts")
    targets_ = [
        method.Target(a, artifacts / "build" / environment.safe_name(a.name, "target"))
        for a in adapters
    ]
    n_requests = requests or method.DEFAULT_REQUESTS[choice.backend]

    def options(t: method.Target) -> method.MethodOptions:
        hint = t.adapter.warmup_hint
        return method.MethodOptions(
            backend=choice.backend,
            cpus=split,
            runs=runs,
            reps=reps,
            requests=n_requests,
            warmup=method.warmup_for(warmup_n, auto_warmup, choice.backend, hint),
            concurrency=concurrency,
            load_kind=load_kind,
            max_spread=spread,
            thread=thread,
            keep_profiles=keep_profiles,
        )

    fingerprint = environment.fingerprint(
        choice.backend,
        measure_command.tool_version(choice.backend),
        _backend_argv(choice.backend, thread),
    )
    start = results.Results(fingerprint, ())
    if resume is not None:
        previous = results.load(resume)
        planned = {
            (t.adapter.name, p.name, choice.backend): method.cell_params(p, options(t))
            for t in targets_
            for p in t.adapter.paths
        }
        session.check_resume(previous, fingerprint, planned)
        start = results.Results(fingerprint, previous.cells)
    recorder = environment.ProvenanceRecorder(["icount", "serve", *argv_tail()])
    state = session.SessionState()

    plan = {
        "targets": [str((t.adapter.directory / "adapter.toml").resolve()) for t in targets_],
        "cmd": cmd is not None,
        "runs": runs,
        "reps": reps,
        "requests": requests,
        "warmup": warmup,
        "concurrency": concurrency,
        "load": load,
        "max_spread": max_spread,
        "backend": backend,
    }

    def save(res: results.Results) -> None:
        prov = {
            "plan": plan,
            "backend_choice": choice.why,
            "load_choice": load_why,
            "skipped_targets": {label: why for label, why in skipped},
            **cpus_mod.provenance(split),
            **state.to_json(),
        }
        results.save(out, res, recorder.finish(prov), overwrite=True)

    with cpus_mod.pinned_self(split.load), progress(quiet) as cb:
        res = session.run_session(
            targets_, options, artifacts, start, cb, save, state, extra=_binary_extra
        )
    save(res)
    if not quiet:
        typer.echo(f"icount: results in {out} (server outputs in {artifacts}/)", err=True)
    print_results(res, fmt, width)


def _saved_plan(resume: Path) -> dict[str, Any]:
    """What the session being resumed was asked to do (targets and options), from the
    provenance file beside it; empty when there is none."""
    import json

    from icount.results import provenance_path

    try:
        doc = json.loads(provenance_path(resume).read_text())
    except (OSError, ValueError):
        return {}
    plan = doc.get("plan") if isinstance(doc, dict) else None
    return plan if isinstance(plan, dict) else {}


def _parse_warmup(text: str | None) -> tuple[bool, int | None]:
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


def _load_kind(load: str | None, backend: str) -> tuple[str, str]:
    from icount.serve import loadgen

    kinds = loadgen.KINDS
    if load is None:
        kind, why = loadgen.default_load_kind(backend)
        return kind, why
    if load not in kinds:
        raise UsageError(f"unknown load generator {load!r}", hint=f"use --load {'|'.join(kinds)}")
    return load, "asked for with --load"


def _backend_argv(backend: str, thread: int | None) -> list[str]:
    from icount.serve import window_callgrind, window_perf

    if backend == "callgrind":
        return window_callgrind.fingerprint_args(thread is not None)
    return window_perf.fingerprint_args()


@dataclass(frozen=True)
class _CmdFlags:
    """The flags that describe a --cmd server."""

    cmd: str | None
    name: str | None
    paths: list[str]
    status: int
    body: str | None
    json_text: str | None
    headers: list[str]
    ready_timeout: float
    env: list[str]


def _targets(names: list[str], flags: _CmdFlags) -> tuple[list[Any], list[tuple[str, str]]]:
    """(adapters to measure, [(label, why skipped)])."""
    from icount.serve import adapter as adapter_mod

    if flags.cmd is not None:
        return [_cmd_adapter(flags.cmd, flags)], []
    if flags.name or flags.paths or flags.body or flags.json_text or flags.headers or flags.env:
        raise UsageError("--name, --path, --expect-* and --env go with --cmd")
    bundled = {}
    for p in adapter_mod.bundled_adapter_paths():
        a = adapter_mod.load_adapter(p)
        bundled[a.name] = a
    chosen: list[Any] = []
    skipped: list[tuple[str, str]] = []
    if not names:
        for a in bundled.values():
            why = adapter_mod.unavailable_reason(a)
            if why is None:
                chosen.append(a)
            else:
                skipped.append((a.name, why))
        return chosen, skipped
    for n in names:
        p = Path(n)
        if p.is_dir():
            p = p / adapter_mod.ADAPTER_FILE
        if n in bundled and not p.exists():
            a = bundled[n]
        elif p.exists():
            a = adapter_mod.load_adapter(p)
        else:
            known = ", ".join(sorted(bundled)) or "none"
            raise UsageError(f"no adapter {n!r}: not a file and not a bundled target ({known})")
        why = adapter_mod.unavailable_reason(a)
        if why is not None:
            raise ToolMissingError(f"{a.name} cannot run here: {why}")
        if any(c.name == a.name for c in chosen):
            raise UsageError(f"target {a.name!r} given twice")
        chosen.append(a)
    return chosen, skipped


def _cmd_adapter(cmd: str, flags: _CmdFlags) -> Any:
    """The adapter `--cmd` and its flags describe, checked like an adapter.toml."""
    import json

    from icount import environment, procs
    from icount.errors import ParseError
    from icount.serve.adapter import adapter_from_table

    try:
        argv = shlex.split(cmd)
    except ValueError as e:
        raise UsageError(f"--cmd: {e}") from None
    if not argv or not any("{port}" in a for a in argv):
        raise UsageError("--cmd needs a command line with a {port} placeholder")
    expect: dict[str, Any] = {"status": flags.status}
    if flags.body is not None and flags.json_text is not None:
        raise UsageError("give either --expect-body or --expect-json, not both")
    if flags.body is not None:
        expect["body"] = flags.body
    if flags.json_text is not None:
        try:
            expect["json"] = json.loads(flags.json_text)
        except ValueError as e:
            raise UsageError(f"--expect-json is not JSON: {e}") from None
    headers: dict[str, str] = {}
    for h in flags.headers:
        k, sep, v = h.partition(":")
        if not sep or not k.strip():
            raise UsageError(f"--expect-header takes 'Name: value', got {h!r}")
        headers[k.strip()] = v.strip()
    expect["headers"] = headers
    paths = []
    for item in flags.paths or ["root=/"]:
        label, sep, target = item.partition("=")
        if not sep or not label or not target.startswith("/"):
            raise UsageError(f"--path takes NAME=/TARGET, got {item!r}")
        paths.append({"name": label, "target": target, "expect": expect})
    # Servers run in a fresh directory: find the program and file arguments from here,
    # and fail now (exit 4) for a program that is not there, not once per cell.
    argv = [procs.resolve_command(argv[0]), *environment.absolute_file_args(argv[1:], Path.cwd())]
    table = {
        "name": flags.name or Path(argv[0]).name,
        "start": argv,
        "binary": argv[0],
        "env": environment.parse_env_assignments(flags.env),
        "ready": {"target": paths[0]["target"], "timeout_s": flags.ready_timeout},
        "paths": paths,
    }
    try:
        return adapter_from_table(table, Path.cwd(), "--cmd")
    except ParseError as e:  # the same rules as an adapter.toml, reported as flags
        raise UsageError(str(e)) from None


def _binary_extra(t: Any) -> dict[str, Any]:
    """The target binary's sizes for the table: `icount size`'s figures for an ELF or
    Mach-O file (file bytes and executable bytes), the file's size for anything else
    (a script)."""
    from icount.errors import IcountError
    from icount.serve.adapter import binary_path
    from icount.size import summarize

    p = binary_path(t.adapter, t.build_dir)
    if p is None:
        return {}
    extra: dict[str, Any] = {"binary": p.name, "binary_bytes": p.stat().st_size}
    try:
        sizes = summarize(p)
    except IcountError:
        return extra  # not an executable image: the file size is all there is
    extra["binary_bytes"] = sizes["file_bytes"]
    extra["binary_text_bytes"] = sizes["text_bytes"]
    return extra
