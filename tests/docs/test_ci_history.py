"""docs/ci.md's history recipes (GitHub Actions and GitLab), run as written: each YAML
block that files into a history is parsed from the page, and its steps run in order, in
fresh clones of a real git repository, as the CI would run them. The workspace holds
what a CI workspace holds and no commit does (icount's checkout in `.icount/`, the
restored `icount-history/`, the build, the results being written), and no step is given
`--commit`: each measurement is filed under the commit it measured, as the page says.

Only what no test machine has is stood in for: `callgrind` counts what each build prints
(tests/docs/ci_backend.py, so that a run takes milliseconds), `apt-get`, `pip`, `gh` and
`curl` record what they were asked, and the CI's checkout and cache are emulated.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from icount.history import store
from tests.docs.test_examples import REPO, fences

PAGE = REPO / "docs" / "ci.md"
TIMEOUT = 120.0
MAKEFILE = (
    ".PHONY: build/app\nbuild/app:\n\tmkdir -p build && cp app.sh build/app && chmod +x build/app\n"
)
BENCH = '[[command]]\nname = "app"\nargv = ["build/app"]\n'
# What stands in for the tools a CI image has and a test machine must not run: each
# appends its command line to calls.log; gh and curl keep the comment they would post.
STUBS = {
    "sudo": 'exec "$@"',
    "apt-get": "",
    "pip": '[ -d "${@: -1}" ] || { echo "pip: no ${@: -1}" >&2; exit 1; }',
    "gh": 'for a; do [ "$prev" = --body-file ] && cp "$a" "$LOG.comment"; prev=$a; done',
    "curl": 'for a; do case $a in body@*) cp "${a#body@}" "$LOG.comment";; esac; done',
}


def recipes() -> tuple[dict[str, Any], dict[str, Any]]:
    """(GitHub's workflow, GitLab's pipeline): the page's YAML blocks that add to a history."""
    docs = [
        yaml.safe_load("\n".join(body))
        for lang, _, body in fences(PAGE)
        if lang == "yaml" and any("icount history add" in line for line in body)
    ]
    github = [d for d in docs if "jobs" in d]
    gitlab = [d for d in docs if "jobs" not in d]
    assert len(github) == 1 and len(gitlab) == 1, "docs/ci.md's history recipes moved"
    return github[0], gitlab[0]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=ci", "-c", "user.email=ci@example.org", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


@dataclass
class Project:
    """The project's repository (what CI clones), the runner's cache, and the tools."""

    tmp: Path
    origin: Path
    env: dict[str, str]
    cache: dict[str, Path] = field(default_factory=dict)  # key -> saved folder, oldest first
    runs: int = 0

    def commit(self, count: int, note: str, branch: str = "main") -> str:
        git(self.origin, "checkout", "-q", branch)
        (self.origin / "app.sh").write_text(f"#!/bin/sh\necho {count}\n")
        (self.origin / "README").write_text(note + "\n")
        git(self.origin, "add", "app.sh", "README")
        git(self.origin, "commit", "-q", "-m", note)
        return git(self.origin, "rev-parse", "HEAD")

    def clone(self, sha: str) -> Path:
        self.runs += 1
        ws = self.tmp / f"run-{self.runs}"
        git(self.tmp, "clone", "-q", str(self.origin), str(ws))
        git(ws, "checkout", "-q", "--detach", sha)
        return ws

    def bash(
        self, ws: Path, script: str, extra: Mapping[str, str]
    ) -> subprocess.CompletedProcess[str]:
        """A step's script as GitHub runs it with `shell: bash` and GitLab's runner runs
        a job (GitHub's default shell, `bash -e`, is the laxer: no pipefail)."""
        path = self.tmp / f"step-{self.runs}.sh"
        path.write_text(script + "\n")
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(path)],
            cwd=ws,
            env={**self.env, **extra},
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )

    def calls(self) -> list[str]:
        log = Path(self.env["LOG"])
        return log.read_text().splitlines() if log.exists() else []

    def comment(self) -> str:
        return Path(self.env["LOG"] + ".comment").read_text()


@pytest.fixture
def project(tmp_path: Path) -> Project:
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q")
    git(origin, "checkout", "-q", "-b", "main")
    (origin / "Makefile").write_text(MAKEFILE)
    (origin / "bench.toml").write_text(BENCH)
    git(origin, "add", "Makefile", "bench.toml")
    git(origin, "commit", "-q", "-m", "build")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    stubs = {
        **STUBS,
        "icount": f'exec {shlex.quote(sys.executable)} -m tests.docs.ci_backend "$@"',
    }
    for name, body in stubs.items():
        record = "" if name == "icount" else f'echo "{name} $*" >> "$LOG"\n'
        (bin_dir / name).write_text(f"#!/bin/bash\n{record}{body}\n")
        (bin_dir / name).chmod(0o755)
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_", "GIT_"))}
    env = {
        **keep,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
        "LOG": str(log),
    }
    return Project(tmp_path, origin, env)


