"""No import circles in icount/: not at module level, and not held open by an import
inside a function either (which Python tolerates, but which ties two modules into one
that can be neither read nor tested apart). Nor between packages: a subpackage or a
top-level module of icount is one unit, and the units stand in layers, each importing
only those below it, so that a package can be read, tested and moved on its own."""

from __future__ import annotations

import ast
import functools
import itertools
from collections.abc import Iterator, Mapping
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "icount"


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Dotted name -> file, for every module of the package (a package is its __init__)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(
    node: ast.Import | ast.ImportFrom, module: str, is_package: bool, found: dict[str, Path]
) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:  # relative: from the module's package, up level - 1 more
        package = module.split(".") if is_package else module.split(".")[:-1]
        anchor = package[: len(package) - node.level + 1]
        base = ".".join([*anchor, *([base] if base else [])])
    for alias in node.names:  # `from pkg import sub` needs sub; `from pkg import f`, pkg
        sub = f"{base}.{alias.name}"
        yield sub if sub in found else base


def graph(found: dict[str, Path]) -> dict[str, dict[str, int]]:
    """Module -> {module it imports: line of the first such import}, counting imports at
    any depth (in functions, under `if TYPE_CHECKING:` too: a circle all the same)."""
    edges: dict[str, dict[str, int]] = {}
    for module, path in found.items():
        out: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for name in _imported(node, module, path.name == "__init__.py", found):
                while name and name not in found:  # `a.b.func` imports module `a.b`
                    name = name.rpartition(".")[0]
                if name and name != module:
                    out.setdefault(name, node.lineno)
        edges[module] = out
    return edges


def cycles(edges: Mapping[str, Mapping[str, object]]) -> list[list[str]]:
    """The strongly connected groups of more than one module, or package (Tarjan's
    algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(groups)


def _described(group: list[str], edges: dict[str, dict[str, int]], found: dict[str, Path]) -> str:
    """The group's shortest circle through its first module, each import with its line."""
    start = group[0]
    paths = {start: [start]}
    queue = [start]
    while queue:  # breadth first, inside the group: the first way back is the shortest
        here = queue.pop(0)
        for there in sorted(edges[here]):
            if there == start:
                chain = [*paths[here], start]
                return (
                    " -> ".join(
                        f"{found[a].relative_to(PACKAGE.parent)}:{edges[a][b]}"
                        for a, b in itertools.pairwise(chain)
                    )
                    + f" -> {start}"
                )
            if there in group and there not in paths:
                paths[there] = [*paths[here], there]
                queue.append(there)
    raise AssertionError(f"no circle through {start}")  # a group always has one


# Circles still open, each to be closed where it lives. An entry that is gone fails the
# test below, so this list only shrinks; it is empty: any circle fails.
STILL_OPEN: list[list[str]] = []


@functools.cache
def _icount() -> tuple[dict[str, Path], dict[str, dict[str, int]]]:
    found = modules()
    return found, graph(found)


def test_no_module_of_icount_imports_itself_through_others() -> None:
    found, edges = _icount()
    groups = cycles(edges)
    circles = [_described(group, edges, found) for group in groups if group not in STILL_OPEN]
    assert circles == [], "\n".join(circles)
    closed = [group for group in STILL_OPEN if group not in groups]
    assert closed == [], f"no longer a circle, take it off STILL_OPEN: {closed}"


def unit(module: str) -> str:
    """The package, or the top-level module, a module belongs to: icount.serve.plan ->
    icount.serve, icount.build_label -> icount.build_label."""
    return ".".join(module.split(".")[:2])


def units(
    edges: dict[str, dict[str, int]], found: dict[str, Path], top: Path = PACKAGE.parent
) -> dict[str, dict[str, str]]:
    """Unit -> {unit it imports: 'file:line' of the first module import behind the edge},
    the file named from `top`, the folder that holds the package."""
    out: dict[str, dict[str, str]] = {}
    for module in sorted(edges):
        here = out.setdefault(unit(module), {})
        for name, line in sorted(edges[module].items()):
            if unit(name) != unit(module):
                here.setdefault(unit(name), f"{found[module].relative_to(top)}:{line}")
    return out


def test_no_package_of_icount_imports_itself_through_others() -> None:
    found, edges = _icount()
    between = units(edges, found)
    circles = [
        "\n".join(
            [" <-> ".join(group)]
            + [f"  {a} -> {b} ({between[a][b]})" for a in group for b in group if b in between[a]]
        )
        for group in cycles(between)
    ]
    assert circles == [], "packages in a circle, each import behind it:\n" + "\n".join(circles)


def test_the_checker_finds_packages_in_a_circle_their_modules_are_not_in(tmp_path: Path) -> None:
    for name, text in {
        "__init__.py": "",
        "a/__init__.py": "",
        "a/x.py": "from pkg.b.y import one\n",
        "a/w.py": "",
        "b/__init__.py": "",
        "b/y.py": "one = 1\n",
        "b/z.py": "def f():\n    import pkg.a.w\n",
        "c.py": "import pkg.a.x\n",
    }.items():
        (tmp_path / "pkg" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "pkg" / name).write_text(text)
    found = modules(tmp_path / "pkg")
    edges = graph(found)
    assert cycles(edges) == []
    between = units(edges, found, tmp_path)
    assert between["pkg.b"] == {"pkg.a": "pkg/b/z.py:2"}
    assert between["pkg.c"] == {"pkg.a": "pkg/c.py:1"}
    assert cycles(between) == [["pkg.a", "pkg.b"]]


def test_the_checker_finds_a_circle_held_open_inside_a_function(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import two\n")
    (pkg / "b.py").write_text("def two():\n    from . import a\n    return a\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    edges = graph(modules(pkg))
    assert edges["pkg.a"] == {"pkg.b": 1} and edges["pkg.b"] == {"pkg.a": 2}
    assert cycles(edges) == [["pkg.a", "pkg.b"]]


def test_backends_know_neither_results_files_nor_each_other() -> None:
    _, edges = _icount()
    families = [
        {f"icount.backends.{m}" for m in ("callgrind", "callgrind_server", "valgrind")},
        {f"icount.backends.{m}" for m in ("perf", "perf_server", "perf_stat", "perf_parser")},
    ]
    for module, out in edges.items():
        if module.startswith("icount.backends."):
            results = [f"{m} (line {n})" for m, n in out.items() if m.startswith("icount.results")]
            assert not results, f"{module} imports results-file code: {results}"
    for family in families:
        others = set().union(*(f for f in families if f is not family))
        for module in family:
            theirs = sorted(others & set(edges[module]))
            assert not theirs, f"{module} imports another backend's {theirs}"
