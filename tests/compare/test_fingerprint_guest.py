"""Which fingerprint fields compare checks: under callgrind the CPU valgrind presents (the
guest), not the host's; under perf the host's; files older than the guest fingerprint as
before, saying so. Each pair of files is a real results file (fixtures/compare) whose
fingerprint the test edits, as another machine would have written it."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from icount import environment, guest_cpu

from .conftest import Cli

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "fixtures" / "compare" / "loop-base.json"
# what valgrind 3.19.0 presented on the AMD EPYC VM that wrote loop-base.json
GUEST = guest_cpu.decode(
    bytes.fromhex((ROOT / "fixtures" / "guest_cpu" / "valgrind-3.19.0-on-amd-epyc.hex").read_text())
).fingerprint()
OTHER_HOST: dict[str, Any] = {
    "cpu_vendor": "GenuineIntel",
    "cpu_model": "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz family 6 model 106",
    "cpu_flags": ["avx", "avx2", "avx512f", "bmi1", "bmi2", "erms", "sse2"],
}
MACHINE: dict[str, Any] = {"cpus": 4, "memory_gib": 16}


def _file(tmp_path: Path, name: str, fields: Mapping[str, Any], backend: str = "callgrind") -> Path:
    """The real fixture with its fingerprint edited (None drops a field) and, for another
    backend, its cells' backend too (a cell's key holds its backend)."""
    doc = json.loads(REAL.read_text())
    fp = doc["fingerprint"]
    fp["backend"] = backend
    for key, value in fields.items():
        if value is None:
            fp.pop(key, None)
        else:
            fp[key] = copy.deepcopy(value)
    for cell in doc["cells"]:
        cell["backend"] = backend
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_callgrind_compares_results_from_hosts_of_other_cpu_models(
    cli: Cli, tmp_path: Path
) -> None:
    base = _file(tmp_path, "base.json", {**GUEST, **MACHINE})
    new = _file(tmp_path, "new.json", {**GUEST, **MACHINE, **OTHER_HOST})
    done = cli("compare", base, new, "-f", "json")
    assert done.code == 0, done.err
    assert json.loads(done.out)["forced"] == []
    assert "unchanged" in cli("compare", base, new).out


def test_perf_refuses_results_from_hosts_of_other_cpu_models(cli: Cli, tmp_path: Path) -> None:
    # the same edit under perf: the program ran on each host's own CPU
    base = _file(tmp_path, "base.json", MACHINE, "perf")
    new = _file(tmp_path, "new.json", {**MACHINE, **OTHER_HOST}, "perf")
    done = cli("compare", base, new)
    assert done.code == 2
    assert "cpu_model: base 'AMD EPYC family 25 model 17' vs new 'Intel(R) Xeon(R)" in done.err
    assert "— the program runs on the host's CPU: glibc's string functions" in done.err
    assert "cpu_vendor" in done.err and "cpu_flags: only base has" in done.err
    assert "predates" not in done.err  # perf never had a guest to record


def test_callgrind_refuses_another_guest_cpu_saying_why(cli: Cli, tmp_path: Path) -> None:
    other = {
        **GUEST,
        "guest_cpu_model": "Intel(R) Core(TM) i5-2300 CPU @ 2.80GHz family 6 model 42",
        "guest_cpu_flags": [f for f in GUEST["guest_cpu_flags"] if f != "avx2"],
    }
    base = _file(tmp_path, "base.json", GUEST)
    new = _file(tmp_path, "new.json", other)
    done = cli("compare", base, new)
    assert done.code == 2
    err = done.err
    assert "guest_cpu_model: base 'Intel(R) Core(TM) i7-4910MQ" in err
    assert (
        "guest_cpu_flags: only base has avx2 — glibc's string functions and a JIT's code "
        "follow the CPU valgrind presents" in err
    )
    assert "cpu_model:" not in err.replace("guest_cpu_model:", "")  # the hosts are the same
    assert "--force" in err


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("glibc", "glibc 2.39", "the C library's own code is counted"),
        ("tool_version", "valgrind 3.22.0", "may present another CPU"),
    ],
)
def test_the_other_checked_fields_still_refuse_under_callgrind(
    cli: Cli, tmp_path: Path, field: str, value: object, why: str
) -> None:
    base = _file(tmp_path, "base.json", {**GUEST, **MACHINE})
    new = _file(tmp_path, "new.json", {**GUEST, **MACHINE, **OTHER_HOST, field: value})
    done = cli("compare", base, new)
    assert done.code == 2
    assert f"{field}: base " in done.err and why in done.err
    assert "cpu_model" not in done.err.replace("guest_cpu_model", "")


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [("cpus", 2, "GOMAXPROCS"), ("memory_gib", 7, "the JVM's default heap")],
)
def test_runner_sizes_compare_with_a_warning(
    cli: Cli, tmp_path: Path, field: str, value: object, why: str
) -> None:
    """A baseline from a 4-vCPU runner against a 2-vCPU one (GitHub's public and private
    runners of one label): a C program's counts do not follow the size."""
    base = _file(tmp_path, "base.json", {**GUEST, **MACHINE})
    new = _file(tmp_path, "new.json", {**GUEST, **MACHINE, field: value})
    done = cli("compare", base, new)
    assert done.code == 0, done.err
    assert done.err.startswith(f"icount: warning: {field}: base ")
    assert why in done.err and done.err.count("\n") == 1


