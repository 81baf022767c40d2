"""`icount compare --confirm N`: a cell that regressed beyond its threshold is measured
again, N fresh runs, before the gate fails, and judged on that measurement.

The rerun is `icount run`'s own session (run_plan, the session floor) for just that
cell, from the commands and options the new file's provenance recorded (its `plan`,
as `--resume` reads it), checked to measure the cell with the parameters the file
holds and in the environment it was measured in. The row keeps both measurements: the
first as `new`, the rerun as `confirm`, and says which the verdict stands on.

Only `icount run` cells can be rerun this way: a serve cell needs its server built and
started as its session did, and is refused with the reason; a size is read from a
file, exactly, and is kept as it is.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence
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

MAX_CONFIRM = 100
SIZE_BACKEND = "size"


def _is_run_cell(cell: Cell) -> bool:
    return cell.unit == UNIT_INSTRUCTIONS and cell.path == "" and "argv" in cell.params


def _recorded(new_path: Path) -> tuple[Path, run_plan.RunRequest]:
    """The file whose provenance records the new session's plan, and that plan."""
    from icount.results.merge import input_files

    for _, f in input_files([new_path]):
        if "commands" in resume_mod.saved_plan(f):
            return f, run_plan.resume_request(run_plan.RunRequest(), f, frozenset())
    raise UsageError(
        f"--confirm reruns cells with the command that measured them, and {new_path} "
        "records none (its provenance file, NAME.provenance.json beside it, is missing or "
        "is not from icount run)",
        hint="keep the provenance file next to the results",
    )


def _specs(
    rows: Sequence[Row], new: Results, request: run_plan.RunRequest, src: Path
) -> list[CommandSpec]:
    by_key = {c.key: c for c in new.cells}
    by_name = {s.name: s for s in request.commands}
    specs = []
    for r in rows:
        cell = by_key[r.key]
        spec = by_name.get(r.name)
        argv, env = list(spec.argv) if spec else None, dict(spec.env) if spec else None
        if spec is None or cell.params.get("argv") != argv or cell.params.get("env") != env:
            raise UsageError(
                f"{src}'s recorded plan does not measure {printable(r.label)} as the file "
                "holds it (another command of that name, or none)",
                hint="compare the results file its own session wrote",
            )
        specs.append(spec)
    return specs


def _rerun(
    specs: Sequence[CommandSpec],
    request: run_plan.RunRequest,
    backend: str,
    runs: int,
    progress: Progress | None,
) -> Results:
    again = dataclasses.replace(request, commands=tuple(specs), runs=runs, backend=backend)
    with tempfile.TemporaryDirectory(prefix="icount-confirm-") as tmp:
        plan = run_plan.prepare(again, output=Path(tmp) / "confirm.json", resume=None, force=True)
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
    noise: NoiseMap | None = None,
    progress: Progress | None = None,
) -> Comparison:
    """`comparison` with each regressed row measured again (`runs` fresh runs) and
    judged on that measurement."""
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
    src, request = _recorded(new_path)
    backends = sorted({r.backend for r in todo})
    fresh: dict[tuple[str, str, str], Cell] = {}
    for backend in backends:
        rows = [r for r in todo if r.backend == backend]
        res = _rerun(_specs(rows, new, request, src), request, backend, runs, progress)
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
