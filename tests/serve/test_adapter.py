"""Adapter TOML: loading, schema errors, placeholders, availability, builds."""

from __future__ import annotations

from pathlib import Path

import pytest

from icount.errors import ParseError, RunFailedError
from icount.serve import adapter as adapters
from icount.serve.adapter import (
    Adapter,
    bundled_adapter_paths,
    expand,
    load_adapter,
    unavailable_reason,
)

GOOD = """
requires = ["sh"]
start = ["{build}/srv", "--port", "{port}", "--root", "{src}"]
binary = "{build}/srv"
warmup_hint = 500
[env]
SEED = "0"
[ready]
target = "/health"
timeout_s = 12.5
[[paths]]
name = "plaintext"
target = "/plaintext"
request_headers = { Accept = "*/*" }
[paths.expect]
status = 200
body = "Hello, World!"
headers = { Content-Type = "text/plain" }
[[paths]]
name = "json"
target = "/json"
method = "POST"
[paths.expect]
json = { message = "Hello, World!", n = [1, 2] }
"""


def write(tmp_path: Path, text: str, name: str = "demo") -> Path:
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    path = folder / "adapter.toml"
    path.write_text(text)
    return path


def test_good_adapter_loads_every_field(tmp_path: Path) -> None:
    a = load_adapter(write(tmp_path, GOOD))
    assert a.name == "demo"  # the folder's name when `name` is absent
    assert a.directory == (tmp_path / "demo").resolve()
    assert a.build == ()
    assert a.start == ("{build}/srv", "--port", "{port}", "--root", "{src}")
    assert dict(a.env) == {"SEED": "0"}
    assert (a.ready_target, a.ready_timeout_s) == ("/health", 12.5)
    assert a.binary == "{build}/srv"
    assert a.requires == ("sh",)
    assert a.warmup_hint == 500
    plain, js = a.paths
    assert (plain.name, plain.request_target, plain.http_method) == (
        "plaintext",
        "/plaintext",
        "GET",
    )
    assert dict(plain.request_headers) == {"Accept": "*/*"}
    assert plain.expect.status == 200
    assert plain.expect.body == b"Hello, World!"
    assert dict(plain.expect.headers) == {"content-type": "text/plain"}  # names lower-cased
    assert (js.http_method, js.expect.status, js.expect.body) == ("POST", 200, None)
    assert js.expect.json == {"message": "Hello, World!", "n": [1, 2]}


def test_ready_defaults_to_first_path(tmp_path: Path) -> None:
    text = 'start = ["x", "{port}"]\n[[paths]]\nname = "a"\ntarget = "/a"\n'
    a = load_adapter(write(tmp_path, text))
    assert (a.ready_target, a.ready_timeout_s, a.binary, a.warmup_hint) == ("/a", 30.0, None, None)
    assert a.ready_status == 200  # the expected status of the path it asks


def test_the_ready_status_is_the_paths_or_given_or_any_below_500(tmp_path: Path) -> None:
    paths = '[[paths]]\nname = "a"\ntarget = "/a"\n[paths.expect]\nstatus = 404\n'
    same = load_adapter(write(tmp_path, 'start = ["x"]\n[ready]\ntarget = "/a"\n' + paths))
    assert same.ready_status == 404
    other = load_adapter(write(tmp_path, 'start = ["x"]\n[ready]\ntarget = "/up"\n' + paths))
    assert other.ready_status is None
    given = 'start = ["x"]\n[ready]\ntarget = "/up"\nstatus = 204\n'
    assert load_adapter(write(tmp_path, given + paths)).ready_status == 204
    with pytest.raises(ParseError, match="ready: 'status' 99 is not an HTTP status code"):
        load_adapter(write(tmp_path, 'start = ["x"]\n[ready]\nstatus = 99\n' + paths))


