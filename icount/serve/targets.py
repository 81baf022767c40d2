"""What `icount serve` measures: bundled or named adapters, or a `--cmd` server, and
what the table shows beside each target's counts (its binary's size, what built it).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icount import build_label, environment, procs
from icount.errors import ParseError, ToolMissingError, UsageError
from icount.serve import adapter as adapter_mod
from icount.serve.adapter import Adapter, PathSpec
from icount.serve.server import Target
from icount.session import options
from icount.text import printable


@dataclass(frozen=True)
class CmdServer:
    """A server given on the command line (`--cmd` and the flags that describe it)."""

    cmd: str
    name: str | None = None
    paths: tuple[str, ...] = ()  # NAME=/TARGET
    status: int = 200
    body: str | None = None
    json_text: str | None = None
    headers: tuple[str, ...] = ()  # 'Name: value'
    ready_timeout: float = options.READY_TIMEOUT_S
    env: tuple[str, ...] = ()  # KEY=VALUE
    # one path's own expected answer, NAME=BODY / NAME=JSON, over --expect-body/-json
    path_bodies: tuple[str, ...] = ()
    path_jsons: tuple[str, ...] = ()
    cwd: str | None = None  # --cwd, as given (relative: to where icount started)

    def to_json(self) -> dict[str, Any]:
        return {
            "cmd": self.cmd,
            "name": self.name,
            "paths": list(self.paths),
            "status": self.status,
            "body": self.body,
            "json": self.json_text,
            "headers": list(self.headers),
            "ready_timeout": self.ready_timeout,
            "env": list(self.env),
            "path_bodies": list(self.path_bodies),
            "path_jsons": list(self.path_jsons),
            # only when given: plans recorded before --cwd existed read the same
            **({"cwd": self.cwd} if self.cwd is not None else {}),
        }


@dataclass(frozen=True)
class Chosen:
    adapters: tuple[Adapter, ...]
    skipped: tuple[tuple[str, str], ...] = field(default=())  # (name, why it cannot run here)


def choose_targets(names: Sequence[str], cmd: CmdServer | None) -> Chosen:
    """The adapters to measure: `--cmd`'s, the named ones, or every bundled one that
    can run here (naming the ones that cannot, and why)."""
    if cmd is not None:
        if names:
            raise UsageError("give either TARGETS or --cmd, not both")
        return Chosen((cmd_adapter(cmd),))
    bundled: dict[str, Adapter] = {}
    for p in adapter_mod.bundled_adapter_paths():
        a = adapter_mod.load_adapter(p)
        bundled[a.name] = a
    if not names:
        chosen, skipped = [], []
        for a in bundled.values():
            why = adapter_mod.unavailable_reason(a)
            if why is None and not a.by_default:
                why = f"measured only when named (icount serve {a.name})"
            if why is None:
                chosen.append(a)
            else:
                skipped.append((a.name, why))
        if not chosen:
            whys = "; ".join(f"{name}: {why}" for name, why in skipped) or "no bundled targets"
            raise ToolMissingError(f"no target can run here ({whys})")
        return Chosen(tuple(chosen), tuple(skipped))
    picked: list[Adapter] = []
    for n in names:
        p = Path(n)
        if p.is_dir():
            p = p / adapter_mod.ADAPTER_FILE
        if n in bundled and not p.exists():
            a = bundled[n]
        elif p.exists():
            a = adapter_mod.load_adapter(p)
        else:
            known = ", ".join(sorted(bundled)) or "none"
            raise UsageError(
                f"no adapter {n!r}: not a file and not a bundled target ({known})",
                hint=f"give your own server's adapter.toml, or the folder holding it; "
                f"{adapter_mod.ADAPTERS_ENV}=DIR makes DIR's adapters the bundled ones",
            )
        why = adapter_mod.unavailable_reason(a)
        if why is not None:
            raise ToolMissingError(f"{a.name} cannot run here: {why}", program=a.name)
        if any(c.name == a.name for c in picked):
            raise UsageError(f"target {a.name!r} given twice")
        picked.append(a)
    return Chosen(tuple(picked))


@dataclass(frozen=True)
class PathChoice:
    """`--path NAME` or `--path TARGET:NAME` with adapter targets: a path to measure of
    every target, or of the target of that name; a target's other paths are left out.
    Neither a path's nor an adapter's name can hold ':' or '=' (adapter.py), so the
    forms cannot be mistaken for each other nor for --cmd's NAME=/TARGET."""

    name: str
    target: str | None = None  # None: every target

    @classmethod
    def parse(cls, text: str) -> PathChoice:
        target, sep, name = text.rpartition(":")
        if not name or (sep and not target) or "=" in text:
            raise UsageError(
                f"--path takes a path's NAME or TARGET:NAME, got {printable(text)!r}",
                hint="NAME=/TARGET describes a --cmd server's path",
            )
        return cls(name, target if sep else None)

    def __str__(self) -> str:
        return self.name if self.target is None else f"{self.target}:{self.name}"

    @classmethod
    def from_json(cls, value: Any) -> PathChoice:
        if not isinstance(value, str):
            raise ValueError(value)
        try:
            return cls.parse(value)
        except UsageError:
            raise ValueError(value) from None


