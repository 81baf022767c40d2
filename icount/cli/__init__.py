"""Command-line layer: the only code in icount that prints or exits.

Each sub-command lives in its own `cmd_*.py` module with a `register(app)` function;
it is imported only when that command runs. Command modules import the core lazily
inside the command function, so start-up costs little more than importing typer.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from icount.errors import ExitCode, IcountError, UsageError

# name -> (module, one-line help). `icount --help` prints these lines without importing
# any command module: building every command's options costs more than importing typer.
# tests/cli/test_cli.py checks that each line is its command's own first line.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("icount.cli.cmd_run", "Count the user-space instructions of whole commands."),
    "serve": ("icount.cli.cmd_serve", "Count the server's user-space instructions per request."),
    "table": ("icount.cli.cmd_table", "Re-render saved results files as one table."),
    "compare": (
        "icount.cli.cmd_compare",
        "Compare two results files cell by cell and fail on regressions.",
    ),
    "interleave": (
        "icount.cli.cmd_interleave",
        "Measure two builds alternately, A B A B, and fail on regressions.",
    ),
    "history": (
        "icount.cli.cmd_history",
        "Keep results files by commit in a folder, and show each cell over commits.",
    ),
    "report": (
        "icount.cli.cmd_report",
        "Draw results, comparisons and sizes as one self-contained HTML page.",
    ),
    "doctor": ("icount.cli.cmd_doctor", "Say what works on this machine for icount, and why."),
    "size": ("icount.cli.cmd_size", "Break down the size of ELF, Mach-O and WebAssembly files."),
    "inline": (
        "icount.cli.cmd_inline",
        "Compare two builds of one program on the same workload, function by function.",
    ),
}

_SETTINGS: dict[str, Any] = {
    "add_completion": False,
    "pretty_exceptions_enable": False,
    # Plain click help: typer's rich help formatter alone triples start-up time.
    "rich_markup_mode": None,
    "context_settings": {"help_option_names": ["-h", "--help"]},
}


def build_command(name: str) -> Any:
    """The click command of one sub-command, built from its module."""
    sub = typer.Typer(**_SETTINGS)
    importlib.import_module(COMMANDS[name][0]).register(sub)
    command = typer.main.get_command(sub)
    command.name = name
    from icount.cli.fastargs import convert_without_pydantic
    from icount.cli.metavars import name_placeholders

    # every command's numbers through icount's checked parser (and no pydantic)
    convert_without_pydantic(command.params)
    name_placeholders(command.params)
    return command


class _LazyGroup(TyperGroup):
    """Builds a sub-command only when it is invoked (or its --help is asked for)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from icount.cli.fastargs import convert_without_pydantic

        convert_without_pydantic(self.params)  # --version: no pydantic at every start

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in COMMANDS:
            return None
        if cmd_name not in self.commands:
            self.commands[cmd_name] = build_command(cmd_name)
        return self.commands[cmd_name]

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and args[0] == "compare":
            # scripts and CI call `icount interleave` as `compare --interleave`
            words = args[1 : args.index("--")] if "--" in args else args[1:]
            if any(a.startswith("--interleave=") for a in words):
                raise UsageError("--interleave takes no value")
            if "--interleave" in words:
                from icount.cli.cmd_interleave import route_compare

                args = route_compare(ctx, args[1:])
        return super().resolve_command(ctx, args)

    def get_help_option(self, ctx: Any) -> Any:
        # `icount size` runs in ~0.15 s: typer's pydantic conversion of this flag would
        # double that (icount/cli/fastargs.py)
        option = super().get_help_option(ctx)
        if option is not None:
            from icount.cli.fastargs import convert_without_pydantic

            convert_without_pydantic([option])
        return option

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, short) for name, (_, short) in COMMANDS.items()])


app = typer.Typer(
    name="icount",
    cls=_LazyGroup,
    no_args_is_help=True,
    **_SETTINGS,
)


def _print_version(value: bool) -> None:
    if value:
        from icount import __version__

        typer.echo(f"icount {__version__}")
        raise typer.Exit()


@app.callback()
def _icount(
    version: bool = typer.Option(
        False,
        "--version",
        is_eager=True,
        callback=_print_version,
        help="Print icount's version and exit.",
    ),
) -> None:
    """Count user-space instructions of programs and servers (callgrind, perf stat)
    and break down binary sizes (ELF, Mach-O, WebAssembly).

    Exit codes: 0 ok, 2 usage error, 3 regression (compare), 4 missing tool or
    command not launchable, 5 a cell is not valid, or compare matched no cell, 6 bad
    input file, 130 interrupted.
    """