def test_expand_placeholders(tmp_path: Path) -> None:
    a = load_adapter(write(tmp_path, GOOD))
    build = tmp_path / "b"
    assert expand(a.start, port=8123, build_dir=build, adapter=a) == [
        f"{build}/srv", "--port", "8123", "--root", str(a.directory)
    ]  # fmt: skip
    assert adapters.expand_env(a, port=1, build_dir=build) == {"SEED": "0"}


def test_render_writes_the_config_with_the_port(tmp_path: Path) -> None:
    path = write(tmp_path, RENDERS)
    (path.parent / "srv.conf").write_text("server { listen 127.0.0.1:{port}; root {src}; }\n")
    a = load_adapter(path)
    build = tmp_path / "b"
    argv = expand(a.start, port=9001, build_dir=build, adapter=a)
    assert argv == ["srv", "-c", str(build / "srv.conf")]
    # Braces of the config language stay; only the known placeholders are replaced.
    assert (build / "srv.conf").read_text() == (
        f"server {{ listen 127.0.0.1:9001; root {a.directory}; }}\n"
    )


RENDERS = GOOD.replace('start = ["{build}/srv", "--port", "{port}", "--root", "{src}"]',
                      'start = ["srv", "-c", "{render:srv.conf}"]')  # fmt: skip


def test_a_link_out_of_the_adapter_folder_is_not_rendered(tmp_path: Path) -> None:
    path = write(tmp_path, RENDERS)
    (path.parent / "srv.conf").symlink_to("/etc/passwd")
    with pytest.raises(ParseError, match=r"renders 'srv\.conf', which is outside the adapter's"):
        load_adapter(path)


