"""Every command README.md and docs/*.md show runs, with the exit code the text implies,
so an example that no longer runs is found here rather than by a user.

What runs: each fenced `sh` block, line by line, and each `$ ...` line of a `console`
block, through bash in a fresh folder holding links to the repository's `fixtures/` and
`adapters/`, with `icount` on PATH (`python -m icount`). The lines of one block share the
folder, in order, so a block may make the files its later lines read. A TOML block whose
first line is `# NAME` is written into every folder of its page first (the commands file
of `icount run --file`); one whose NAME is a file of the repository must hold only lines
of that file, in its order. A line must exit 0, or the code its comment names (`# exit 3`).

Blocks that measure (run, serve, inline of programs, compare --interleave) are slow
tests, run with small sizes added where the line does not set them; of the rest, README's
are fast tests and the other pages' slow ones.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# Lines that cannot run inside the test suite, or run elsewhere in it, each with its reason.
EXCLUDED: dict[str, str] = {
    # The suite itself: running it from inside it would recurse (.ci/run runs it).
    "bash scripts/test.sh": "the whole test suite; this test is part of it",
    # The set-up is what scripts/test.sh runs before pytest (apt-get, pip and npm need a
    # network); the serve half, `icount serve` of every bundled target made small, is the
    # command tests/serve/test_bundled_targets.py runs on the same targets and checks cell
    # by cell: running it here too cost the suite 2-3.5 more minutes for nothing new.
    "bash scripts/setup.sh && icount serve --runs 3": (
        "set-up: scripts/test.sh; serve half: tests/serve/test_bundled_targets.py"
    ),
    # A live auto warm-up of Node's JIT takes minutes and is what
    # tests/serve/test_jit_warmup.py::test_auto_warmup_settles_on_node_http measures.
    "icount serve adapters/node-http/adapter.toml --warmup auto": (
        "minutes of warm-up; tests/serve/test_jit_warmup.py runs it live"
    ),
}
QUICK_START = ("bash scripts/setup.sh && icount serve --runs 3", "bash scripts/test.sh")

# Small sizes for measuring examples. `serve` runs one short window per cell whatever the
# line says (a spread needs no second run to be parsed and rendered); the requests and
# warm-up a line sets are kept, as are run's and compare's counts (seconds each).
FORCED_SERVE = {"--runs": "1", "--reps": "1", "--idle-seconds": "0"}
SMALL_SERVE = {"--requests": "100", "--warmup": "20"}
SMALL_RUN = {"--runs": "1"}
SMALL_PAIRS = {"--pairs": "2"}
TIMEOUT_FAST = 60.0
COMMANDS = ("run", "serve", "compare", "table", "report", "size", "inline", "doctor")
# Commands the README need not show (a later step than a first-time user's), whose options
# the pages must still document.
MORE_COMMANDS = ("history",)
TIMEOUT_SLOW = 900.0

FENCE = re.compile(r"^```(\w*)\s*$")
EXPECT = re.compile(r"#\s*exit (\d+)\b[^'\"]*$")


@dataclass(frozen=True)
class Line:
    lineno: int
    text: str  # continuation lines joined
    expect: int


@dataclass(frozen=True)
class Block:
    page: Path
    lineno: int
    lines: tuple[Line, ...]

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.lineno}"


@dataclass(frozen=True)
class Toml:
    page: Path
    lineno: int
    name: str
    text: str


def fences(page: Path) -> Iterator[tuple[str, int, list[str]]]:
    """(language, line number of the opening fence, body lines) of each fenced block."""
    lang: str | None = None
    start = 0
    body: list[str] = []
    for n, raw in enumerate(page.read_text().splitlines(), 1):
        m = FENCE.match(raw)
        if lang is None and m:
            lang, start, body = m.group(1), n, []
        elif lang is not None and raw.strip() == "```":
            yield lang, start, body
            lang = None
        elif lang is not None:
            body.append(raw)
    assert lang is None, f"{page}: the block opened on line {start} is never closed"


def commands(lang: str, start: int, body: list[str]) -> list[Line]:
    """The command lines of a block, continuations joined, with their expected codes."""
    out: list[Line] = []
    pending: list[str] = []
    first = 0
    for n, raw in enumerate(body, start + 1):
        if not pending:
            if lang == "console":
                if not raw.startswith("$ "):
                    continue
                raw = raw[2:]
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
            first = n
        if raw.endswith("\\"):
            pending.append(raw[:-1])
            continue
        text = " ".join(p.strip() for p in [*pending, raw])
        pending = []
        m = EXPECT.search(text)
        out.append(Line(first, text, int(m.group(1)) if m else 0))
    return out


def collect() -> tuple[list[Block], list[Toml]]:
    blocks: list[Block] = []
    tomls: list[Toml] = []
    for page in PAGES:
        for lang, start, body in fences(page):
            if lang in ("sh", "console"):
                lines = commands(lang, start, body)
                if lines:
                    blocks.append(Block(page, start, tuple(lines)))
            elif lang == "toml" and body and re.fullmatch(r"#\s*\S+", body[0]):
                tomls.append(Toml(page, start, body[0][1:].strip(), "\n".join(body) + "\n"))
    return blocks, tomls


BLOCKS, TOMLS = collect()


def bare(text: str) -> str:
    """The line without its trailing comment."""
    return re.sub(r"\s+#[^'\"]*$", "", text).strip()


def _segments(text: str) -> list[list[str]]:
    """The simple commands of a line, as words (comments dropped)."""
    lex = shlex.shlex(text, posix=True, punctuation_chars=";&|<>")
    lex.whitespace_split = True
    lex.commenters = "#"
    out: list[list[str]] = [[]]
    for word in lex:
        if word and set(word) <= set(";&|<>"):
            out.append([])
        else:
            out[-1].append(word)
    return [s for s in out if s]


def measures(text: str) -> bool:
    """Does the line count instructions (valgrind or perf: a slow test)?"""
    for words in _segments(text):
        if len(words) < 2 or words[0] != "icount":
            continue
        sub, args = words[1], words[2:]
        if sub in ("run", "serve"):
            return True
        if sub == "interleave" or (sub == "compare" and "--interleave" in args):
            return True
        if sub == "inline":
            builds = [a for a in args if not a.startswith("-")][:2]
            if not all(b.endswith(".callgrind") for b in builds):
                return True
    return False


def _with(text: str, sub: str, small: dict[str, str], forced: dict[str, str] | None = None) -> str:
    """`icount SUB ...` in `text` with the options of `small` it does not set added, and
    those of `forced` added after its own (the last of an option given twice wins)."""
    pat = re.compile(rf"\bicount {sub}\b((?:(?!\s--\s|[;&|#>]).)*)")

    def add(m: re.Match[str]) -> str:
        given = m.group(1)
        if "--resume" in given:  # a resumed session takes its options from its provenance
            return m.group(0)
        extra = [f"{k} {v}" for k, v in small.items() if not re.search(rf"{k}\b", given)]
        extra += [f"{k} {v}" for k, v in (forced or {}).items()]
        return m.group(0).rstrip() + "".join(f" {e}" for e in extra) + " "

    return pat.sub(add, text)


def shrink(text: str) -> str:
    text = _with(text, "serve", SMALL_SERVE, FORCED_SERVE)
    text = _with(text, "run", SMALL_RUN)
    if "--interleave" in text:
        text = _with(text, "compare", SMALL_PAIRS)
    return _with(text, "interleave", SMALL_PAIRS)


def _folder(tmp: Path, page: Path) -> dict[str, str]:
    for name in ("fixtures", "adapters"):
        (tmp / name).symlink_to(REPO / name)
    for t in TOMLS:
        if t.page == page and not (REPO / t.name).exists():
            (tmp / t.name).write_text(t.text)
    bin_dir = tmp / ".bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "icount"
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m icount "$@"\n')
    wrapper.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


def run_block(block: Block, tmp: Path, timeout: float) -> None:
    env = _folder(tmp, block.page)
    for line in block.lines:
        if bare(line.text) in EXCLUDED:
            continue
        text = shrink(line.text)
        done = subprocess.run(
            ["bash", "-c", f"set -o pipefail; {text}"],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == line.expect, (
            f"{block.page.relative_to(REPO)}:{line.lineno}: `{text}` exited "
            f"{done.returncode}, the text implies {line.expect}\n"
            f"stdout: {done.stdout[-3000:]}\nstderr: {done.stderr[-3000:]}"
        )
        assert "internal error" not in done.stderr, done.stderr


# A block whose every line is excluded would pass without running anything: not a test.
RUN = [b for b in BLOCKS if any(bare(x.text) not in EXCLUDED for x in b.lines)]
FAST = [
    b for b in RUN if not any(measures(x.text) for x in b.lines if bare(x.text) not in EXCLUDED)
]
SLOW = [b for b in RUN if b not in FAST]


# README's examples are the fast tier's; the other pages' run in the slow tier: each line
# starts bash and an interpreter of its own, and those 45 or so were a fifth of the fast
# tier's CPU time (issue 32 item 6).
FAST_PARAMS = [
    pytest.param(b, id=b.id, marks=() if b.page.name == "README.md" else pytest.mark.slow)
    for b in FAST
]


@pytest.mark.parametrize("block", FAST_PARAMS)
def test_example_runs(block: Block, tmp_path: Path) -> None:
    run_block(block, tmp_path, TIMEOUT_FAST)


@pytest.mark.slow
@pytest.mark.parametrize("block", SLOW, ids=[b.id for b in SLOW])
def test_measuring_example_runs(block: Block, tmp_path: Path) -> None:
    run_block(block, tmp_path, TIMEOUT_SLOW)


def test_the_examples_are_found() -> None:
    """A change to the fences that hid every block would pass the tests above vacuously."""
    shown = {bare(x.text) for b in BLOCKS for x in b.lines}
    for sub in COMMANDS:
        readme = [x for b in BLOCKS if b.page.name == "README.md" for x in b.lines]
        assert any(f"icount {sub}" in x.text for x in readme), f"README shows no `icount {sub}`"
    for line in EXCLUDED:
        assert line in shown, f"EXCLUDED names {line!r}, which no page shows any more"
    assert sum(len(b.lines) for b in BLOCKS) >= 40


def test_the_quick_start_is_the_two_commands_ci_runs() -> None:
    """README command 1 installs and measures, command 2 is exactly what .ci/run runs."""
    readme = next(b for b in BLOCKS if b.page.name == "README.md")
    assert tuple(bare(x.text) for x in readme.lines) == QUICK_START
    ci = (REPO / ".ci" / "run").read_text()
    assert "exec bash scripts/test.sh" in ci
    test_sh = (REPO / "scripts" / "test.sh").read_text()
    assert "bash scripts/setup.sh" in test_sh and "pytest" in test_sh


@pytest.mark.parametrize("toml", TOMLS, ids=[f"{t.page.name}:{t.lineno}" for t in TOMLS])
def test_toml_examples_match_the_files_they_name(toml: Toml) -> None:
    real = REPO / toml.name
    if not real.exists():  # a file of the example's own, written into the folder by _folder
        assert tomllib.loads(toml.text), toml.name
        return
    lines = iter(real.read_text().splitlines())
    for shown in toml.text.splitlines()[1:]:
        assert any(shown == r for r in lines), f"{toml.name}: {shown!r} not in it, in order"


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces -."""
    out = set()
    in_fence = False
    for raw in page.read_text().splitlines():
        if (raw.strip() == "```") if in_fence else bool(FENCE.match(raw)):
            in_fence = not in_fence
        elif not in_fence and (m := re.match(r"^#{1,6} (.*)$", raw)):
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return out


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_links_between_pages_resolve(page: Path) -> None:
    """A page moved or a heading renamed breaks the links to it: say which."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: a link to {target}, which does not exist"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked), f"{page.name}: no heading #{anchor} in {path}"


def test_every_option_is_documented() -> None:
    """A flag added to a command and to no page: the reference is missing a line."""
    pages = "\n".join(p.read_text() for p in PAGES)
    missing = []
    for sub in (*COMMANDS, *MORE_COMMANDS):
        done = subprocess.run(
            [sys.executable, "-m", "icount", sub, "--help"],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_FAST,
            env={**os.environ, "COLUMNS": "200"},
            check=True,
        )
        flags = re.findall(r"^\s+(?:-\w, )?(--[a-z][\w-]*)", done.stdout, flags=re.M)
        assert flags, f"icount {sub} --help lists no option: its layout changed"
        missing += [
            f"icount {sub} {f}"
            for f in flags
            if f != "--help" and not re.search(rf"{re.escape(f)}(?![\w-])", pages)
        ]
    assert not missing, f"options no page mentions (docs/reference.md): {missing}"
