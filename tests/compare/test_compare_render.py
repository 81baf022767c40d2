"""Every output format against golden files, and byte-identical on reruns.

The numbers are constructed (see conftest): these tests check layout, wording and
stability. ICOUNT_UPDATE_GOLDEN=1 rewrites the golden files; review the diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icount import export
from icount.compare import render
from icount.compare.model import Comparison, Pair, compare, compare_pairs, fingerprint_differences
from icount.compare.thresholds import parse_thresholds
from icount.results import UNIT_PER_REQUEST, Results
from tests.support.golden import assert_golden

from .conftest import FP, cell, res

GOLDEN = Path(__file__).parent / "golden"


def mixed_inputs() -> tuple[Results, Results]:
    rq = UNIT_PER_REQUEST
    base = res(
        cell("nginx", [13012.4, 13012.1, 13012.9], "plaintext", unit=rq),
        cell("nginx", [13240.0, 13241.5, 13239.2], "json", unit=rq),
        cell("c-epoll", [3102.2, 3101.9, 3102.5], "plaintext", unit=rq),
        cell("c-epoll", [3180.0, 3181.0], "json", unit=rq, failed="status 500, expected 200"),
        cell("python", [312930.0, 318000.0, 309000.0], "plaintext", unit=rq),
        cell("python", [402000.0, 402100.0, 401900.0], "json", unit=rq),
        cell("node", [56000.0, 56010.0, 55990.0], "plaintext", unit=rq),
        cell("tiny", [200.0, 200.0, 200.0], "plaintext", unit=rq),
    )
    new = res(
        cell("nginx", [13207.6, 13207.1, 13208.0], "plaintext", unit=rq),  # +1.5%
        cell("nginx", [13240.2, 13241.0, 13239.9], "json", unit=rq),
        cell("c-epoll", [2900.1, 2900.3, 2899.8], "plaintext", unit=rq),  # -6.5%
        cell("c-epoll", [3180.0, 3180.5, 3181.0], "json", unit=rq),
        cell("python", [318000.0, 322000.0, 312000.0], "plaintext", unit=rq),  # spread
        cell("python", [402000.0, 401000.0], "json", unit=rq, failed="server exited early"),
        cell("tiny", [203.0, 203.0, 203.0], "plaintext", unit=rq),
        cell("bun", [40000.0, 40010.0, 39990.0], "plaintext", unit=rq),
    )
    return base, new


def mixed() -> Comparison:
    base, new = mixed_inputs()
    return compare(base, new, parse_thresholds(["1%", "nginx/json=0.5%", "python/json=2%"], 10))


def forced() -> Comparison:
    other = {**FP, "cpu_model": "Other CPU family 25 model 1", "cpu_flags": ["avx2", "sse2"]}
    base = res(cell("fib", [407921, 407921, 407923]))
    new = res(cell("fib", [401000, 401000, 401002]), **other)
    return compare(
        base, new, parse_thresholds([], 10), fingerprint_differences(FP, new.fingerprint)
    )


def interleaved() -> Comparison:
    pairs = [Pair(2107270, 2137270), Pair(2107280, 2137260), Pair(2107270, 2137275)]
    return compare_pairs("loop", "perf", "instructions", pairs, None, parse_thresholds([], 10))


SAMPLES = {"mixed": mixed, "forced": forced, "interleave": interleaved}
# SVG has its golden files with the other charts (tests/report)
FORMATS = [f for f in export.names(export.Kind.COMPARISON) if f != "svg"]
CASES = [(s, f) for s in SAMPLES for f in FORMATS]
SUFFIX = {"table": "txt", "md": "md", "json": "json", "csv": "csv", "benchmark-json": "bench.json",
          "bmf": "bmf.json", "junit": "junit.xml"}  # fmt: skip


@pytest.mark.parametrize(("sample", "fmt"), CASES)
def test_golden(sample: str, fmt: str) -> None:
    text = export.render_comparison(SAMPLES[sample](), fmt, 110)
    assert_golden(GOLDEN / f"{sample}.{SUFFIX[fmt]}", text)
    assert export.render_comparison(SAMPLES[sample](), fmt, 110) == text


def test_input_order_does_not_change_the_output() -> None:
    base, new = mixed_inputs()
    limits = parse_thresholds(["1%", "nginx/json=0.5%", "python/json=2%"], 10)
    shuffled = compare(
        Results(base.fingerprint, tuple(reversed(base.cells))),
        Results(new.fingerprint, tuple(reversed(new.cells))),
        limits,
    )
    for fmt in FORMATS:
        assert export.render_comparison(shuffled, fmt) == export.render_comparison(mixed(), fmt)


def test_md_starts_with_the_verdict_line() -> None:
    first = render.render_md(mixed()).splitlines()[0]
    assert first.startswith("❌ 1 regression, 1 improved, ")
    assert "(threshold 1%, nginx/json 0.5%, python/json 2%, min delta 10)" in first
    assert render.render_md(forced()).splitlines()[0].startswith("⚠️ 1 improved")
    assert render.render_md(interleaved()).splitlines()[0].startswith("❌ 1 regression")


# Bencher's schema holds numbers only, no note: `compare -f bmf -o` prints the table
# (which says it) to the terminal
WITH_NOTES = [f for f in FORMATS if f != "bmf"]


@pytest.mark.parametrize("fmt", WITH_NOTES)
def test_every_format_says_it_was_forced(fmt: str) -> None:
    text = export.render_comparison(forced(), fmt)
    assert "cpu_model" in text
    assert "forced" in text.lower()
    plain = export.render_comparison(mixed(), fmt)
    assert "forced with --force" not in plain


def test_json_is_versioned_and_sorted() -> None:
    doc = json.loads(export.render_comparison(mixed(), "json"))
    assert (doc["format"], doc["version"]) == ("icount-compare", 2)
    assert doc["summary"]["regressed"] == 1
    assert sum(doc["summary"].values()) == len(doc["cells"]) == 9
    assert export.render_comparison(mixed(), "json") == (
        json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    )


def test_benchmark_json_follows_custom_smaller_is_better() -> None:
    # The action reads an array of {name, unit, value, range?, extra?}; value a number,
    # range and extra strings (extractCustomBenchmarkResult in github-action-benchmark).
    entries = json.loads(export.render_comparison(mixed(), "benchmark-json"))
    assert isinstance(entries, list)
    for e in entries:
        assert set(e) == {"name", "unit", "value", "range", "extra"}
        assert isinstance(e["value"], float)
        assert isinstance(e["range"], str) and isinstance(e["extra"], str)
    names = [e["name"] for e in entries]
    # Cells without a valid new figure have no value to report.
    assert "python/json (callgrind)" not in names
    assert "c-epoll/json (callgrind)" in names
    assert len(names) == len(set(names)) == 7