@pytest.mark.parametrize(
    ("template", "message"),
    [
        (b"listen {port}; user {nobody};\n", r"srv\.conf: placeholder '\{nobody\}' cannot"),
        (b"listen {port};\n\xff\xfe\n", r"srv\.conf: not UTF-8 text \(byte 15\)"),
        (None, r"srv\.conf: is not a regular file"),  # a FIFO: read, it would block
        ("link", r"\{render:srv\.conf\} is outside the adapter's folder"),
    ],
    ids=["placeholder", "binary", "fifo", "moved-out"],
)
def test_a_config_that_fails_to_render_names_its_file(
    tmp_path: Path, template: bytes | str | None, message: str
) -> None:
    import os

    path = write(tmp_path, RENDERS)
    conf = path.parent / "srv.conf"
    conf.write_text("listen {port};\n")
    a = load_adapter(path)
    conf.unlink()  # what the adapter's folder holds when the server starts
    if isinstance(template, bytes):
        conf.write_bytes(template)
    elif template is None:
        os.mkfifo(conf)
    else:
        conf.symlink_to("/etc/passwd")
    with pytest.raises(ParseError, match=message):
        expand(a.start, port=9001, build_dir=tmp_path / "b", adapter=a)
    assert not (tmp_path / "b" / "srv.conf").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("start = [", "invalid TOML"),
        ('[[paths]]\nname = "a"\ntarget = "/a"\n', "missing required key 'start'"),
        ('start = ["x"]\n', "missing required key 'paths'"),
        ('start = ["x"]\npaths = []\n', "'paths' must list at least one path"),
        ('start = []\n[[paths]]\nname = "a"\ntarget = "/a"\n', "'start' must be a non-empty list"),
        ('start = "x"\n[[paths]]\nname = "a"\ntarget = "/a"\n', "'start' must be a list"),
        ('start = ["x", "{prot}"]\n[[paths]]\nname = "a"\ntarget = "/a"\n',
         "'start' uses placeholder '{prot}'"),
        ('build = [["cc", "{port}"]]\nstart = ["x"]\n[[paths]]\nname = "a"\ntarget = "/a"\n',
         "'build[0]' uses placeholder '{port}'"),
        ('start = ["x", "{render:nope.conf}"]\n[[paths]]\nname = "a"\ntarget = "/a"\n',
         "renders 'nope.conf', which is not a file of the adapter"),
        ('start = ["x", "{render:../../../../etc/shadow}"]\n[[paths]]\nname = "a"\ntarget = "/a"\n',
         "renders '../../../../etc/shadow', which is outside the adapter's folder"),
        ('start = ["x", "--conf={render:/etc/passwd}"]\n[[paths]]\nname = "a"\ntarget = "/a"\n',
         "renders '/etc/passwd', which is outside the adapter's folder"),
        ('start = ["x"]\nstrat = 1\n[[paths]]\nname = "a"\ntarget = "/a"\n',
         "unknown key 'strat'"),
        ('start = ["x"]\n[[paths]]\nname = "a"\ntarget = "a"\n', "must start with '/'"),
        ('start = ["x"]\n[[paths]]\nname = "a b"\ntarget = "/a"\n', "path name 'a b'"),
        ('start = ["x"]\n[[paths]]\nname = "a"\ntarget = "/a"\n[[paths]]\nname = "a"\n'
         'target = "/b"\n', "duplicate path name 'a'"),
        ('start = ["x"]\n[[paths]]\nname = "a"\ntarget = "/a"\n[paths.expect]\nstatus = 1000\n',
         "'status' 1000 is not an HTTP status code"),
        ('start = ["x"]\n[[paths]]\nname = "a"\ntarget = "/a"\n[paths.expect]\nstatus = true\n',
         "'status' must be an integer, not a boolean"),
        ('start = ["x"]\n[[paths]]\nname = "a"\ntarget = "/a"\n[paths.expect]\nbody = "x"\n'
         "json = 1\n", "either 'body' or 'json'"),
        ('start = ["x"]\n[[paths]]\nname = "a"\ntarget = "/a"\n[paths.expect]\nbody = 5\n',
         "'body' must be a string"),
        ('start = ["x"]\n[[paths]]\nname = "a"\ntarget = "/a"\nrequest_headers = {Host = "h"}\n',
         "Host is always sent"),
        ('start = ["x"]\n[ready]\ntimeout_s = 0\n[[paths]]\nname = "a"\ntarget = "/a"\n',
         "'timeout_s' must be between 0 and 3600"),
        ('start = ["x"]\n[env]\nN = 1\n[[paths]]\nname = "a"\ntarget = "/a"\n',
         "env.N must be a string"),
        ('name = "my server"\nstart = ["x"]\n[[paths]]\nname = "a"\ntarget = "/a"\n',
         "adapter name 'my server' may use only"),
    ],
)  # fmt: skip
def test_bad_adapter_is_one_parse_error_naming_the_file(
    tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ParseError) as info:
        load_adapter(path)
    line = str(info.value)
    assert line.startswith(f"{path}: ")
    assert message in line
    assert "\n" not in line


def test_unreadable_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match=r"adapter\.toml: no such file"):
        load_adapter(tmp_path / "missing" / "adapter.toml")
    path = write(tmp_path, "")
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ParseError, match="not UTF-8 text"):
        load_adapter(path)


def test_bundled_adapters_all_load() -> None:
    paths = bundled_adapter_paths()
    names = [load_adapter(p).name for p in paths]
    assert names == [
        "bun-http",
        "c-epoll",
        "express",
        "go-http",
        "gunicorn",
        "jvm-http",
        "nginx",
        "nginx-workers",
        "node-http",
        "python-asyncio",
        "uvicorn",
    ]
    for p in paths:
        a = load_adapter(p)
        assert [x.name for x in a.paths] == ["plaintext", "json"]
        # python-asyncio runs on {python}, the interpreter running icount, and uvicorn and
        # gunicorn on a virtual environment made from it: nothing to require
        uses_python = "{python}" in a.start or any("{python}" in step for step in a.build)
        assert a.requires or uses_python, f"{a.name} must say what it needs"