def selected_paths(adapter: Adapter, only: Sequence[PathChoice]) -> tuple[PathSpec, ...]:
    """The paths of `adapter` that `only` chooses, in the adapter's order (a full
    session's): every path where no choice applies to it."""
    names = {c.name for c in only if c.target in (None, adapter.name)}
    if not names:
        return adapter.paths
    return tuple(p for p in adapter.paths if p.name in names)


def check_paths(adapters: Sequence[Adapter], only: Sequence[PathChoice]) -> None:
    """Refuse a choice naming a path a target it applies to lacks, or no target."""
    by_name = {a.name: a for a in adapters}
    for c in only:
        if c.target is not None and c.target not in by_name:
            raise UsageError(
                f"--path {printable(str(c))}: no target {printable(c.target)!r} is measured",
                hint=f"targets: {', '.join(by_name)}",
            )
        for a in adapters if c.target is None else (by_name[c.target],):
            names = [p.name for p in a.paths]
            if c.name not in names:
                raise UsageError(
                    f"--path {printable(str(c))}: {a.name} has no path {printable(c.name)!r}",
                    hint=f"its paths: {', '.join(names)}",
                )


def cmd_adapter(cmd: CmdServer) -> Adapter:
    """The adapter `--cmd` and its flags describe, checked like an adapter.toml."""
    try:
        argv = shlex.split(cmd.cmd)
    except ValueError as e:
        raise UsageError(f"--cmd: {e}") from None
    if not argv or not any("{port}" in a for a in argv):
        raise UsageError("--cmd needs a command line with a {port} placeholder")
    expect: dict[str, Any] = {"status": cmd.status}
    if cmd.body is not None and cmd.json_text is not None:
        raise UsageError("give either --expect-body or --expect-json, not both")
    if cmd.body is not None:
        expect["body"] = cmd.body
    if cmd.json_text is not None:
        try:
            expect["json"] = json.loads(cmd.json_text)
        except ValueError as e:
            raise UsageError(f"--expect-json is not JSON: {e}") from None
    headers: dict[str, str] = {}
    for h in cmd.headers:
        k, sep, v = h.partition(":")
        if not sep or not k.strip():
            raise UsageError(f"--expect-header takes 'Name: value', got {h!r}")
        headers[k.strip()] = v.strip()
    expect["headers"] = headers
    own = _own_answers(cmd)
    paths = []
    for item in cmd.paths or ("root=/",):
        label, sep, target = item.partition("=")
        if not sep or not label or not target.startswith("/"):
            raise UsageError(f"--path takes NAME=/TARGET, got {item!r}")
        answer = own.pop(label, None)
        if answer is None:
            paths.append({"name": label, "target": target, "expect": expect})
        else:  # its own body replaces --expect-body/--expect-json; status and headers stay
            common = {k: v for k, v in expect.items() if k not in ("body", "json")}
            paths.append({"name": label, "target": target, "expect": {**common, **answer}})
    if own:
        raise UsageError(
            f"--path-body/--path-json name {sorted(own)[0]!r}, which no --path names",
            hint="give --path NAME=/TARGET for it",
        )
    # Servers run in a fresh directory: find the program and file arguments from here,
    # and fail now (exit 4) for a program that is not there, not once per cell.
    argv = [procs.resolve_command(argv[0]), *environment.absolute_file_args(argv[1:], Path.cwd())]
    table = {
        "name": cmd.name or Path(argv[0]).name,
        "start": argv,
        "binary": argv[0],
        "env": environment.parse_env_assignments(cmd.env),
        "ready": {"target": paths[0]["target"], "timeout_s": cmd.ready_timeout},
        "paths": paths,
        **({"cwd": _cmd_cwd(cmd.cwd)} if cmd.cwd is not None else {}),
    }
    try:
        return adapter_mod.adapter_from_table(table, Path.cwd(), "--cmd")
    except ParseError as e:  # the same rules as an adapter.toml, reported as flags
        raise UsageError(str(e)) from None


