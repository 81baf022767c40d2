"""The report page: one self-contained HTML file of sections, each a chart (inline
SVG) with its figures as a table and the inputs' fingerprint and provenance folded
away in <details>. No scripts and no external resources: a Content-Security-Policy
in the page makes a browser refuse any, so the file is safe to open from a CI artifact.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icount import numfmt
from icount.charts import bars, diverging, sizes, svg, warmup
from icount.charts.figure import Figure, inline
from icount.charts.flame import Pair, diff_sections, flame_sections
from icount.charts.history import HistoryInput, history_section
from icount.charts.inputs import DrawnSizes, SizeImage
from icount.charts.ledger import LedgerInput, ledger_section
from icount.compare import explain
from icount.compare.drawn import CompareTotal, DrawnComparison, TotalSide
from icount.results import Cell, Results
from icount.results_table import SORT_ORDER

PAGE_STYLE = """\
:root{color-scheme:light dark;--fg:#1f2328;--bg:#ffffff;--muted:#59636e;--line:#d1d9e0;\
--panel:#f6f8fa;--reg:#cf222e;--imp:#1a7f37;--warn:#9a6700;--link:#0969da}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#9aa4ae;\
--line:#30363d;--panel:#161b22;--reg:#ff6b6b;--imp:#3fb950;--warn:#d29922;--link:#58a6ff}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);\
font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
main{max-width:840px;margin:0 auto;padding:12px 16px 40px}
h1{font-size:1.45rem;margin:.4em 0 .2em}
h2{font-size:1.15rem;margin:1.8em 0 .4em;padding-bottom:.2em;border-bottom:1px solid var(--line)}
h3{font-size:1rem;margin:1.2em 0 .3em}
a{color:var(--link)}
p{margin:.4em 0}
.muted{color:var(--muted)}
code{font:13px/1.4 ui-monospace,"DejaVu Sans Mono",monospace;overflow-wrap:anywhere}
nav ol{margin:.2em 0;padding-left:1.4em}
.chart{overflow-x:auto;margin:.6em 0 1em}
.chart svg{display:block;width:100%;height:auto;min-width:640px}
.curves{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:8px}
.curves svg{display:block;width:100%;height:auto}
.verdict{margin:.6em 0;padding:.5em .8em;border-left:4px solid var(--imp);background:var(--panel);\
font-weight:600}
.verdict.bad{border-color:var(--reg)}
.verdict.warn{border-color:var(--warn)}
ul.notable{margin:.3em 0;padding-left:1.3em}
details{margin:.5em 0;border:1px solid var(--line);border-radius:6px;padding:.3em .7em}
summary{cursor:pointer;color:var(--muted)}
.nm{display:inline-block;max-width:100%}
.scroll{overflow-x:auto;--edge:color-mix(in srgb,var(--fg) 22%,transparent);\
background:linear-gradient(to right,var(--bg) 40%,transparent) left/28px 100% no-repeat local,\
linear-gradient(to left,var(--bg) 40%,transparent) right/28px 100% no-repeat local,\
linear-gradient(to right,var(--edge),transparent) left/12px 100% no-repeat scroll,\
linear-gradient(to left,var(--edge),transparent) right/12px 100% no-repeat scroll}
table{border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums;margin:.4em 0}
th,td{padding:2px 8px;border-bottom:1px solid var(--line);text-align:right;vertical-align:top}
th:first-child,td:first-child{text-align:left}
td.l,th.l{text-align:left}
table.kv td{text-align:left}
table.kv td:first-child{color:var(--muted);white-space:nowrap}
"""

CSP = "default-src 'none'; style-src 'unsafe-inline'"


@dataclass(frozen=True)
class ResultsInput:
    name: str  # the file's base name
    results: Results
    provenance: Mapping[str, Any] | None  # the .provenance.json beside it, when asked for
    sort: str = SORT_ORDER  # the rows' order, as --sort gives it to the tables


@dataclass(frozen=True)
class ComparisonInput:
    name: str
    doc: DrawnComparison
    # changed cells' two profiles (label, base, new), from the results files compared
    # (--compare) or the comparison's JSON: their differential flame graphs
    profiles: tuple[Pair, ...] = ()


@dataclass(frozen=True)
class SizesInput:
    name: str
    doc: DrawnSizes


Input = ResultsInput | ComparisonInput | SizesInput | HistoryInput | LedgerInput


def e(text: str) -> str:
    return svg.esc(text)


def name(text: str) -> str:
    """A file's name in running text: moved to a line of its own rather than broken at
    a hyphen (`lzbench-O2-O3-` on one line, `serve.json` on the next), broken only
    where it is wider than a line."""
    return f'<span class="nm">{e(text)}</span>'


def _chart(fig: Figure) -> str:
    return f'<div class="chart">{inline(fig)}</div>'


_LEFT = ' class="l"'


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> str:
    """An HTML table; the first `left` columns are text, the rest figures."""

    def cells(tag: str, values: Sequence[str]) -> str:
        return "".join(
            f"<{tag}{_LEFT if k < left else ''}>{e(v)}</{tag}>" for k, v in enumerate(values)
        )

    body = "".join(f"<tr>{cells('td', r)}</tr>" for r in rows)
    return f'<div class="scroll"><table><tr>{cells("th", head)}</tr>{body}</table></div>'


def _kv(doc: Mapping[str, Any]) -> str:
    rows = []
    for k in sorted(doc):
        v = doc[k]
        text = v if isinstance(v, str) else json.dumps(v, sort_keys=True, ensure_ascii=False)
        rows.append(f"<tr><td>{e(str(k))}</td><td><code>{e(text)}</code></td></tr>")
    return f'<div class="scroll"><table class="kv">{"".join(rows)}</table></div>'


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{e(summary)}</summary>{body}</details>"


# ---------------------------------------------------------------- results


def _results_numbers(cells: Sequence[Cell]) -> str:
    head = ["name", "path", "backend", "median", "min", "max", "spread", "valid runs", "valid"]
    rows = []
    for c in cells:
        s = c.summary
        figures = (
            [svg.exact(s.median), svg.exact(s.min), svg.exact(s.max), numfmt.percent(s.spread, 3)]
            if s
            and c.valid  # as the tables: an invalid cell's figures are not shown as if they held
            else ["-", "-", "-", "-"]
        )
        rows.append(
            [
                c.name,
                c.path,
                c.backend,
                *figures,
                f"{len(c.values)}/{len(c.runs)}",
                "yes" if c.valid else f"no: {c.reason}",
            ]
        )
    return _table(head, rows, left=3)


# only on a page with a collected runtime's cells (every other keeps its bytes)
RUNTIME_CAPTION = (
    "A collected runtime's bar is its mutator, the cell's figure; the stacked bars after "
    "them add the runtime's own work (collector, compiler) per request to make its total, "
    "with the total's 95% interval as the whisker, ~ and hatched where that interval is "
    "wider than the spread limit."
)


def results_section(item: ResultsInput, sid: str) -> str:
    res = item.results
    cells = bars.in_order(res.cells, item.sort)
    valid = sum(1 for c in cells if c.valid)
    fp = res.fingerprint
    tool = fp.get("tool_version")
    out = [f'<h2 id="{sid}">Results: {name(item.name)}</h2>']
    line = f"{numfmt.plural(len(cells), 'cell')}, {valid} valid"
    if isinstance(tool, str):
        line += f"; {tool}"
    out.append(
        f'<p class="muted">{e(line)}. Bars: median of fresh processes; whisker: '
        "min to max; dots: each run. Hatched grey: not valid, with the reason."
        + (f" {e(RUNTIME_CAPTION)}" if any(c.runtime is not None for c in cells) else "")
        + "</p>"
    )
    if not cells:
        out.append("<p>No cells.</p>")
    for fig in bars.results_figures(res, f"{sid}-", item.sort):
        out.append(_chart(fig))
    curves = [(c, cs) for c in cells if (cs := warmup.warmup_curves(c))]
    if curves:
        out.append("<h3>Warm-up</h3>")
        out.append(
            '<p class="muted">Instructions per request during the warm-up, against the '
            "requests served so far (for --warmup auto: each window, where it ended).</p>"
        )
        figs = [warmup.curve_figure(c, cs, f"{sid}-w{k}") for k, (c, cs) in enumerate(curves)]
        out.append(f'<div class="curves">{"".join(inline(f) for f in figs)}</div>')
    out += flame_sections(cells, sid)
    out.append(_details("Numbers", _results_numbers(cells)))
    out.append(_details("Environment fingerprint", _kv(fp)))
    if item.provenance is not None:
        out.append(_details("Provenance", _kv(item.provenance)))
    return "".join(out)


# ---------------------------------------------------------------- comparisons


def _verdict_class(doc: DrawnComparison) -> str:
    verdicts = {r.verdict for r in doc.rows}
    if "regressed" in verdicts:
        return "verdict bad"
    if doc.forced or verdicts - {"improved", "unchanged"}:
        return "verdict warn"
    return "verdict"


def _side_text(side: object) -> list[str]:
    if side is None:
        return ["-", "-", "-"]
    return [svg.exact(getattr(side, k)) for k in ("median", "min", "max")]


def comparison_section(item: ComparisonInput, sid: str) -> str:
    doc = item.doc
    out = [f'<h2 id="{sid}">Comparison: {name(item.name)}</h2>']
    out.append(f'<p class="{_verdict_class(doc)}">{e(doc.verdict_line)}</p>')
    if doc.forced:
        out.append(
            '<p class="verdict warn">Compared with --force although the environments differ: '
            + e("; ".join(doc.forced))
            + "</p>"
        )
    notable = [r for r in doc.rows if r.verdict != "unchanged"]
    if notable:
        items = []
        for r in notable:
            change = (
                f" {numfmt.signed_percent(r.delta_pct)} (threshold {r.threshold * 100:.6g}%)"
                if r.delta_pct is not None
                else ""
            )
            if r.total is not None and r.total.decides and r.total.delta_pct is not None:
                # the total decided: its change first, the mutator's beside it (as md)
                mutator = numfmt.signed_percent(r.delta_pct) if r.delta_pct is not None else "-"
                change = (
                    f" total {_total_change(r.total)}, mutator {mutator} "
                    f"(threshold {r.threshold * 100:.6g}%)"
                )
            why = f": {r.why}" if r.why else ""
            moved = "".join(
                f"<li><code>{e(m.name)}</code> {e(explain.move_text(m))}</li>" for m in r.moves
            )
            items.append(
                f"<li><b>{e(r.verdict)}</b>: <code>{e(r.label)}</code>{e(change + why)}"
                + (f'<ul class="moved">{moved}</ul>' if moved else "")
                + "</li>"
            )
        out.append(f'<ul class="notable">{"".join(items)}</ul>')
    totals = any(r.total is not None for r in doc.rows)
    if totals:  # only then: every other comparison's page keeps its bytes
        out.append(f'<p class="muted">{e(TOTALS_CAPTION)}</p>')
    if doc.rows:
        out.append(_chart(diverging.comparison_figure(doc, f"{sid}-")))
    out += diff_sections(item.profiles, sid)
    head = [
        "cell",
        "backend",
        "base median",
        "base min",
        "base max",
        "new median",
        "new min",
        "new max",
        "delta",
        "change",
        "threshold",
        "verdict",
    ]
    head += TOTAL_HEAD if totals else []
    rows = [
        [
            r.label,
            r.backend,
            *_side_text(r.base),
            *_side_text(r.new),
            svg.exact(r.delta) if r.delta is not None else "",
            f"{r.delta_pct * 100:+.4f}%" if r.delta_pct is not None else "",
            f"{r.threshold * 100:.6g}%",
            r.verdict + (f": {r.why}" if r.why else ""),
            *(_total_cells(r.total) if totals else []),
        ]
        for r in doc.rows
    ]
    out.append(_details("Numbers", _table(head, rows, left=2)))
    return "".join(out)


TOTALS_CAPTION = (
    "A collected runtime's cell is two rows: its mutator (the cell's figure, judged as "
    "every cell) and under it its total, mutator + the runtime's own work (collector, "
    "compiler) per request, whose change counts only beyond the threshold and the 95% "
    "interval of the difference (the whisker). The verdict column says which decided the "
    "cell; a total marked ~ (its interval wider than the spread limit) does not gate. A "
    "side written before the runtime's work was counted apart shows its whole count as its "
    "total."
)
TOTAL_HEAD = ["base total", "new total", "total change", "total 95%", "total verdict"]


def _total_change(t: CompareTotal) -> str:
    """'+1.55% ±0.31%': the change and its interval as a share of the base total."""
    if t.delta_pct is None:
        return ""
    pct = t.interval_pct
    return numfmt.signed_percent(t.delta_pct) + (f" ±{pct * 100:.2f}%" if pct is not None else "")


def _total_side(side: TotalSide | None) -> str:
    if side is None or side.total is None:
        return "-"
    if side.whole:
        return f"{svg.exact(side.total)} (whole count)"
    interval = f" ±{svg.exact(side.interval)}" if side.interval is not None else ""
    return ("" if side.valid else "~") + svg.exact(side.total) + interval


def _total_cells(t: CompareTotal | None) -> list[str]:
    if t is None:
        return ["", "", "", "", ""]
    return [
        _total_side(t.base),
        _total_side(t.new),
        f"{t.delta_pct * 100:+.4f}%" if t.delta_pct is not None else "",
        f"±{svg.exact(t.interval)}" if t.interval is not None else "",
        f"{diverging.total_verdict(t)}: {t.rule}",
    ]


# ---------------------------------------------------------------- sizes

TABLE_ROWS = 200


def _sizes_numbers(doc: DrawnSizes) -> str:
    labels: dict[str, int] = {}
    for img in doc.images:
        for r in img.rows:
            labels[r.label] = max(labels.get(r.label, 0), r.file_bytes, r.vm_bytes)
    ranked = sorted(labels, key=lambda lb: (-labels[lb], lb))
    head = [doc.view] + [f"{img.name} {what}" for img in doc.images for what in ("file", "VM")]
    by = [{r.label: r for r in img.rows} for img in doc.images]
    rows = []
    for lb in ranked[:TABLE_ROWS]:
        row = [lb]
        for rows_of in by:
            got = rows_of.get(lb)
            row += [svg.exact(got.file_bytes), svg.exact(got.vm_bytes)] if got else ["-", "-"]
        rows.append(row)
    rows.append(
        ["total"] + [svg.exact(v) for img in doc.images for v in (img.file_bytes, img.vm_bytes)]
    )
    more = len(ranked) - TABLE_ROWS
    rows_text = f"{numfmt.plural(more, 'smaller row')} {'is' if more == 1 else 'are'}"
    note = f'<p class="muted">{rows_text} in the JSON file.</p>' if more > 0 else ""
    return _table(head, rows) + note


def _file_rows(img: SizeImage) -> dict[str, int]:
    return {r.label: r.file_bytes for r in img.rows if r.file_bytes}


def sizes_section(item: SizesInput, sid: str) -> str:
    doc = item.doc
    kind = "Size diff" if doc.diff else "Sizes"
    out = [f'<h2 id="{sid}">{kind}: {name(item.name)}</h2>']
    described = [
        f"{img.name}: {img.fmt} {img.kind}, {img.arch}, {numfmt.human_bytes(img.file_bytes)}"
        for img in doc.images
    ]
    out.append(
        f'<p class="muted">{e("; ".join(described))}. Bytes in the file, by {e(doc.view)}'
        "; exact figures in each mark's title and in the table below.</p>"
    )
    for fig in sizes.size_figures(doc, f"{sid}-"):
        out.append(_chart(fig))
    for old, new in zip(doc.images[::2], doc.images[1::2], strict=True) if doc.diff else ():
        if _file_rows(old) == _file_rows(new):
            out.append(
                f"<p>{e(old.name)} to {e(new.name)}: no {e(doc.view)} changed in file bytes.</p>"
            )
    out.append(_details("Numbers (bytes)", _sizes_numbers(doc)))
    return "".join(out)


# ---------------------------------------------------------------- the page


def _heading(item: Input) -> str:
    """A section's kind, as its heading starts: the name follows (name())."""
    if isinstance(item, ResultsInput):
        return "Results: "
    if isinstance(item, ComparisonInput):
        return "Comparison: "
    if isinstance(item, HistoryInput):
        return "History: "
    if isinstance(item, LedgerInput):
        return "Ledger: "
    return f"{'Size diff' if item.doc.diff else 'Sizes'}: "


def render(items: Sequence[Input]) -> str:
    """The whole page; sections in the order of `items`."""
    sections = []
    for k, item in enumerate(items, 1):
        sid = f"s{k}"
        if isinstance(item, ResultsInput):
            sections.append(results_section(item, sid))
        elif isinstance(item, ComparisonInput):
            sections.append(comparison_section(item, sid))
        elif isinstance(item, HistoryInput):
            sections.append(history_section(item, sid))
        elif isinstance(item, LedgerInput):
            sections.append(ledger_section(item, sid))
        else:
            sections.append(sizes_section(item, sid))
    names = ", ".join(i.name for i in items)
    listed = " ".join(
        name(i.name + ("," if k < len(items) else "")) for k, i in enumerate(items, 1)
    )
    nav = ""
    if len(items) > 1:
        links = "".join(
            f'<li><a href="#s{k}">{e(_heading(i))}{name(i.name)}</a></li>'
            for k, i in enumerate(items, 1)
        )
        nav = f"<nav><ol>{links}</ol></nav>"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8"/>'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}"/>'
        '<meta name="viewport" content="width=device-width, initial-scale=1"/>'
        '<meta name="color-scheme" content="light dark"/>'
        f"<title>icount report: {e(names)}</title>"
        f"<style>{PAGE_STYLE}{svg.STYLE}</style></head>\n"
        f'<body><main><h1>icount report</h1><p class="muted">{listed}</p>{nav}\n'
        + "\n".join(f"<section>{s}</section>" for s in sections)
        + "\n</main></body></html>\n"
    )