@pytest.mark.parametrize("backend", ["perf", "callgrind-other"])
def test_guest_fields_stand_for_the_host_only_under_callgrind(backend: str) -> None:
    """A perf file that carries guest_cpu_* keys (hand-edited, or a backend's mistake):
    perf runs the program on the host, so the host's CPU is checked."""
    a = {"backend": backend, **GUEST, "cpu_model": "A"}
    b = {"backend": backend, **GUEST, "cpu_model": "B"}
    assert environment.cpu_fields(a, b) == environment.HOST_CPU_FIELDS
    assert environment.fingerprint_differences(a, b) == ["cpu_model"]
    mixed = {**a, "backend": "callgrind"}
    assert environment.cpu_fields(mixed, a) == environment.HOST_CPU_FIELDS
    both = {**a, "backend": "callgrind"}, {**b, "backend": "callgrind"}
    assert environment.fingerprint_differences(*both) == []


def test_files_before_the_guest_fingerprint_compare_as_before(cli: Cli, tmp_path: Path) -> None:
    # loop-base.json itself predates it: no guest fields, no cpus, no memory
    assert not any(
        k.startswith("guest") or k in MACHINE for k in json.loads(REAL.read_text())["fingerprint"]
    )
    assert cli("compare", REAL, REAL).code == 0
    new = _file(tmp_path, "new.json", {**GUEST, **MACHINE})  # today's, on the same host
    assert cli("compare", REAL, new).code == 0
    assert cli("compare", new, REAL).code == 0
    # another host's CPU is still refused, the host's being all the old file says
    other = _file(tmp_path, "other.json", {**GUEST, **MACHINE, **OTHER_HOST})
    done = cli("compare", REAL, other)
    assert done.code == 2
    assert "cpu_model: base 'AMD EPYC family 25 model 17' vs new 'Intel(R) Xeon(R)" in done.err
    assert (
        "— valgrind presents a CPU it chooses by the host's, and glibc's string functions and "
        "a JIT's code follow that (the base file predates the guest CPU fingerprint, so the "
        "host's CPU is checked)" in done.err
    )
    old_other = _file(tmp_path, "old-other.json", OTHER_HOST)
    done = cli("compare", REAL, old_other)
    assert done.code == 2
    assert "both files predate the guest CPU fingerprint, so the host's CPU is checked" in (
        done.err
    )