def untracked_like_ci(ws: Path) -> None:
    """What `actions/checkout` of icount beside the project leaves: a folder no commit
    of the project holds."""
    (ws / ".icount").mkdir(exist_ok=True)
    (ws / ".icount" / "pyproject.toml").write_text("[project]\nname = 'icount'\n")


# ---------------------------------------------------------------- GitHub Actions


@dataclass
class Outcome:
    ws: Path
    failed: str | None  # the name of the step that failed, None when every step passed
    code: int
    ran: list[str]
    output: str


def _expression(text: str, ctx: Mapping[str, str]) -> str:
    return re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", lambda m: ctx[m.group(1)], text)


def _condition(text: str, ctx: Mapping[str, str]) -> bool:
    m = re.fullmatch(r"github\.event_name == '(\w+)'", text.strip())
    assert m, f"a condition this test does not evaluate: {text!r}"
    return ctx["github.event_name"] == m.group(1)


def run_github(p: Project, workflow: dict[str, Any], ctx: dict[str, str], sha: str) -> Outcome:
    """One run of the workflow's job for the event in `ctx`, checked out at `sha`."""
    ((_, job),) = workflow["jobs"].items()
    ws = p.tmp / "none"
    ran: list[str] = []
    output = ""
    env = {k: _expression(str(v), ctx) for k, v in job.get("env", {}).items()}
    env |= {"GITHUB_REPOSITORY": "org/project", "GITHUB_WORKFLOW": "instruction counts"}
    for n, step in enumerate(job["steps"]):
        name = step.get("name") or step.get("uses") or step["run"]
        if "if" in step and not _condition(step["if"], ctx):
            continue
        ran.append(name)
        uses = step.get("uses", "")
        given = {k: _expression(str(v), ctx) for k, v in step.get("with", {}).items()}
        if uses == "actions/checkout@v4" and "repository" not in given:
            ws = p.clone(sha)
            env["GITHUB_STEP_SUMMARY"] = str(p.tmp / f"summary-{p.runs}.md")
        elif uses == "actions/checkout@v4":
            assert given["path"] == ".icount"
            untracked_like_ci(ws)
        elif uses == "actions/cache/restore@v4":
            keys = [k for k in p.cache if k == given["key"] or k.startswith(given["restore-keys"])]
            if keys:
                shutil.copytree(p.cache[keys[-1]], ws / given["path"])
        elif uses == "actions/cache/save@v4":
            assert given["key"] not in p.cache, "a cache entry cannot be overwritten"
            p.cache[given["key"]] = p.tmp / f"cache-{len(p.cache)}"
            shutil.copytree(ws / given["path"], p.cache[given["key"]])
        else:
            assert not uses, f"an action this test does not emulate: {uses}"
            done = p.bash(ws, _expression(step["run"], ctx), env)
            output += f"--- step {n}: {name}\n{done.stdout}{done.stderr}"
            assert "internal error" not in done.stderr, done.stderr
            if done.returncode != 0:
                return Outcome(ws, name, done.returncode, ran, output)
    return Outcome(ws, None, 0, ran, output)


def push(p: Project, workflow: dict[str, Any], sha: str) -> Outcome:
    ctx = {"github.event_name": "push", "github.run_id": str(p.runs + 1000), "github.token": "t"}
    return run_github(p, workflow, ctx, sha)


def pull_request(p: Project, workflow: dict[str, Any], head: str) -> Outcome:
    ctx = {
        "github.event_name": "pull_request",
        "github.run_id": str(p.runs + 1000),
        "github.token": "t",
        "github.base_ref": "main",
        "github.event.pull_request.head.sha": head,
        "github.event.pull_request.number": "7",
    }
    return run_github(p, workflow, ctx, head)


def filed(p: Project, key: str) -> list[tuple[str, float]]:
    """The commits and medians of the history a cache entry holds, as every reader sees it."""
    return [(e.commit, r.cells[0].summary.median) for e, r in store.load(p.cache[key])]  # type: ignore[union-attr]


