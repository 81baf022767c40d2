"""`-f bmf` (Bencher Metric Format) and `-f junit` parse with the standard parsers, hold
every cell and keep their bytes from one run to the next."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from icount import results
from icount.results import UNIT_PER_REQUEST, Cell
from tests.compare.conftest import Cli, cell, res

BASE = res(
    cell("fib", [1000.0, 1010.0, 1020.0]),
    cell("nginx", [200.0] * 3, "plaintext", unit=UNIT_PER_REQUEST),
    cell("gone", [50.0] * 3),
    cell("broken", [70.0] * 3),
    cell('a<b & "c"\x1b[2J', [300.0] * 3),
    cell("app", [4096.0], "total/file", backend="size", unit="bytes"),
)
NEW = res(
    cell("fib", [1500.0, 1510.0, 1520.0]),
    cell("nginx", [199.0] * 3, "plaintext", unit=UNIT_PER_REQUEST),
    cell("fresh", [60.0] * 3),
    cell("broken", [70.0, 70.0], failed="exited with status 1"),
    cell('a<b & "c"\x1b[2J', [300.0] * 3),
    cell("app", [8192.0], "total/file", backend="size", unit="bytes"),
)


def _files(tmp_path: Path) -> tuple[Path, Path]:
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    results.save(base, BASE, None, overwrite=False)
    results.save(new, NEW, None, overwrite=False)
    return base, new


def test_bmf_has_a_metric_for_every_cell_with_a_new_figure(tmp_path: Path, cli: Cli) -> None:
    base, new = _files(tmp_path)
    done = cli("compare", base, new, "-f", "bmf")
    assert done.code == 3  # fib regressed
    doc = json.loads(done.out)
    # Bencher's shape: {benchmark: {measure: {value, lower_value?, upper_value?}}}
    for benchmark, measures in doc.items():
        assert isinstance(benchmark, str) and benchmark and isinstance(measures, dict)
        for slug, metric in measures.items():
            assert len(slug) <= 64 and set(metric) <= {"value", "lower_value", "upper_value"}
            assert all(isinstance(v, float) for v in metric.values())
            assert metric["lower_value"] <= metric["value"] <= metric["upper_value"]
    assert doc == {
        "fib": {"instructions": {"value": 1510.0, "lower_value": 1500.0, "upper_value": 1520.0}},
        "nginx/plaintext": {
            "instructions-per-request": {"value": 199.0, "lower_value": 199.0, "upper_value": 199.0}
        },
        "fresh": {"instructions": {"value": 60.0, "lower_value": 60.0, "upper_value": 60.0}},
        'a<b & "c"\x1b[2J': {
            "instructions": {"value": 300.0, "lower_value": 300.0, "upper_value": 300.0}
        },
        "app/total/file": {"size": {"value": 8192.0, "lower_value": 8192.0, "upper_value": 8192.0}},
    }  # gone and broken have no new figure for Bencher: every other format shows them
    assert done.out == cli("compare", base, new, "-f", "bmf").out
    table = cli("table", new, "-f", "bmf")
    assert json.loads(table.out).keys() == doc.keys()


def test_bmf_names_a_label_measured_by_two_backends_with_each(tmp_path: Path, cli: Cli) -> None:
    both = res(cell("fib", [10.0] * 3), cell("fib", [12.0] * 3, backend="perf"))
    f = tmp_path / "both.json"
    results.save(f, both, None, overwrite=False)
    doc = json.loads(cli("table", f, "-f", "bmf").out)
    assert sorted(doc) == ["fib (callgrind)", "fib (perf)"]


def test_junit_has_a_testcase_per_cell_failed_when_regressed(tmp_path: Path, cli: Cli) -> None:
    base, new = _files(tmp_path)
    done = cli("compare", base, new, "-f", "junit")
    assert done.code == 3
    assert done.out.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(done.out)
    assert root.tag == "testsuites"
    suite = root.find("testsuite")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {
        "fib", "nginx/plaintext", "gone", "fresh", "broken", 'a<b & "c"\\x1b[2J', "app/total/file"
    }  # fmt: skip
    kinds = {name: [child.tag for child in c] for name, c in cases.items()}
    assert kinds["fib"] == ["failure", "system-out"]
    assert kinds["app/total/file"] == ["failure", "system-out"]  # sizes gate as counts do
    assert kinds["broken"] == ["error", "system-out"]
    assert kinds["gone"] == kinds["fresh"] == ["skipped", "system-out"]
    assert kinds["nginx/plaintext"] == ["system-out"]
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "7", "2", "1", "2"
    )  # fmt: skip
    assert cases["fib"].get("classname") == "icount.callgrind"
    failure = cases["fib"].find("failure")
    assert failure is not None and failure.get("message") == (
        "regressed +49.50%, beyond its threshold 1%"
    )
    assert "base: median 1010 (min 1000, max 1020, 3 runs) instructions" in (
        cases["fib"].findtext("system-out") or ""
    )
    assert "\x1b" not in done.out
    assert done.out == cli("compare", base, new, "-f", "junit").out


def test_bmf_carries_peak_memory_where_it_was_measured(tmp_path: Path, cli: Cli) -> None:
    import dataclasses

    def with_peaks(c: Cell, peaks: list[int]) -> Cell:
        return dataclasses.replace(c, extra={"memory": {"peak_rss_bytes": peaks}})

    base = res(with_peaks(cell("fib", [1000.0] * 3), [2_000_000, 2_100_000, 2_050_000]))
    new = res(
        with_peaks(cell("fib", [1000.0] * 3), [2_200_000, 2_300_000, 2_250_000]),
        cell("plain", [10.0] * 3),
    )
    b, n = tmp_path / "b.json", tmp_path / "n.json"
    results.save(b, base, None, overwrite=False)
    results.save(n, new, None, overwrite=False)
    peak = {"value": 2_250_000.0, "lower_value": 2_200_000.0, "upper_value": 2_300_000.0}
    compared = json.loads(cli("compare", b, n, "-f", "bmf").out)
    assert compared["fib"]["memory"] == peak
    assert "memory" not in compared["plain"]
    assert json.loads(cli("table", n, "-f", "bmf").out) == compared
