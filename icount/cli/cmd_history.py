"""`icount history`: keep results by commit in a folder, and show a cell's course."""

from __future__ import annotations

from pathlib import Path

import typer

from icount.cli.options import MIN_WIDTH, WIDTH_HELP
from icount.errors import UsageError

HELP = """Keep results files by commit in a folder, and show each cell over commits.

\b
Examples:
  icount history add results.json --dir history/
  icount history add shards/ --dir history/ --commit "$(git rev-parse HEAD)" --keep 100
  icount history show history/
  icount history show history/ -f json
  icount compare base.json new.json --history history/

\b
`add RESULTS --dir DIR` files a results file (or a folder of one session's
shard files, merged) under the commit its provenance records, or --commit:
DIR/NNNN-COMMIT.json, NNNN the order commits were added in, the provenance
beside it. A commit added again replaces its own entry in its place. A
tree with tracked files modified is refused (untracked files do not
count). --keep N drops the oldest entries beyond N, never the one just
filed. The folder is plain files: a CI cache, an artifacts store or a
branch can carry it from one run to the next.

\b
`show DIR` prints each commit's medians (a row per commit, oldest first,
a column per cell) and each cell's noise: Q3 + 3 x IQR of its changes
between consecutive commits, the threshold `icount compare --history DIR`
takes when it is above the given one ("exact": the cell repeats to the
instruction, and any change fails). -f md or json (each cell's medians, one
per commit, null where it has none).
"""

FORMATS = ("table", "md", "json")
ACTIONS = ("add", "show")


def register(app: typer.Typer) -> None:
    app.command("history", help=HELP, no_args_is_help=True)(history_command)


def history_command(
    action: str = typer.Argument(..., help="add or show."),
    path: Path = typer.Argument(
        None, help="add: the results file (or shard folder); show: the history folder."
    ),
    directory: Path = typer.Option(None, "--dir", "-d", help="The history folder."),
    commit: str = typer.Option(
        None, "--commit", help="add: the commit to file it under [default: its provenance's]."
    ),
    keep: int = typer.Option(
        0,
        "--keep",
        min=0,
        max=100000,
        help="add: keep the newest N entries [default: all].",
        show_default=False,
    ),
    fmt: str = typer.Option("table", "--format", "-f", help="show: table, md or json."),
    width: int | None = typer.Option(
        None, "--width", min=MIN_WIDTH, help=WIDTH_HELP, show_default=False
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="add: no line saying what was filed."),
) -> None:
    if action not in ACTIONS:
        raise UsageError(f"unknown history action {action!r}", hint="use icount history add|show")
    if action == "add":
        _add(path, directory, commit, keep, quiet)
    else:
        if commit is not None or keep:
            raise UsageError("--commit and --keep are options of icount history add")
        _show(directory or path, path if directory is not None else None, fmt, width)


def _add(
    path: Path | None, folder: Path | None, commit: str | None, keep: int, quiet: bool
) -> None:
    from icount import results
    from icount.history import store
    from icount.session.resume import read_provenance

    if path is None or folder is None:
        raise UsageError("history add takes RESULTS --dir DIR")
    named = results.load_inputs([path])
    res = results.merge_inputs(named)
    # a single file's provenance goes with it; a merged session's files each have their own
    provenance = read_provenance(path) if len(named) == 1 and path.is_file() else {}
    if commit is None:
        sources = [Path(src) for src, _ in named]
        recorded = {store.recorded_commit(read_provenance(p), str(p)) for p in sources}
        if len(recorded) > 1:
            raise UsageError(
                f"the files of {path} record different commits ({', '.join(sorted(recorded))})",
                hint="pass --commit",
            )
        commit = recorded.pop()
    done = store.add(folder, res.sorted(), provenance or None, store.check_commit(commit), keep)
    if not quiet:
        how = "replaced" if done.replaced else "added"
        dropped = f"; dropped the {len(done.removed)} oldest" if done.removed else ""
        typer.echo(f"icount: {how} {done.entry.path}{dropped}", err=True)


def _show(folder: Path | None, extra: Path | None, fmt: str, width: int | None) -> None:
    from icount.cli.options import table_width
    from icount.history import render, store
    from icount.jsonout import dumps
    from icount.tables import render_markdown, render_terminal

    if folder is None or extra is not None:
        raise UsageError("history show takes one history folder: DIR (or --dir DIR)")
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}", hint=f"use --format {'|'.join(FORMATS)}")
    if not folder.exists():
        raise UsageError(f"no history folder {folder}", hint="icount history add makes it")
    loaded = store.load(folder)  # refuses a file as add does: "history FILE is not a folder"
    if not loaded:
        raise UsageError(f"history {folder} holds no entry (NNNN-COMMIT.json)")
    h = render.build(loaded)
    if fmt == "json":
        typer.echo(dumps(render.to_json(h)), nl=False)
    elif fmt == "md":
        typer.echo("\n".join(render_markdown(t) for t in render.tables(h)), nl=False)
    else:
        columns = table_width(width)
        typer.echo("\n".join(render_terminal(t, columns) for t in render.tables(h)), nl=False)
