"""`icount compare --confirm N`: a cell that regressed beyond its threshold is measured
again, N fresh runs, before the gate fails, and judged on that measurement.

The rerun is `icount run`'s own session (run_plan, the session scheduler) for just that
cell, with a command this invocation names (`--cmd NAME=...`, `--file`), never one read
from a file: a results file or its provenance may come from anywhere (a PR's artifact),
and what it records is only checked against. The command named must be the one the
new file's cell was measured with (argv and environment), with the cell's spread limit
and accepted exits, measured in the environment the file was. The row keeps both measurements: the
first as `new`, the rerun as `confirm`, and says which the verdict stands on.

Only `icount run` cells can be rerun this way: a serve cell needs its server built and
started as its session did, and is refused with the reason; a size is read from a
file, exactly, and is kept as it is.
"""

from __future__ import annotations

import dataclasses
import shlex
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from icount import environment, run_plan
from icount.compare import model
from icount.compare.model import Comparison, NoiseMap, Row, Verdict
from icount.errors import UsageError
from icount.measure_command import CommandSpec
from icount.numfmt import figure, plural, signed_percent
from icount.progress import Progress
from icount.results import UNIT_INSTRUCTIONS, Cell, Results
from icount.session import resume as resume_mod
from icount.text import printable

SIZE_BACKEND = "size"


def _is_run_cell(cell: Cell) -> bool:
    return cell.unit == UNIT_INSTRUCTIONS and cell.path == "" and "argv" in cell.params


def _shown(argv: Sequence[str]) -> str:
    return printable(shlex.join(argv))


def _timeout(new_path: Path) -> float | None:
    """The --timeout the new session ran with, where its provenance recorded one: a
    number, the one thing of its plan a rerun takes (never a command)."""
    from icount.results.merge import input_files

    for _, f in input_files([new_path]):
        plan = resume_mod.saved_plan(f)
        if plan.get("timeout") is not None:
            try:
                value: float | None = run_plan.RESUMED_OPTIONS["timeout"](plan["timeout"])
            except ValueError:
                return None
            return value
    return None


def reruns(rows: Sequence[Row], new: Results, given: Sequence[CommandSpec]) -> list[CommandSpec]:
    """The command of each row, from those this invocation named (--cmd, --file),
    checked to be the command the new file measured the cell with: a rerun of anything
    else would judge another program, and a command read from the file is never run."""
    by_key = {c.key: c for c in new.cells}
    by_name = {s.name: s for s in given}
    specs = []
    for r in rows:
        cell = by_key[r.key]
        recorded = cell.params.get("argv")
        shown = _shown(recorded) if isinstance(recorded, list) else "no command"
        spec = by_name.get(r.name)
        if spec is None:
            raise UsageError(
                f"--confirm reruns only commands this invocation names, and none is named "
                f"{printable(r.name)} (the new file measured it as {shown}; a command read "
                "from a file is never run)",
                hint=f"give --cmd '{printable(r.name)}=COMMAND LINE' or --file COMMANDS.toml",
            )
        env = cell.params.get("env") or {}
        if list(spec.argv) != recorded or dict(spec.env) != env:
            raise UsageError(
                f"--cmd {printable(r.name)} runs {_shown(spec.argv)}"
                f"{_env_text(spec.env)}, but the new file measured "
                f"{printable(r.label)} as {shown}{_env_text(env)}: a rerun would judge "
                "another command",
                hint="name the command the cell was measured with, or drop --confirm",
            )
        specs.append(spec)
    return specs


def _env_text(env: object) -> str:
    if not isinstance(env, dict) or not env:
        return ""
    return " with " + printable(" ".join(f"{k}={v}" for k, v in sorted(env.items())))


