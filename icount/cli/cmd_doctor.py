"""`icount doctor`: what works on this machine, and which backend auto picks."""

from __future__ import annotations

import typer

HELP = """Say what works on this machine for icount, and why.

\b
Example:
  icount doctor

Checks what each backend needs (callgrind: valgrind, vgdb, ptrace; perf: whether
perf stat counts instructions:u, and if not, why), setarch -R, the CPUs icount may
pin to and the load, then says which backend --backend auto picks. Exits 4 when no
backend can count. Shows the host's CPU and the CPU valgrind presents to the programs
it runs (what glibc and a JIT pick their code by under callgrind, read by running a
CPUID probe under valgrind).
"""


def register(app: typer.Typer) -> None:
    app.command("doctor", help=HELP)(doctor_command)


def doctor_command() -> None:
    from icount import doctor
    from icount.cli.options import table_width
    from icount.errors import ExitCode
    from icount.tables import Column, Table, render_terminal

    # the detail is prose: wrapped to the terminal's width
    detail = Column("detail", "left", wrap=True)
    table = Table([Column("check", "left"), Column("ok", "left"), detail])
    for c in doctor.checks():
        table.add_row([c.name, "yes" if c.ok else "no", c.detail])
    auto = doctor.auto_backend()
    table.notes.append(f"--backend auto picks {auto}")
    typer.echo(render_terminal(table, table_width(None)), nl=False)
    if auto.startswith("none"):
        raise typer.Exit(int(ExitCode.MISSING_TOOL))