def test_icount_adapters_env_overrides_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, GOOD, "one")
    write(tmp_path, GOOD, "two")
    (tmp_path / "not-an-adapter").mkdir()
    monkeypatch.setenv("ICOUNT_ADAPTERS", str(tmp_path))
    assert bundled_adapter_paths() == [
        tmp_path / "one" / "adapter.toml", tmp_path / "two" / "adapter.toml"
    ]  # fmt: skip


def _with(a: Adapter, **changes: object) -> Adapter:
    from dataclasses import replace

    return replace(a, **changes)  # type: ignore[arg-type]


def test_unavailable_reason_names_the_missing_program(tmp_path: Path) -> None:
    a = load_adapter(write(tmp_path, GOOD))
    assert unavailable_reason(a) is None  # sh is everywhere
    missing = _with(a, requires=("sh", "no-such-server-xyz"))
    assert unavailable_reason(missing) == "no-such-server-xyz is not installed (not found on PATH)"


def test_build_failure_shows_the_compilers_last_lines(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    (path.parent / "bad.c").write_text("int main(void) { return undeclared_thing; }\n")
    a = _with(load_adapter(path), build=(("gcc", "-o", "{build}/srv", "{src}/bad.c"),))
    with pytest.raises(RunFailedError) as info:
        adapters.build_adapter(a, tmp_path / "b")
    line = str(info.value)
    assert line.startswith("demo: build step exited with status 1: gcc -o ")
    assert "undeclared_thing" in line and "\n" not in line


def test_build_and_binary_path(c_epoll_adapter: tuple[Adapter, Path]) -> None:
    target, build = c_epoll_adapter
    binary = adapters.binary_path(target, build)
    assert binary == build / "c-epoll" and binary.stat().st_size > 0
    nginx_like = _with(target, binary="sh")
    found = adapters.binary_path(nginx_like, build)
    assert found is not None and found.name in ("sh", "dash", "bash")  # sh may be a link


def test_cwd_is_relative_to_the_adapters_folder_and_takes_src_and_build(tmp_path: Path) -> None:
    paths = '[[paths]]\nname = "a"\ntarget = "/a"\n'
    a = load_adapter(write(tmp_path, 'start = ["x"]\ncwd = "site"\n' + paths))
    build = tmp_path / "build"
    assert a.cwd == "site"
    assert adapters.working_dir(a, build) == (tmp_path / "demo").resolve() / "site"
    b = load_adapter(write(tmp_path, 'start = ["x"]\ncwd = "{build}/www"\n' + paths, "b"))
    assert adapters.working_dir(b, build) == build / "www"
    none = load_adapter(write(tmp_path, 'start = ["x"]\n' + paths, "c"))
    assert none.cwd is None and adapters.working_dir(none, build) is None
    with pytest.raises(ParseError, match=r"'cwd' uses placeholder '\{port\}'"):
        load_adapter(write(tmp_path, 'start = ["x"]\ncwd = "{port}"\n' + paths, "d"))
    with pytest.raises(ParseError, match="'cwd' must name a directory"):
        load_adapter(write(tmp_path, 'start = ["x"]\ncwd = ""\n' + paths, "e"))


def test_cmd_cwd_is_made_absolute_from_where_icount_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icount.errors import UsageError
    from icount.serve.targets import CmdServer, cmd_adapter

    (tmp_path / "app").mkdir()
    monkeypatch.chdir(tmp_path)
    cmd = CmdServer("sh -c 'exec x' {port}", cwd="app")
    assert cmd_adapter(cmd).cwd == str(tmp_path / "app")
    assert cmd.to_json()["cwd"] == "app"
    assert "cwd" not in CmdServer("sh {port}").to_json()  # plans before --cwd read the same
    with pytest.raises(UsageError, match="--cwd nowhere: not a directory"):
        cmd_adapter(CmdServer("sh {port}", cwd="nowhere"))