def _cmd_cwd(given: str) -> str:
    """--cwd DIR as an absolute path (relative to where icount started), checked now:
    a directory that is not there fails the session, not each of its cells."""
    path = Path(given).absolute()
    if not path.is_dir():
        raise UsageError(f"--cwd {given}: not a directory")
    return str(path)


def _own_answers(cmd: CmdServer) -> dict[str, dict[str, Any]]:
    """--path-body NAME=BODY and --path-json NAME=JSON: each path's own expected body."""
    own: dict[str, dict[str, Any]] = {}
    for flag, items in (("--path-body", cmd.path_bodies), ("--path-json", cmd.path_jsons)):
        for item in items:
            label, sep, value = item.partition("=")
            if not sep or not label:
                raise UsageError(f"{flag} takes NAME=VALUE, got {item!r}")
            if label in own:
                raise UsageError(f"path {label!r} is given its own answer twice")
            if flag == "--path-body":
                own[label] = {"body": value}
            else:
                try:
                    own[label] = {"json": json.loads(value)}
                except ValueError as e:
                    raise UsageError(f"--path-json {label}: not JSON: {e}") from None
    return own


def shown_beside(target: Target) -> dict[str, Any]:
    """What the table shows beside the counts of every cell of a built target, read
    once for the session: its binary's sizes and the label of what built it, which
    compare checks (build_label.py)."""
    shown = binary_sizes(target)
    binary = adapter_mod.binary_path(target.adapter, target.build_dir)
    label = build_label.of_server(target.adapter.start, binary)
    if label is not None:
        shown["build"] = label
    return shown


def binary_sizes(target: Target) -> dict[str, Any]:
    """The target binary's sizes for the table: `icount size`'s figures for an ELF or
    Mach-O file (file bytes and executable bytes), the file's size for anything else
    (a script). A launcher linked to its interpreter's library (a shared-libpython
    Python) counts that library too: `binary` names both files, `binary_library` is
    the library's file name (size/loader.py)."""
    from icount.errors import IcountError
    from icount.size import summarize
    from icount.size.loader import runtime_library

    p = adapter_mod.binary_path(target.adapter, target.build_dir)
    if p is None:
        return {}
    extra: dict[str, Any] = {"binary": p.name, "binary_bytes": p.stat().st_size}
    try:
        sizes = summarize(p)
    except IcountError:
        return extra  # not an executable image: the file size is all there is
    extra["binary_bytes"] = sizes["file_bytes"]
    extra["binary_text_bytes"] = sizes["text_bytes"]
    lib = runtime_library(p)
    if lib is not None:
        try:
            more = summarize(lib)
        except IcountError:
            return extra
        extra["binary"] = f"{p.name} + {lib.name}"
        extra["binary_library"] = lib.name  # not its host's path: results move between hosts
        extra["binary_bytes"] += more["file_bytes"]
        extra["binary_text_bytes"] += more["text_bytes"]
    return extra
