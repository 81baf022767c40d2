"""`icount serve`: instructions per request of servers on pinned CPUs."""

from __future__ import annotations

from pathlib import Path

import typer

from icount.cli.measure_options import explicit_options, measure_option, serve_request
from icount.cli.options import (
    BACKEND_HELP,
    FORCE_HELP,
    MIN_WIDTH,
    SORT_HELP,
    WIDTH_HELP,
    format_help,
)
from icount.errors import UsageError
from icount.session import options as o

HELP = """Count the server's user-space instructions per request (fresh processes, median).

\b
Examples:
  icount serve                       # every bundled target available here
  icount serve c-epoll nginx --runs 3 --format md
  icount serve adapters/node-http/adapter.toml --warmup auto
  icount serve node-http --path json           # only its /json cell, keyed as in a full run
  icount serve --cmd './myserver --port {port}' --path hello=/hello --expect-body 'hi'
  icount serve c-epoll --backend perf --load h2load --concurrency 64
  icount serve --resume icount-results/serve-001.json
  icount serve --shard 2/3 -o shard-2.json     # one CI job of three; merge with table
  icount serve c-epoll nginx python-asyncio --jobs 2

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
--warmup auto probes with counted windows of --requests between cheap warm-ups that
double, until two probes in a row agree within half of --max-spread, or three that
stopped falling agree within it (capped at 200,000 requests and 900 s), and records the
curve; reps that fall window after window mark a run as still warming up. An idle
window after the reps (--idle-seconds) counts the work the clock drives; a spread
between windows names the functions behind it. A collected runtime's own work (its
collector, background compiler) is counted apart from the mutator; where the interval of
its mean is too wide for the cell's total, a run adds windows until it fits, within
--max-windows and --max-extra-seconds.

\b
--path NAME (repeatable; TARGET:NAME for one target only) measures only those paths of
the adapters: each such cell is measured and keyed as in a full session, so `compare`
matches it, and --resume and --shard plan only the chosen cells.

\b
--shard I/N measures only shard I of N of the session's cells, the same split on
every machine (balanced by the requests each cell sends); without it icount reads
GitLab's CI_NODE_INDEX/CI_NODE_TOTAL, Buildkite's BUILDKITE_PARALLEL_JOB/_COUNT or
a Kubernetes Indexed Job's JOB_COMPLETION_INDEX (with --shard-total); --shard none
ignores them. `icount table` and `icount compare` merge the shard files into the
session's results. --jobs N measures N cells at once, each with its own server and
load CPUs (callgrind; under perf only when the CPUs allow a clean split); jobs
that share CPUs take longer, and time-driven work grows with the wall time.
"""


def register(app: typer.Typer) -> None:
    app.command("serve", help=HELP)(serve_command)


