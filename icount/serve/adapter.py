"""Serve targets: the adapter TOML model, loading, availability, building and answer checks.

An adapter is a folder `adapters/<name>/` holding `adapter.toml` (and any sources or
configs it needs). The file says how to build the target (optional), how to start it
(argv with `{port}`, `{build}`, `{src}`, `{python}` placeholders), its environment, how
to tell it is ready, which binary's size to report, and the paths to measure with the answer
each must give. Schema (every key but `start` and `paths` optional):

    name = "c-epoll"                    # default: the folder's name
    requires = ["gcc"]                  # programs that must be on PATH
    build = [["gcc", "-O2", "-o", "{build}/c-epoll", "{src}/server.c"]]
    start = ["{build}/c-epoll", "--port", "{port}"]
    binary = "{build}/c-epoll"          # a path, or a program name looked up on PATH
    warmup_hint = 10000                 # a larger default warm-up (JIT servers)
    requests = 10000                    # requests per window (servers with periodic work)
    by_default = false                  # measured only when named, not by a bare
                                        # `icount serve` (a target whose cells take minutes)
    cwd = "{src}/app"                   # where it starts (relative: to the adapter's
                                        # folder); default: an empty work dir
    [env]
    PYTHONHASHSEED = "0"
    [ready]
    target = "/plaintext"               # default: the first path's target
    timeout_s = 60                      # native seconds x ~50 under callgrind
    status = 200                        # default: the expected status of the path with
                                        # this target, else any status below 500
    [[paths]]
    name = "plaintext"
    target = "/plaintext"
    method = "GET"
    request_headers = { Accept = "*/*" }
    [paths.expect]
    status = 200
    body = "Hello, World!"              # exact bytes (UTF-8), or
    json = { message = "Hello, World!" }  # JSON equality
    headers = { content-type = "text/plain" }  # as a media type: parameters optional

`{src}` is the adapter's folder, `{build}` the build folder, `{port}` the port chosen
for one server process, `{python}` the interpreter running icount (a real binary: a
`python3` found on PATH may be a launcher script). `{render:FILE}` (start argv only)
names a copy of the adapter's FILE written into the build folder with the same
placeholders replaced: servers such as
nginx read their port from a config file, and the started argv must be the server
itself (no shell in between, or valgrind would measure the shell).
"""

from __future__ import annotations

import json as jsonlib
import os
import re
import shutil
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from icount import environment, procs
from icount.errors import ParseError, RunFailedError
from icount.results.files import read_bounded

ADAPTERS_ENV = "ICOUNT_ADAPTERS"
ADAPTER_FILE = "adapter.toml"
BUILD_TIMEOUT_S = 600.0
MAX_ADAPTER_BYTES = 1024 * 1024  # an adapter file is a page of TOML
MAX_TEMPLATE_BYTES = 16 * 1024 * 1024  # a server's config file

_PLACEHOLDER = re.compile(r"\{([A-Za-z_]+)(?::([^{}]*))?\}")
_ALLOWED = {"port", "build", "src", "render", "python"}
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True)
class Expect:
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    body: bytes | None = None
    json: Any = None


@dataclass(frozen=True)
class PathSpec:
    """One path of a target: the request to send (`target` in the TOML) and the answer."""

    name: str
    request_target: str  # the request-target of the request line: "/plaintext"
    expect: Expect
    http_method: str = "GET"
    request_headers: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    # a cold-start cell (--cold-start): the instructions from exec to the first correct
    # answer to this request, not per request
    cold_start: bool = False


@dataclass(frozen=True)
class Adapter:
    name: str
    directory: Path
    build: tuple[tuple[str, ...], ...]
    start: tuple[str, ...]
    env: Mapping[str, str]
    ready_target: str
    ready_timeout_s: float
    binary: str | None
    paths: tuple[PathSpec, ...]
    requires: tuple[str, ...] = ()
    warmup_hint: int | None = None
    requests: int | None = None  # requests per window, where the backend default is short
    # the status that says the server is ready; None: any below 500 (a proxy answers 502
    # or 503 until its upstream is up)
    ready_status: int | None = None
    # the server's working directory ({src}, {build}; relative to `directory`); None: an
    # empty work dir of a fixed-length name (the path is in its memory, so in its count)
    cwd: str | None = None
    by_default: bool = True  # False: left out of `icount serve` with no target


# ---------------------------------------------------------------------------- loading


