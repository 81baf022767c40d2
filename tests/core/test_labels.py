"""Files that share a base name are told apart by the shortest part of their paths."""

from __future__ import annotations

from icount import charts
from icount.labels import distinct_suffixes


def test_builds_of_one_program_keep_the_folder_that_differs() -> None:
    paths = ["build/O2/lzbench", "build/O3/lzbench", "build/O2lto/lzbench"]
    assert distinct_suffixes(paths) == ["O2/lzbench", "O3/lzbench", "O2lto/lzbench"]


def test_only_as_much_of_a_path_as_parts_it_and_the_base_name_at_least() -> None:
    assert distinct_suffixes(["x/a/b/c", "y/a/b/c", "z/q/b/c"]) == ["x/a/b/c", "y/a/b/c", "q/b/c"]
    assert distinct_suffixes(["/usr/bin/true", "/usr/lib/libc.so.6"]) == ["true", "libc.so.6"]
    assert distinct_suffixes(["./a/srv", "b/srv"]) == ["a/srv", "b/srv"]


def test_the_same_path_twice_keeps_its_base_name() -> None:
    # the slices of one fat file: the architecture parts them (charts.inputs.distinct_names)
    assert distinct_suffixes(["d/app", "d/app", "e/other"]) == ["app", "app", "other"]


def test_size_charts_of_three_builds_have_three_names() -> None:
    image = {"arch": "x86_64", "format": "ELF64", "kind": "executable", "rows": []}
    doc = {
        "format": "icount-size",
        "view": "sections",
        "images": [
            {**image, "file": f"out/{b}/lzbench", "file_bytes": n, "vm_bytes": n}
            for b, n in (("O2", 10), ("O3", 12), ("O2lto", 9))
        ],
    }
    size = charts.sizes_from_json(doc, "s.json")
    assert [i.name for i in size.images] == ["O2/lzbench", "O3/lzbench", "O2lto/lzbench"]
    svg = charts.sizes_svg(size)
    assert all(f">{b}/lzbench" in svg for b in ("O2", "O3", "O2lto"))