def test_a_guest_that_could_not_be_probed_leaves_the_host_checked(cli: Cli, tmp_path: Path) -> None:
    unknown = guest_cpu.Unknown("the CPUID probe exited with status 1").fingerprint()
    base = _file(tmp_path, "base.json", GUEST)
    new = _file(tmp_path, "new.json", {**unknown, **OTHER_HOST})
    done = cli("compare", base, new)
    assert done.code == 2
    assert (
        "the new file's guest CPU is unknown: the CPUID probe exited with status 1, so the "
        "host's CPU is checked" in done.err
    )
    assert cli("compare", base, _file(tmp_path, "same.json", unknown)).code == 0


def test_checked_fields_follow_what_both_fingerprints_hold() -> None:
    old = json.loads(REAL.read_text())["fingerprint"]
    new = {**old, **GUEST, **MACHINE}
    host = ("backend", "tool_version", "arch", "cpu_vendor", "cpu_model", "cpu_flags", "glibc")
    assert environment.checked_fields(old, old) == host
    assert environment.checked_fields(old, new) == host
    assert environment.checked_fields(new, new) == (
        "backend",
        "tool_version",
        "arch",
        *environment.GUEST_CPU_FIELDS,
        "glibc",
    )
    # icount table and --resume check the same fields, the backend's arguments too
    assert environment.fingerprint_differences(new, {**new, **OTHER_HOST}, same_method=True) == []


def test_shards_from_hosts_of_other_cpu_models_merge_when_valgrind_presents_one_cpu(
    tmp_path: Path,
) -> None:
    from icount.errors import UsageError
    from tests.results.test_merge import _files, _merge, _shard

    guest = {**GUEST, **MACHINE}
    host = {k: json.loads(REAL.read_text())["fingerprint"][k] for k in OTHER_HOST}
    parts = [
        _shard(1, fingerprint={**guest, **host}),
        _shard(2, fingerprint={**guest, **OTHER_HOST}),
    ]
    merged = _merge(_files(tmp_path, *parts, _shard(3, fingerprint={**guest, **host})))
    assert len(merged.cells) == 5 and merged.fingerprint["cpu_model"] == host["cpu_model"]
    # another guest CPU, or shards that do not record it, still refuse another host's
    other_guest = {**guest, **OTHER_HOST, "guest_cpu_flags": ["sse2"]}
    for first, second, field in (
        (guest | host, other_guest, "guest_cpu_flags"),
        (host, OTHER_HOST, "cpu_flags"),
    ):
        paths = _files(
            tmp_path,
            _shard(1, fingerprint=first),
            _shard(2, fingerprint=second),
            _shard(3, fingerprint=first),
        )
        with pytest.raises(UsageError, match=f"another environment .*: {field}"):
            _merge(paths)
    # perf shards carrying guest fields: perf ran the programs on each host's own CPU
    perf = {**guest, "backend": "perf"}
    paths = _files(
        tmp_path,
        _shard(1, fingerprint=perf | host),
        _shard(2, fingerprint=perf | OTHER_HOST),
        _shard(3, fingerprint=perf | host),
    )
    with pytest.raises(UsageError, match=r"another environment .*: cpu_flags"):
        _merge(paths)


def test_a_file_written_before_the_guest_fingerprint_resumes_on_the_same_host() -> None:
    from icount import results
    from icount.errors import UsageError
    from icount.session.resume import check_environment

    old = results.load(REAL)
    today = {**old.fingerprint, **GUEST, **MACHINE}
    check_environment(old, today)  # the new fields are not asked of the old file
    with pytest.raises(UsageError, match="differs in cpu_vendor, cpu_model, cpu_flags"):
        check_environment(old, {**today, **OTHER_HOST})
    newer = results.Results({**today, **OTHER_HOST}, old.cells)
    check_environment(newer, today)  # both hold the guest: the hosts may differ