class _Schema:
    """Typed access to one TOML table; every complaint names the key and the file."""

    def __init__(self, table: Mapping[str, Any], where: str, source: str) -> None:
        self.table = table
        self.where = where
        self.source = source

    def fail(self, msg: str) -> ParseError:
        return ParseError(f"{self.where}{msg}", source=self.source)

    def check_keys(self, allowed: set[str]) -> None:
        unknown = sorted(set(self.table) - allowed)
        if unknown:
            raise self.fail(f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
        if key not in self.table:
            return default
        value = self.table[key]
        # bool is an int in Python; a count or status given as `true` is a mistake.
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise self.fail(f"{key!r} must be {_kind_name(kind)}, not a boolean")
        if not isinstance(value, kind):
            raise self.fail(f"{key!r} must be {_kind_name(kind)}, not {type(value).__name__}")
        return value

    def require(self, key: str, kind: type | tuple[type, ...]) -> Any:
        if key not in self.table:
            raise self.fail(f"missing required key {key!r}")
        return self.get(key, kind)

    def argv(self, key: str, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not value or not all(isinstance(a, str) for a in value):
            raise self.fail(f"{key!r} must be a non-empty list of strings (an argv)")
        return tuple(value)

    def str_table(self, key: str) -> Mapping[str, str]:
        table = self.get(key, dict, {})
        for k, v in table.items():
            if not isinstance(v, str):
                raise self.fail(f"{key}.{k} must be a string, not {type(v).__name__}")
        return MappingProxyType(dict(table))

    def sub(self, key: str) -> _Schema:
        return _Schema(self.get(key, dict, {}), f"{self.where}{key}: ", self.source)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", float: "a number", list: "a list",
             dict: "a table", bool: "a boolean"}  # fmt: skip
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _check_placeholders(s: _Schema, key: str, args: Sequence[str], allowed: set[str]) -> None:
    for arg in args:
        for m in _PLACEHOLDER.finditer(arg):
            if m.group(1) not in allowed:
                raise s.fail(
                    f"{key!r} uses placeholder {m.group(0)!r}; allowed here: "
                    + ", ".join("{" + a + "}" for a in sorted(allowed))
                )


def _load_expect(s: _Schema) -> Expect:
    s.check_keys({"status", "headers", "body", "json"})
    status = s.get("status", int, 200)
    if not 100 <= status <= 599:
        raise s.fail(f"'status' {status} is not an HTTP status code")
    headers = s.str_table("headers")
    for name in headers:
        if not _HEADER_NAME.fullmatch(name):
            raise s.fail(f"header name {name!r} is not a valid HTTP header name")
    body_text = s.get("body", str)
    if body_text is not None and "json" in s.table:
        raise s.fail("give either 'body' or 'json', not both")
    return Expect(
        status=status,
        headers=MappingProxyType({k.lower(): v for k, v in headers.items()}),
        body=body_text.encode() if body_text is not None else None,
        json=s.table.get("json"),
    )


def _load_path(s: _Schema, names: set[str]) -> PathSpec:
    s.check_keys({"name", "target", "method", "request_headers", "expect"})
    name = s.require("name", str)
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise s.fail(f"path name {name!r} may use only letters, digits, '_', '.', '-'")
    if name in names:
        raise s.fail(f"duplicate path name {name!r}")
    names.add(name)
    target = s.require("target", str)
    if not target.startswith("/") or any(c.isspace() for c in target):
        raise s.fail(f"target {target!r} must start with '/' and contain no spaces")
    method = s.get("method", str, "GET")
    if not re.fullmatch(r"[A-Z]+", method):
        raise s.fail(f"method {method!r} must be an upper-case HTTP method")
    headers = s.str_table("request_headers")
    for k, v in headers.items():
        if not _HEADER_NAME.fullmatch(k) or "\r" in v or "\n" in v:
            raise s.fail(f"request header {k!r} is not a valid header line")
    if k_host := next((k for k in headers if k.lower() == "host"), None):
        raise s.fail(f"request header {k_host!r}: Host is always sent by the client")
    return PathSpec(name, target, _load_expect(s.sub("expect")), method, headers)


def load_adapter(path: Path) -> Adapter:
    """Read and validate an adapter TOML; ParseError(source=path) on any problem."""
    source = str(path)
    raw = read_bounded(path, MAX_ADAPTER_BYTES, ParseError, "an adapter file")
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ParseError(f"not UTF-8 text (byte {e.start})", source=source) from e
    except tomllib.TOMLDecodeError as e:
        raise ParseError(f"invalid TOML: {e}", source=source) from e
    return adapter_from_table(doc, path.parent.resolve(), source)


def adapter_from_table(doc: dict[str, Any], directory: Path, source: str) -> Adapter:
    """Validate an adapter's table (from a TOML file, or built from `--cmd` flags)."""
    s = _Schema(doc, "", source)
    s.check_keys({"name", "requires", "build", "start", "binary", "warmup_hint", "requests",
                  "env", "ready", "paths", "cwd", "by_default"})  # fmt: skip
    name = s.get("name", str, directory.name)
    if not re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
        raise s.fail(f"adapter name {name!r} may use only letters, digits, '_', '.', '+', '-'")
    build_raw = s.get("build", list, [])
    build = tuple(s.argv(f"build[{i}]", argv) for i, argv in enumerate(build_raw))
    for i, argv in enumerate(build):
        _check_placeholders(s, f"build[{i}]", argv, {"build", "src", "python"})
    start = s.argv("start", s.require("start", list))
    _check_placeholders(s, "start", start, _ALLOWED)
    for arg in start:
        for m in _PLACEHOLDER.finditer(arg):
            if m.group(1) != "render":
                continue
            file = m.group(2) or ""
            if adapter_file(directory, file) is None:
                raise s.fail(f"'start' renders {file!r}, which is outside the adapter's folder")
            if not (directory / file).is_file():
                raise s.fail(f"'start' renders {file!r}, which is not a file of the adapter")
    requires = s.get("requires", list, [])
    if not all(isinstance(r, str) and r for r in requires):
        raise s.fail("'requires' must be a list of program names")
    binary = s.get("binary", str)
    if binary is not None:
        _check_placeholders(s, "binary", [binary], {"build", "src", "python"})
    warmup_hint = s.get("warmup_hint", int)
    if warmup_hint is not None and warmup_hint < 0:
        raise s.fail("'warmup_hint' must be >= 0")
    requests = s.get("requests", int)
    if requests is not None and not 1 <= requests <= 10_000_000:
        raise s.fail("'requests' (per window) must be between 1 and 10,000,000")
    by_default = s.get("by_default", bool, True)
    env = s.str_table("env")
    _check_placeholders(s, "env", list(env.values()), {"build", "src", "port"})
    cwd = s.get("cwd", str)
    if cwd is not None:
        if not cwd or "\0" in cwd:
            raise s.fail("'cwd' must name a directory")
        _check_placeholders(s, "cwd", [cwd], {"build", "src"})

    paths_raw = s.require("paths", list)
    if not paths_raw:
        raise s.fail("'paths' must list at least one path")
    names: set[str] = set()
    paths = []
    for i, p in enumerate(paths_raw):
        if not isinstance(p, dict):
            raise s.fail(f"paths[{i}] must be a table")
        paths.append(_load_path(_Schema(p, f"paths[{i}]: ", source), names))

    ready = s.sub("ready")
    ready.check_keys({"target", "timeout_s", "status"})
    ready_target = ready.get("target", str, paths[0].request_target)
    if not ready_target.startswith("/"):
        raise ready.fail(f"target {ready_target!r} must start with '/'")
    same = next((p.expect.status for p in paths if p.request_target == ready_target), None)
    ready_status = ready.get("status", int, same)
    if ready_status is not None and not 100 <= ready_status <= 599:
        raise ready.fail(f"'status' {ready_status} is not an HTTP status code")
    timeout = ready.get("timeout_s", (int, float), 30.0)
    if not 0 < timeout <= 3600:
        raise ready.fail("'timeout_s' must be between 0 and 3600 seconds")
    return Adapter(
        name=name,
        directory=directory,
        build=build,
        start=start,
        env=env,
        ready_target=ready_target,
        ready_timeout_s=float(timeout),
        binary=binary,
        paths=tuple(paths),
        requires=tuple(requires),
        warmup_hint=warmup_hint,
        requests=requests,
        ready_status=ready_status,
        cwd=cwd,
        by_default=by_default,
    )


def adapter_file(directory: Path, name: str) -> Path | None:
    """`name` in the adapter's folder, or None when it leads outside (`../../etc/shadow`,
    an absolute path, a link out): a shared adapter must not read, and copy into the
    artifacts, files of the machine that runs it."""
    path = (directory / name).resolve()
    return path if path.is_relative_to(directory.resolve()) else None


def adapters_dir() -> Path:
    """The bundled adapters' folder (`adapters/` of the checkout), or $ICOUNT_ADAPTERS."""
    override = os.environ.get(ADAPTERS_ENV)
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "adapters"


def bundled_adapter_paths() -> list[Path]:
    return sorted(adapters_dir().glob(f"*/{ADAPTER_FILE}"))


# ------------------------------------------------------------------ running and building


def unavailable_reason(adapter: Adapter) -> str | None:
    """None when every required program is on PATH, else which one is missing."""
    missing = [prog for prog in adapter.requires if shutil.which(prog) is None]
    if not missing:
        return None
    verb = "is" if len(missing) == 1 else "are"
    return f"{', '.join(missing)} {verb} not installed (not found on PATH)"


def _substitute(arg: str, values: Mapping[str, str], render: Any = None) -> str:
    def one(m: re.Match[str]) -> str:
        key, param = m.group(1), m.group(2)
        if key == "render" and render is not None:
            return str(render(param))
        if key in values and param is None:
            return values[key]
        raise ParseError(f"placeholder {m.group(0)!r} cannot be used here")

    return _PLACEHOLDER.sub(one, arg)


def python_executable() -> str:
    """The interpreter running icount, with its virtual environment: `sys.executable`
    as it is, since a venv's `bin/python` is a symlink whose path is how Python finds
    the venv (resolving it would start the base interpreter without icount's packages).
    `sys.executable` is never a launcher script (pyenv's `python3` shim execs the real
    interpreter, which is what reports itself here), so valgrind follows it."""
    return sys.executable


def _values(adapter: Adapter, build_dir: Path, port: int | None) -> dict[str, str]:
    values = {
        "build": str(build_dir),
        "src": str(adapter.directory),
        "python": python_executable(),
    }
    if port is not None:
        values["port"] = str(port)
    return values


def expand(argv: Sequence[str], *, port: int, build_dir: Path, adapter: Adapter) -> list[str]:
    """Replace placeholders in an argv; `{render:FILE}` writes FILE into `build_dir`."""
    values = _values(adapter, build_dir, port)

    def render(name: str) -> Path:
        src = adapter_file(adapter.directory, name)  # checked on loading; the file may move
        if src is None:
            raise ParseError(
                f"{{render:{name}}} is outside the adapter's folder {adapter.directory}"
            )
        data = read_bounded(src, MAX_TEMPLATE_BYTES, ParseError, "a file to render")
        try:
            text = _substitute(data.decode("utf-8"), values)
        except UnicodeDecodeError as e:
            raise ParseError(f"not UTF-8 text (byte {e.start})", source=str(src)) from None
        except ParseError as e:
            raise ParseError(e.message, source=str(src)) from None
        out = build_dir / Path(name).name
        build_dir.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(out.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(out)
        return out

    return [_substitute(arg, values, render) for arg in argv]


def expand_env(adapter: Adapter, *, port: int, build_dir: Path) -> dict[str, str]:
    """The adapter's env values with placeholders replaced (to add to a base environment)."""
    values = _values(adapter, build_dir, port)
    return {k: _substitute(v, values) for k, v in adapter.env.items()}


def working_dir(adapter: Adapter, build_dir: Path) -> Path | None:
    """The directory the adapter starts its server in (placeholders expanded, relative
    to the adapter's folder), or None for the default, a fresh empty work dir."""
    if adapter.cwd is None:
        return None
    return adapter.directory / _substitute(adapter.cwd, _values(adapter, build_dir, None))


def binary_path(adapter: Adapter, build_dir: Path) -> Path | None:
    """The file whose size to report: placeholders expanded, bare names found on PATH."""
    if adapter.binary is None:
        return None
    expanded = _substitute(adapter.binary, _values(adapter, build_dir, None))
    if "/" not in expanded:
        found = shutil.which(expanded)
        return Path(found).resolve() if found else None
    path = Path(expanded)
    return path if path.is_file() else None


def build_adapter(adapter: Adapter, build_dir: Path) -> None:
    """Run the build steps in the adapter's folder; RunFailedError with the tool's last lines."""
    build_dir.mkdir(parents=True, exist_ok=True)
    for argv in adapter.build:
        cmd = expand(argv, port=0, build_dir=build_dir, adapter=adapter)
        problem = environment.exec_problem(cmd, {})
        if problem is not None:  # its cells are invalid with it; the session goes on
            raise RunFailedError(f"{adapter.name}: build step: {problem}")
        done = procs.run(cmd, cwd=adapter.directory, timeout=BUILD_TIMEOUT_S)
        if done.ok:
            continue
        shown = " ".join(cmd)
        if done.timed_out:
            raise RunFailedError(f"{adapter.name}: build step timed out: {shown}")
        text = (done.stderr or done.stdout).decode("utf-8", "replace").strip().splitlines()
        tail = " | ".join(line.strip() for line in text[-3:]) or "(no output)"
        raise RunFailedError(
            f"{adapter.name}: build step {procs.describe_exit(done.returncode)}: {shown}: {tail}"
        )


# ------------------------------------------------------------------------ answer checks

_SHOWN = 24  # bytes of context shown around a body difference


def _snippet(data: bytes, at: int) -> bytes:
    lo = max(0, at - _SHOWN // 2)
    return data[lo : lo + _SHOWN]


def _short(value: Any, limit: int = 80) -> str:
    text = jsonlib.dumps(value, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 3] + "..."


# Headers whose value is a media type: servers add parameters unasked (aiohttp and
# Express send `text/plain; charset=utf-8`), so they are compared as media types.
MEDIA_TYPE_HEADERS = frozenset({"content-type"})
_TOKEN = _HEADER_NAME.pattern  # a header name is a token, as type, subtype and names are
_MEDIA_TYPE = re.compile(rf"\s*({_TOKEN})/({_TOKEN})\s*((?:;.*)?)", re.DOTALL)
_PARAMETER = re.compile(rf'\s*;\s*(?:({_TOKEN})\s*=\s*({_TOKEN}|"(?:[^"\\]|\\.)*")\s*)?')
# parameter values compared without case (RFC 9110 8.3.1: charset values are case-insensitive)
_CASELESS_VALUES = frozenset({"charset"})


def parse_media_type(text: str) -> tuple[str, dict[str, str]] | None:
    """('text/plain', {'charset': 'utf-8'}) from 'Text/Plain; charset="UTF-8"': type,
    subtype and parameter names lower-cased, quoted values unquoted, charset values
    lower-cased; None when `text` is not a media type."""
    m = _MEDIA_TYPE.fullmatch(text)
    if m is None:
        return None
    params: dict[str, str] = {}
    rest, at = m.group(3), 0
    while at < len(rest):
        p = _PARAMETER.match(rest, at)
        if p is None or p.end() == at:
            return None
        at = p.end()
        if p.group(1) is None:  # an empty parameter (`text/plain;`), which RFC 9110 allows
            continue
        key, value = p.group(1).lower(), p.group(2)
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        params[key] = value.lower() if key in _CASELESS_VALUES else value
    return f"{m.group(1)}/{m.group(2)}".lower(), params


def media_type_difference(got: str, want: str) -> str | None:
    """None when media type `got` is `want`'s type/subtype (case aside) with every
    parameter `want` names (others may be added), else what was expected, said so."""
    expected = parse_media_type(want)
    if expected is None:  # the adapter's value is no media type: compare it as text
        return None if got == want else f"expected {want!r}"
    kind, params = expected
    shown = kind + "".join(f"; {k}={v}" for k, v in params.items())
    rule = "other parameters allowed" if params else "with any parameters"
    parsed = parse_media_type(got)
    if parsed is None or parsed[0] != kind:
        return f"expected media type {shown} ({rule})"
    for key, value in params.items():
        if parsed[1].get(key) != value:
            return f"expected media type {shown} ({rule})"
    return None


def check_response(
    expect: Expect, status: int, headers: Mapping[str, str], body: bytes
) -> str | None:
    """None when the answer matches `expect`, else one line saying the first difference."""
    if status != expect.status:
        return f"status {status}, expected {expect.status}"
    if expect.headers:
        lowered = {k.lower(): v for k, v in headers.items()}
        for name, want in expect.headers.items():
            got = lowered.get(name)
            if got is None:
                return f"header {name} missing, expected {want!r}"
            if name in MEDIA_TYPE_HEADERS:
                diff = media_type_difference(got, want)
                if diff is not None:
                    return f"header {name} is {got!r}, {diff}"
            elif got != want:
                return f"header {name} is {got!r}, expected {want!r}"
    if expect.body is not None:
        want_body = expect.body
        if body == want_body:
            return None
        at = next(
            (i for i, (a, b) in enumerate(zip(body, want_body, strict=False)) if a != b),
            min(len(body), len(want_body)),
        )
        return (
            f"body differs at byte {at} ({len(body)} bytes, expected {len(want_body)}): "
            f"got {_snippet(body, at)!r} expected {_snippet(want_body, at)!r}"
        )
    if expect.json is not None:
        try:
            got_json = jsonlib.loads(body)
        except (ValueError, UnicodeDecodeError):
            return f"body is not JSON: {body[:_SHOWN]!r}"
        if got_json != expect.json:
            return f"JSON body differs: got {_short(got_json)} expected {_short(expect.json)}"
    return None