def serve_command(
    ctx: typer.Context,
    targets: list[str] = typer.Argument(None, help="adapter.toml paths or bundled names."),
    cmd: str = typer.Option(None, "--cmd", help="A server command line with {port}."),
    name: str = typer.Option(None, "--name", help="Row name for --cmd [program name]."),
    path: list[str] = typer.Option(
        [],
        "--path",
        help="Only this path of every target, or TARGET:NAME of one (repeatable) [every "
        "path]; with --cmd: NAME=/TARGET, a path to measure [root=/].",
    ),
    expect_status: int = typer.Option(200, "--expect-status", help="--cmd: expected status."),
    expect_body: str = typer.Option(None, "--expect-body", help="--cmd: exact expected body."),
    expect_json: str = typer.Option(None, "--expect-json", help="--cmd: expected JSON body."),
    path_body: list[str] = typer.Option(
        [], "--path-body", help="--cmd: NAME=BODY, one --path's own exact body (repeatable)."
    ),
    path_json: list[str] = typer.Option(
        [], "--path-json", help="--cmd: NAME=JSON, one --path's own JSON body (repeatable)."
    ),
    expect_header: list[str] = typer.Option(
        [], "--expect-header", help="--cmd: 'Name: value' required (repeatable)."
    ),
    ready_timeout: float = typer.Option(
        o.READY_TIMEOUT_S, "--ready-timeout", help="--cmd: seconds to wait for the first answer."
    ),
    env: list[str] = typer.Option([], "--env", help="--cmd: KEY=VALUE for the server."),
    cwd: str = typer.Option(
        None, "--cwd", help="--cmd: the server's working directory [an empty work dir]."
    ),
    runs: int = typer.Option(
        o.RUNS, "--runs", min=1, max=100, help="Fresh server processes per cell."
    ),
    reps: int = measure_option("reps"),
    warmup: str = measure_option("warmup"),
    requests: int = measure_option("requests"),
    concurrency: int = measure_option("concurrency"),
    server_cpus: str = measure_option("server_cpus"),
    load_cpus: str = measure_option("load_cpus"),
    backend: str = typer.Option("auto", "--backend", help=BACKEND_HELP),
    load: str = measure_option("load"),
    arrival: str = measure_option("arrival"),
    connection: str = measure_option("connection"),
    max_spread: str = measure_option("max_spread"),
    max_load: float = measure_option("max_load"),
    thread: int = measure_option("thread"),
    processes: str = measure_option("processes"),
    warmup_instrumented: bool = measure_option("warmup_instrumented"),
    cold_start: bool = typer.Option(
        False,
        "--cold-start",
        help="Also count each target's cold start: the instructions from exec to its first "
        "correct answer (a cell of its own, path cold-start).",
    ),
    memory: bool = typer.Option(
        False,
        "--memory",
        help="Also each cell's peak RSS, every server process summed, from as many native "
        "runs after the same warm-up and requests (never under valgrind).",
    ),
    idle_seconds: float = measure_option("idle_seconds"),
    max_windows: int = measure_option("max_windows"),
    max_extra_seconds: float = measure_option("max_extra_seconds"),
    keep_profiles: bool = typer.Option(False, "--keep-profiles", help="Keep callgrind files."),
    profile_top: int = typer.Option(
        o.PROFILE_TOP,
        "--profile-top",
        min=0,
        help="callgrind: functions each cell's profile keeps (self and inclusive "
        "instructions, calls), the rest in one row [20; 0: no profile].",
    ),
    collector: list[str] = measure_option("collector"),
    resume: Path = typer.Option(None, "--resume", help="Continue this results file."),
    shard: str = typer.Option(
        None, "--shard", help="I/N: measure shard I of N of the cells; none: all [from CI]."
    ),
    shard_total: int = typer.Option(
        None, "--shard-total", min=1, help="Shards in all, with $JOB_COMPLETION_INDEX."
    ),
    jobs: int = typer.Option(
        1, "--jobs", "-j", min=1, max=64, help="Cells at once, each on its own CPUs."
    ),
    fmt: str = typer.Option("table", "--format", "-f", help=format_help()),
    sort: str = typer.Option("order", "--sort", help=SORT_HELP),
    output: Path = typer.Option(
        None, "--output", "-o", help="Results file [icount-results/serve-NNN.json]."
    ),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress output."),
    width: int | None = typer.Option(
        None, "--width", min=MIN_WIDTH, help=WIDTH_HELP, show_default=False
    ),
) -> None:
    import os

    from icount import shards
    from icount.cli.options import check_format, check_sort, print_results
    from icount.cli.session import measure, resume_file
    from icount.serve import plan as plan_mod
    from icount.serve import session
    from icount.serve.targets import CmdServer, PathChoice

    check_format(fmt)
    check_sort(sort)
    # --path: with --cmd, a path of its server (NAME=/TARGET); without, a choice of the
    # adapters' paths (NAME, TARGET:NAME), as `compare --interleave --path NAME` chooses
    defined = [p for p in path if "=" in p] if cmd is None else path
    given = (name, defined, path_body, path_json, expect_body, expect_json, expect_header, env,
             cwd)  # fmt: skip
    if cmd is None and any(given):
        raise UsageError(
            "--name, --path, --path-*, --expect-*, --env and --cwd go with --cmd",
            hint="an adapter target's paths are chosen with --path NAME" if defined else None,
        )
    only = () if cmd is not None else tuple(PathChoice.parse(p) for p in path)
    server = None
    if cmd is not None:
        server = CmdServer(
            cmd=cmd,
            name=name,
            paths=tuple(path),
            status=expect_status,
            body=expect_body,
            json_text=expect_json,
            headers=tuple(expect_header),
            ready_timeout=ready_timeout,
            env=tuple(env),
            path_bodies=tuple(path_body),
            path_jsons=tuple(path_json),
            cwd=cwd,
        )
    request = serve_request(
        targets=tuple(targets or ()),
        cmd=server,
        runs=runs,
        backend=backend,
        cold_start=cold_start,
        memory=memory,
        keep_profiles=keep_profiles,
        profile_top=profile_top,
        only_paths=only,
        reps=reps,
        warmup=warmup,
        requests=requests,
        concurrency=concurrency,
        server_cpus=server_cpus,
        load_cpus=load_cpus,
        load=load,
        arrival=arrival,
        connection=connection,
        max_spread=max_spread,
        max_load=max_load,
        thread=thread,
        processes=processes,
        warmup_instrumented=warmup_instrumented,
        idle_seconds=idle_seconds,
        max_windows=max_windows,
        max_extra_seconds=max_extra_seconds,
        collector=collector,
    )
    to_resume = resume_file(resume)
    if to_resume is not None:
        request = plan_mod.resume_request(request, to_resume, explicit_options(ctx))
    spec = shards.resolve(shard, shard_total, os.environ)
    plan = plan_mod.prepare(
        request, output=output, resume=to_resume, force=force, shard=spec, jobs=jobs
    )
    res = measure(
        "serve", plan, session.run_session, quiet=quiet, outputs="server outputs",
        cpus=plan.cpus.load,
    )  # fmt: skip
    print_results(res, fmt, width, sort)
