"""Command-line layer: the only code in icount that prints or exits.

Each sub-command lives in its own `cmd_*.py` module and registers itself on `app`.
Command modules import the core lazily inside the command function, so that
`icount --help` costs little more than importing typer.
"""

from __future__ import annotations

import importlib
import os
import sys

import typer

from icount.errors import ExitCode, IcountError

app = typer.Typer(
    name="icount",
    help=(
        "Count user-space instructions of programs and servers (callgrind, perf stat) "
        "and break down binary sizes (ELF, Mach-O).\n\n"
        "Exit codes: 0 ok, 2 usage error, 3 regression (compare), 4 missing tool or "
        "command not launchable, 5 a measurement is invalid, 6 bad input file, 130 interrupted."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain click help: typer's rich help formatter alone triples start-up time.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# Order here is the order in `icount --help`.
_COMMAND_MODULES = (
    "icount.cli.cmd_run",
    "icount.cli.cmd_serve",
    "icount.cli.cmd_table",
    "icount.cli.cmd_compare",
    "icount.cli.cmd_doctor",
    "icount.cli.cmd_size",
    "icount.cli.cmd_inline",
)

for _name in _COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def fail(err: IcountError) -> typer.Exit:
    """Print one error line to stderr and return the Exit to raise."""
    typer.echo(f"icount: error: {err}", err=True)
    return typer.Exit(int(err.exit_code))


def _kill_all() -> None:
    from icount import procs  # imported late: psutil is not needed for --help

    procs.kill_all()


def _terminate_as_interrupt(signum: int, frame: object) -> None:
    # A SIGTERM (CI timeout, `kill`) must clean up like Ctrl-C does.
    raise KeyboardInterrupt


def main() -> None:
    import signal

    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        # Without standalone mode click returns typer.Exit's code instead of exiting.
        rc = app(standalone_mode=False)
        if rc == ExitCode.INTERRUPTED:  # typer turns KeyboardInterrupt into Exit(130)
            _kill_all()
            typer.echo("icount: interrupted; every process icount started was stopped", err=True)
        sys.exit(rc if isinstance(rc, int) else 0)
    except IcountError as err:
        _kill_all()
        typer.echo(f"icount: error: {err}", err=True)
        sys.exit(int(err.exit_code))
    except KeyboardInterrupt:
        _kill_all()
        typer.echo("icount: interrupted; every process icount started was stopped", err=True)
        sys.exit(int(ExitCode.INTERRUPTED))
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        _kill_all()
        typer.echo("icount: interrupted", err=True)
        sys.exit(int(ExitCode.INTERRUPTED))
    except _click_usage_errors() as e:
        e.show()  # type: ignore[attr-defined]
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
            f"icount: internal error: {type(e).__name__}: {e} "
            "(set ICOUNT_DEBUG=1 for the traceback and report it)",
            err=True,
        )
        sys.exit(int(ExitCode.INTERNAL))


def _click_usage_errors() -> tuple[type[Exception], ...]:
    """click's usage errors; recent typer versions carry their own copy of click."""
    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            return (importlib.import_module(module).ClickException,)
        except ImportError:
            continue
    return ()