def _rerun(
    spec: CommandSpec,
    cell: Cell,
    timeout: float | None,
    runs: int,
    progress: Progress | None,
) -> Results:
    """`runs` fresh runs of the cell's command as `icount run` measured it: its backend,
    spread limit and accepted exits; no floor, memory or cache runs (none is judged)."""
    exits = cell.params.get("allowed_exits")
    allowed = (
        frozenset(exits)
        if isinstance(exits, list) and exits and all(type(x) is int for x in exits)
        else frozenset({0})
    )
    request = run_plan.RunRequest(
        commands=(spec,), backend=cell.backend, runs=runs, max_spread=cell.max_spread,
        allowed_exits=allowed, timeout=timeout,
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="icount-confirm-") as tmp:
        plan = run_plan.prepare(request, output=Path(tmp) / "confirm.json", resume=None, force=True)
        recorder = environment.ProvenanceRecorder(["icount", "compare", "--confirm", str(runs)])
        return run_plan.run_session(plan, progress, recorder)


def _confirmed(first: Row, again: Row, runs: int) -> Row:
    measured = "a rerun" if runs == 1 else f"{runs} reruns"
    assert again.new is not None or again.verdict is not Verdict.REGRESSED
    if again.new is None:  # the rerun failed: the first measurement stands
        return dataclasses.replace(first, why=f"{measured} not valid ({again.why}); not confirmed")
    change = signed_percent(again.delta_pct) if again.delta_pct is not None else "changed"
    median = figure(again.new.median, again.unit)
    if again.verdict is Verdict.REGRESSED:
        why = f"confirmed by {measured}: {change} (median {median})"
    else:
        why = f"not confirmed: {measured} measured {change} (median {median})"
        why += f", {again.verdict.value}" + (f": {again.why}" if again.why else "")
    return dataclasses.replace(first, verdict=again.verdict, why=why, confirm=again.new)


def confirm(
    comparison: Comparison,
    base: Results,
    new: Results,
    new_path: Path,
    runs: int,
    given: Sequence[CommandSpec] = (),
    noise: NoiseMap | None = None,
    progress: Progress | None = None,
    announce: Callable[[str], None] | None = None,
) -> Comparison:
    """`comparison` with each regressed row measured again (`runs` fresh runs) with the
    command `given` names for it, and judged on that measurement; `announce` hears
    which command each rerun runs, before it runs."""
    crossed = [r for r in comparison.rows if r.verdict is Verdict.REGRESSED]
    by_key = {c.key: c for c in new.cells}
    serve = [r for r in crossed if r.backend != SIZE_BACKEND and not _is_run_cell(by_key[r.key])]
    if serve:
        raise UsageError(
            f"--confirm reruns the cells of icount run; {plural(len(serve), 'cell')} that "
            f"regressed ({', '.join(printable(r.label) for r in serve[:3])}) "
            f"{'is a serve cell' if len(serve) == 1 else 'are serve cells'}, whose servers "
            "it cannot start again",
            hint="measure again with icount serve and compare that file, or drop --confirm",
        )
    todo = [r for r in crossed if r.backend != SIZE_BACKEND]
    if not todo:
        return comparison
    specs = reruns(todo, new, given)  # every command checked before any runs
    timeout = _timeout(new_path)
    fresh: dict[tuple[str, str, str], Cell] = {}
    for r, spec in zip(todo, specs, strict=True):
        if announce is not None:
            announce(f"--confirm {runs}: measuring {printable(r.label)} again: {_shown(spec.argv)}")
        res = _rerun(spec, by_key[r.key], timeout, runs, progress)
        diffs = model.fingerprint_differences(new.fingerprint, res.fingerprint)
        if diffs:
            raise UsageError(
                "--confirm measures in another environment than the new file's ("
                + "; ".join(d.describe() for d in diffs)
                + "); rerun where it was measured",
            )
        fresh |= {c.key: c for c in res.cells}
    base_cells = {c.key: c for c in base.cells}
    rows = []
    for r in comparison.rows:
        if r.key in fresh:
            again = model.judge(base_cells[r.key], fresh[r.key], comparison.thresholds, noise)
            r = _confirmed(r, again, runs)
        rows.append(r)
    return dataclasses.replace(comparison, rows=tuple(rows))
