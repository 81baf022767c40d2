"""`icount run`: instructions of whole commands."""

from __future__ import annotations

from pathlib import Path

import typer

from icount.cli.options import (
    BACKEND_HELP,
    FORCE_HELP,
    MIN_WIDTH,
    SORT_HELP,
    WIDTH_HELP,
    format_help,
)
from icount.session import options as o

HELP = """Count the user-space instructions of whole commands (fresh processes, median of --runs).

\b
Examples:
  icount run -- ./fib 35
  icount run --runs 5 --name c-O2 -- ./fib-O2 35
  icount run --cmd 'c=./fib-c 35' --cmd 'rust=./fib-rs 35' --format md
  icount run --file commands.toml --backend callgrind -o results.json
  icount run --file commands.toml --shard 1/4 -o shard-1.json   # a CI job of four
  icount run --file commands.toml --backend callgrind --jobs 2

\b
A commands file (TOML):
  [[command]]
  name = "c"
  argv = ["./fib-c", "35"]
  env = { OMP_NUM_THREADS = "1" }   # optional

Each run is a fresh process in a cleared environment (PATH fixed, LC_ALL=C,
PYTHONHASHSEED=0), an empty working directory named after the command (the same
/tmp/icount-XXXXXXXX for every run of it, whatever --jobs) and ASLR off (setarch
-R). Relative file arguments are resolved against the current directory. A cell
is valid when every run exits 0 (see --allow-exit) and the spread (max-min)/median
is below --max-spread.
Under callgrind a program that does the same work in every run gives the same
count every time; runtimes with their own threads or a GC (Go) differ a little
from run to run, and the table then says "runs differ". Rows come in the order
the commands were given (--cmd, then --file, then the command after --).
Results (every run's count, the environment fingerprint) go to a JSON file;
provenance to a file beside it; each run's stdout and stderr to
RESULTS.artifacts/NAME/run-N/.

\b
--shard I/N measures only shard I of N of the commands (the same split on every
machine); without it icount reads GitLab's CI_NODE_INDEX/CI_NODE_TOTAL, Buildkite's
BUILDKITE_PARALLEL_JOB/_COUNT or JOB_COMPLETION_INDEX (Kubernetes, with
--shard-total); --shard none ignores them. `icount table SHARDS...` merges the
shard files into the session's results. --jobs N runs N commands at once, each
pinned to its own CPUs (under perf at most one command per CPU).

\b
The results file is saved after every command. --resume FILE continues it: the
commands and options it recorded (unless given again), measuring only the missing
ones; a file measured in another environment or with other parameters is refused.
"""


def register(app: typer.Typer) -> None:
    app.command(
        "run",
        help=HELP,
        context_settings={"allow_interspersed_args": False},
    )(run_command)


def run_command(
    ctx: typer.Context,
    command: list[str] = typer.Argument(None, help="The command to count, after --."),
    name: str = typer.Option(None, "--name", help="Row name for the command after --."),
    cmd: list[str] = typer.Option([], "--cmd", help="NAME=COMMAND LINE (repeatable)."),
    file: Path = typer.Option(None, "--file", help="A TOML file of [[command]] tables."),
    backend: str = typer.Option("auto", "--backend", help=BACKEND_HELP),
    runs: int = typer.Option(
        o.RUNS, "--runs", min=1, max=1000, help="Fresh processes per command."
    ),
    max_spread: str = typer.Option(
        o.MAX_SPREAD_TEXT, "--max-spread", help="Spread limit for a valid cell."
    ),
    allow_exit: str = typer.Option("0", "--allow-exit", help="Accepted exit codes: 0,1 or any."),
    env: list[str] = typer.Option([], "--env", help="KEY=VALUE added to the environment."),
    timeout: float = typer.Option(
        None, "--timeout", min=0.001, help="Seconds per run before it is killed."
    ),
    fmt: str = typer.Option("table", "--format", "-f", help=format_help()),
    sort: str = typer.Option("order", "--sort", help=SORT_HELP),
    output: Path = typer.Option(
        None, "--output", "-o", help="Results file [icount-results/run-NNN.json]."
    ),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
    keep_profiles: bool = typer.Option(False, "--keep-profiles", help="Keep callgrind profiles."),
    profile_top: int = typer.Option(
        o.PROFILE_TOP,
        "--profile-top",
        min=0,
        help="callgrind: functions each cell's profile keeps (self and inclusive "
        "instructions, calls), the rest in one row [20; 0: no profile].",
    ),
    floor: str = typer.Option(
        None,
        "--floor",
        help="auto: also count a trivial program of each command's kind (the start-up "
        "floor); or CMD, for every command.",
    ),
    minus_floor: bool = typer.Option(
        False, "--minus-floor", help="Print the counts less their floor (implies --floor auto)."
    ),
    cache_sim: bool = typer.Option(
        False,
        "--cache-sim",
        help="callgrind: one more run simulating caches, for estimated cycles (never gated).",
    ),
    memory: bool = typer.Option(
        False, "--memory", help="Also the peak RSS of as many native runs (never under valgrind)."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress output."),
    width: int | None = typer.Option(
        None, "--width", min=MIN_WIDTH, help=WIDTH_HELP, show_default=False
    ),
    shard: str = typer.Option(
        None, "--shard", help="I/N: measure shard I of N of the commands; none: all [from CI]."
    ),
    shard_total: int = typer.Option(
        None, "--shard-total", min=1, help="Shards in all, with $JOB_COMPLETION_INDEX."
    ),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, max=64, help="Commands at once."),
    resume: Path = typer.Option(None, "--resume", help="Continue this results file."),
) -> None:
    import os

    from icount import environment, measure_command, run_plan, shards
    from icount.cli.measure_options import collect_commands, explicit_options
    from icount.cli.options import (
        check_format,
        check_sort,
        parse_exit_codes,
        parse_percent,
        print_results,
    )
    from icount.cli.session import measure, resume_file

    check_format(fmt)
    check_sort(sort)
    spread = parse_percent(max_spread, "--max-spread")
    exits = parse_exit_codes(allow_exit)
    extra_env = environment.parse_env_assignments(env)
    specs = collect_commands(command or [], name, cmd, file, extra_env, resuming=resume is not None)
    base = Path.cwd()
    request = run_plan.RunRequest(
        commands=tuple(measure_command.resolve(s, base) for s in specs),
        backend=backend,
        runs=runs,
        max_spread=spread,
        allowed_exits=exits,
        timeout=timeout,
        keep_profiles=keep_profiles,
        profile_top=profile_top,
        memory=memory,
        cache_sim=cache_sim,
        floor=floor if floor is not None else ("auto" if minus_floor else None),
    )
    to_resume = resume_file(resume)
    if to_resume is not None:
        request = run_plan.resume_request(request, to_resume, explicit_options(ctx))
    spec = shards.resolve(shard, shard_total, os.environ)
    plan = run_plan.prepare(
        request, output=output, resume=to_resume, force=force, shard=spec, jobs=jobs
    )
    res = measure("run", plan, run_plan.run_session, quiet=quiet, outputs="outputs of each run")
    if minus_floor:  # printed so; the results file keeps the counts as measured
        from icount import startup_floor

        res = startup_floor.minus(res)
    print_results(res, fmt, width, sort)