@pytest.mark.slow
def test_the_github_recipe_files_every_push_and_gates_a_pull_request(project: Project) -> None:
    p = project
    workflow, _ = recipes()
    main = [p.commit(5000, f"main {i}") for i in range(2)]
    for i, sha in enumerate(main):
        done = push(p, workflow, sha)
        assert done.failed is None, done.output
        assert "Add this commit to the history" in done.ran
        assert re.search(rf"added icount-history/000{i + 1}-{sha}\.json", done.output)
        prov = json.loads((done.ws / "head.provenance.json").read_text())
        assert prov["commit"] == sha and "dirty" not in prov  # .icount/, build/ untracked
    newest = list(p.cache)[-1]
    assert filed(p, newest) == [(sha, 5000) for sha in main]

    # a pull request that runs 20% more instructions: its merge base's entry is the base
    git(p.origin, "checkout", "-q", "-b", "slower", main[-1])
    slower = p.commit(6000, "slower", branch="slower")
    done = pull_request(p, workflow, slower)
    assert done.failed == "Compare, comment, gate (exit 3 on a confirmed regression)"
    assert done.code == 3, done.output
    entry = p.cache[newest] / f"0002-{main[-1]}.json"
    assert (done.ws / "base.json").read_bytes() == entry.read_bytes()
    assert (
        "gh pr comment 7 -R org/project --edit-last --create-if-none --body-file comment.md"
        in p.calls()
    )
    assert "app" in p.comment() and "confirmed by 3 reruns" in p.comment()
    assert filed(p, list(p.cache)[-1]) == [(sha, 5000) for sha in main]  # a PR adds nothing

    # one whose merge base was never measured (its push run did not save a cache): the
    # base is measured in the job, at the merge base, and the same count passes
    git(p.origin, "checkout", "-q", "main")
    unmeasured = p.commit(5000, "main 2")
    git(p.origin, "checkout", "-q", "-b", "docs", unmeasured)
    docs_only = p.commit(5000, "docs only", branch="docs")
    done = pull_request(p, workflow, docs_only)
    assert done.failed is None, done.output
    assert json.loads((done.ws / "base.provenance.json").read_text())["commit"] == unmeasured
    assert json.loads((done.ws / "head.provenance.json").read_text())["commit"] == docs_only


# ---------------------------------------------------------------- GitLab


def _rules(job: Mapping[str, Any], variables: Mapping[str, str]) -> bool:
    for rule in job.get("rules", []):
        m = re.fullmatch(r'\$(\w+) == (?:\$(\w+)|"([^"]*)")', rule["if"].strip())
        assert m, f"a rule this test does not evaluate: {rule['if']!r}"
        other = variables.get(m.group(2), "") if m.group(2) else m.group(3)
        if variables.get(m.group(1), "") == other:
            return True
    return False


def run_gitlab(
    p: Project, pipeline: dict[str, Any], variables: dict[str, str], sha: str
) -> tuple[str, subprocess.CompletedProcess[str], Path]:
    """The one job of the pipeline whose rules take these variables, checked out at `sha`."""
    jobs = {k: v for k, v in pipeline.items() if not k.startswith(".")}
    taken = [k for k, job in jobs.items() if _rules(job, variables)]
    assert len(taken) == 1, taken
    name = taken[0]
    job = {**pipeline[jobs[name]["extends"]], **jobs[name]}
    ws = p.clone(sha)
    untracked_like_ci(ws)
    cache = job["cache"]
    folder = cache["paths"][0].rstrip("/")
    if cache["key"] in p.cache:
        shutil.copytree(p.cache[cache["key"]], ws / folder)
    env = {**variables, **{k: str(v) for k, v in job.get("variables", {}).items()}}
    done = p.bash(ws, "\n".join([*job["before_script"], *job["script"]]), env)
    assert "internal error" not in done.stderr, done.stderr
    if done.returncode == 0 and cache.get("policy", "pull-push") == "pull-push":
        shutil.rmtree(p.cache.get(cache["key"], p.tmp / "none"), ignore_errors=True)
        p.cache[cache["key"]] = p.tmp / f"gitlab-cache-{p.runs}"
        shutil.copytree(ws / folder, p.cache[cache["key"]])
    return name, done, ws


@pytest.mark.slow
def test_the_gitlab_recipe_files_every_main_pipeline_and_gates_a_merge_request(
    project: Project,
) -> None:
    p = project
    _, pipeline = recipes()
    branch = {"CI_DEFAULT_BRANCH": "main", "CI_COMMIT_BRANCH": "main"}
    main = [p.commit(5000, f"main {i}") for i in range(2)]
    for sha in main:
        name, done, ws = run_gitlab(p, pipeline, {**branch, "CI_PIPELINE_SOURCE": "push"}, sha)
        assert name == "icount-main" and done.returncode == 0, done.stdout + done.stderr
        assert json.loads((ws / "head.provenance.json").read_text())["commit"] == sha
    assert filed(p, "icount-history") == [(sha, 5000) for sha in main]

    git(p.origin, "checkout", "-q", "-b", "slower", main[-1])
    slower = p.commit(6000, "slower", branch="slower")
    mr = {
        "CI_DEFAULT_BRANCH": "main",
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
        "CI_MERGE_REQUEST_IID": "7",
        "CI_API_V4_URL": "https://gitlab.example.org/api/v4",
        "CI_PROJECT_ID": "42",
        "ICOUNT_NOTE_TOKEN": "t",
    }
    name, done, ws = run_gitlab(p, pipeline, mr, slower)
    assert name == "icount-mr" and done.returncode == 3, done.stdout + done.stderr
    entry = p.cache["icount-history"] / f"0002-{main[-1]}.json"
    assert (ws / "base.json").read_bytes() == entry.read_bytes()
    assert (ws / "junit.xml").read_text().count("<failure") == 1
    assert any(c.startswith("curl --fail --request POST") for c in p.calls())
    assert "confirmed by 3 reruns" in p.comment()
    assert filed(p, "icount-history") == [(sha, 5000) for sha in main]