def _kill_all() -> None:
    from icount import procs  # imported late: psutil is not needed for --help

    procs.kill_all()


def _not_ours() -> None:
    # only where the process already has children (icount's entry point called inside a
    # host): a bare `icount --help` must not import psutil
    try:
        tasks = os.listdir("/proc/self/task")
        has_children = any(Path(f"/proc/self/task/{t}/children").read_text().strip() for t in tasks)
    except OSError:
        has_children = True
    if has_children:
        from icount import procs

        procs.not_ours()


_INTERRUPTED: list[int] = []  # the signal that interrupted icount, once one has


def _interrupt(signum: int, frame: object) -> None:
    # The first Ctrl-C or SIGTERM (a CI timeout, `kill`) ends the work; the ones after
    # it (a user pressing Ctrl-C again while icount stops a server that ignores
    # SIGTERM) must not break off that clean-up: each would print a traceback and
    # leave the processes it was stopping running.
    if _INTERRUPTED:
        return
    _INTERRUPTED.append(signum)
    raise KeyboardInterrupt


def _ignore_more_interrupts() -> None:
    # Python's finalization puts SIG_DFL back for every signal that has a Python handler
    # (not for an ignored one): a Ctrl-C pressed again while the interpreter shuts down
    # killed icount by SIGINT after it had stopped everything and said so (exit -2, not
    # 130; seen on a loaded machine, where shutting down takes long enough).
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def main() -> None:
    import signal

    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    _not_ours()
    try:
        # Without standalone mode click returns typer.Exit's code instead of exiting.
        rc = app(standalone_mode=False)
        if rc == ExitCode.INTERRUPTED:  # typer turns KeyboardInterrupt into Exit(130)
            _kill_all()
            typer.echo("icount: interrupted; every process icount started was stopped", err=True)
            _ignore_more_interrupts()
        sys.exit(rc if isinstance(rc, int) else 0)
    except IcountError as err:
        _kill_all()
        typer.echo(f"icount: error: {_one_line(str(err))}", err=True)
        sys.exit(int(err.exit_code))
    except KeyboardInterrupt:
        _kill_all()
        typer.echo("icount: interrupted; every process icount started was stopped", err=True)
        _ignore_more_interrupts()
        sys.exit(int(ExitCode.INTERRUPTED))
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        _kill_all()
        typer.echo("icount: interrupted", err=True)
        _ignore_more_interrupts()
        sys.exit(int(ExitCode.INTERRUPTED))
    except _click_usage_errors() as e:
        if type(e).__name__ == "NoArgsIsHelpError":  # a bare `icount run`: show its help
            typer.echo(e.format_message(), err=True)  # type: ignore[attr-defined]
        else:
            typer.echo(f"icount: error: {_one_line(_usage_message(e))}", err=True)
        sys.exit(int(ExitCode.USAGE))
    except BrokenPipeError:
        # `icount ... | head`: the reader went away; not an error worth a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
    except Exception as e:  # a bug in icount: one line, and the traceback on request
        _kill_all()
        if os.environ.get("ICOUNT_DEBUG"):
            raise
        typer.echo(
            f"icount: internal error: {type(e).__name__}: {_one_line(str(e))} "
            "(set ICOUNT_DEBUG=1 for the traceback and report it)",
            err=True,
        )
        sys.exit(int(ExitCode.INTERNAL))


def _one_line(message: str) -> str:
    """The message with its control characters escaped: a name from an input file
    holding a newline must not forge a second `icount:` line, nor an ESC sequence
    reach the terminal."""
    from icount.text import printable

    return printable(message)


def _usage_message(e: Exception) -> str:
    """click's usage error as one line, ending with where to find help."""
    text = " ".join(str(e.format_message()).split())  # type: ignore[attr-defined]
    ctx = getattr(e, "ctx", None)
    if ctx is not None:
        text += f" (see '{ctx.command_path} --help')"
    return text


def _click_usage_errors() -> tuple[type[Exception], ...]:
    """click's usage errors; recent typer versions carry their own copy of click."""
    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            return (importlib.import_module(module).ClickException,)
        except ImportError:
            continue
    return ()
