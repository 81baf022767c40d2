"""Real servers that close connections, measured under callgrind (issue 29): PHP's
built-in server (`Connection: close` on every answer, no Content-Length), nginx and
lighttpd with their keep-alive limits lowered below --requests. Each cell is valid, and
its notes say how the server used its connections, naming the server's setting."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.serve.conftest import cells, leftovers, run_icount

REPO = Path(__file__).resolve().parents[2]
ROUTER = REPO / "fixtures" / "serve" / "php" / "router.php"
FAST = ["--runs", "2", "--requests", "100", "--warmup", "20", "--reps", "2",
        "--backend", "callgrind", "-q"]  # fmt: skip


def _need(program: str) -> None:
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed (scripts/setup.sh installs it)")


def _serve(args: list[str], out: Path, cwd: Path) -> tuple[dict[tuple[str, str], Any], str]:
    # FAST first: a test's own options come later and win
    done = run_icount(["serve", *FAST, *args, "-o", str(out), "--width", "300"], cwd=cwd)
    assert done.returncode == 0, done.stderr + done.stdout
    return cells(out), done.stdout


@pytest.mark.slow
def test_php_builtin_server_gives_valid_cells(need_valgrind: None, tmp_path: Path) -> None:
    """`php -S` answered 546 times and was refused as not answering (issue 29): each of
    its requests now has its own connection, counted with it."""
    _need("php")
    cmd = f"php -S 127.0.0.1:{{port}} {ROUTER}"
    got, table = _serve(
        ["--cmd", cmd, "--name", "php", "--path", "plaintext=/plaintext", "--path",
         "json=/json", "--expect-status", "200"],
        tmp_path / "r.json", tmp_path,
    )  # fmt: skip
    for path in ("plaintext", "json"):
        cell = got[("php", path)]
        assert cell["valid"] is True and cell["median"] > 0, cell
        assert cell["params"]["connection"] == "close"
        note, *rest = cell["extra"]["notes"]
        assert note.startswith("the server closed every connection after one answer")
        # Debian's php-cli is stripped: its share of code without a symbol is noted
        assert [n for n in rest if "ran in code without a symbol" in n], rest
        assert f"php/{path}/callgrind: the server closed every connection" in table
    assert leftovers(str(ROUTER)) == []


def _nginx(tmp_path: Path, limit: int) -> Path:
    adapter = tmp_path / "nginx"
    shutil.copytree(REPO / "adapters" / "nginx", adapter)
    conf = adapter / "nginx.conf"
    conf.write_text(conf.read_text().replace("keepalive_requests 1000000;",
                                             f"keepalive_requests {limit};"))  # fmt: skip
    return adapter / "adapter.toml"


@pytest.mark.slow
def test_nginx_keep_alive_limit_is_named_and_measured(need_valgrind: None, tmp_path: Path) -> None:
    """nginx closes a connection after keepalive_requests answers: each window starts on
    new connections; a window longer than the limit opens the same number inside it,
    said in the notes with the setting to raise."""
    _need("nginx")
    got, _ = _serve([str(_nginx(tmp_path, 30)), "--path", "plaintext"], tmp_path / "r.json",
                    tmp_path)  # fmt: skip
    cell = got[("nginx", "plaintext")]
    assert cell["valid"] is True and cell["median"] > 0, cell
    assert "connection" not in cell["params"]  # keep-alive: as files before it was recorded
    assert cell["extra"]["notes"][:1] == [
        "the server closed each connection after 30 requests (nginx's keepalive_requests): "
        "every window started on new connections, opened and sent one request before it; "
        "3 more opened inside each window (1 connection x 29 requests left < 100), their "
        "accept and close counted with its requests: raise nginx's keepalive_requests above "
        "--requests to keep them out"
    ]
    # the advice followed: a limit above --requests opens no connection inside a window
    raised = tmp_path / "raised"
    raised.mkdir()
    got, _ = _serve([str(_nginx(raised, 200)), "--path", "plaintext"], raised / "r.json", raised)
    cell = got[("nginx", "plaintext")]
    assert cell["valid"] is True, cell
    assert cell["extra"]["notes"][:1] == [
        "the server closed each connection after 200 requests (nginx's keepalive_requests): "
        "every window started on new connections, opened and sent one request before it"
    ]


@pytest.mark.slow
def test_lighttpd_keep_alive_limit_is_named(need_valgrind: None, tmp_path: Path) -> None:
    """lighttpd, installed as its users install it, with server.max-keep-alive-requests
    set to 200, above --requests: no connection opens inside a window."""
    _need("lighttpd")
    site = tmp_path / "lighttpd"
    (site / "www").mkdir(parents=True)
    (site / "www" / "plaintext").write_text("Hello, World!")
    (site / "lighttpd.conf").write_text(
        'server.document-root = "{src}/www"\nserver.bind = "127.0.0.1"\n'
        'server.port = {port}\nserver.errorlog = "{build}/error.log"\n'
        "server.max-keep-alive-requests = 200\n"
    )
    (site / "adapter.toml").write_text(
        'requires = ["lighttpd"]\nstart = ["lighttpd", "-D", "-f", "{render:lighttpd.conf}"]\n'
        'binary = "lighttpd"\n\n[[paths]]\nname = "plaintext"\ntarget = "/plaintext"\n'
        '[paths.expect]\nstatus = 200\nbody = "Hello, World!"\n'
    )
    got, _ = _serve([str(site / "adapter.toml"), "--warmup", "300"], tmp_path / "r.json",
                    tmp_path)  # fmt: skip
    cell = got[("lighttpd", "plaintext")]
    assert cell["valid"] is True and cell["median"] > 0, json.dumps(cell)[:2000]
    note = cell["extra"]["notes"][0]
    assert note.startswith("the server closed each connection after ")
    assert "(lighttpd's server.max-keep-alive-requests): every window started on new " in note
    assert note.endswith("opened and sent one request before it"), note


@pytest.mark.slow
def test_a_forced_keep_alive_is_refused_and_its_advice_gives_a_valid_cell(
    need_valgrind: None, tmp_path: Path
) -> None:
    """--connection keep-alive against php -S: refused, saying to use --connection close;
    following it, the cell is valid, each request's connection counted with it."""
    _need("php")
    cmd = ["--cmd", f"php -S 127.0.0.1:{{port}} {ROUTER}", "--name", "php", "--path",
           "plaintext=/plaintext", "--expect-status", "200"]  # fmt: skip
    out = tmp_path / "kept.json"
    done = run_icount(["serve", *cmd, *FAST, "--runs", "1", "--connection", "keep-alive",
                       "-o", str(out)], cwd=tmp_path)  # fmt: skip
    assert done.returncode == 5, done.stderr
    (cell,) = cells(out).values()
    assert cell["reason"].endswith(
        "was closed by the server (Connection: close) after 1 responses on it: --connection "
        "keep-alive needs a server that keeps connections open; --connection close counts "
        "each request's connection as its work"
    ), cell["reason"]
    got, _ = _serve([*cmd, "--connection", "close"], tmp_path / "close.json", tmp_path)
    cell = got[("php", "plaintext")]
    assert cell["valid"] is True and cell["params"]["connection"] == "close"
    assert cell["extra"]["notes"][0].startswith("--connection close: each request had its own")


@pytest.mark.slow
def test_apache_at_its_default_keep_alive_limit_is_measured(
    need_valgrind: None, tmp_path: Path
) -> None:
    """Debian's Apache 2.4 with its default MaxKeepAliveRequests (100), refused on the
    first try before (issue 29): valid, two connections opened inside each 300-request
    window, the setting named."""
    _need("apache2")
    site = tmp_path / "apache"
    (site / "www").mkdir(parents=True)
    (site / "www" / "plaintext").write_text("Hello, World!")
    modules = "/usr/lib/apache2/modules"
    (site / "httpd.conf").write_text(
        'ServerRoot "{build}"\nServerName 127.0.0.1\nListen 127.0.0.1:{port}\n'
        f"LoadModule mpm_event_module {modules}/mod_mpm_event.so\n"
        f"LoadModule authz_core_module {modules}/mod_authz_core.so\n"
        'PidFile "{build}/httpd.pid"\nErrorLog "{build}/error.log"\n'
        'DocumentRoot "{src}/www"\n<Directory "{src}/www">\n    Require all granted\n'
        "</Directory>\n"
    )
    (site / "adapter.toml").write_text(
        'requires = ["apache2"]\nstart = ["apache2", "-X", "-f", "{render:httpd.conf}"]\n'
        'binary = "apache2"\n\n[ready]\ntimeout_s = 60\n\n[[paths]]\nname = "plaintext"\n'
        'target = "/plaintext"\n[paths.expect]\nstatus = 200\nbody = "Hello, World!"\n'
    )
    got, _ = _serve([str(site / "adapter.toml"), "--requests", "300", "--warmup", "150"],
                    tmp_path / "r.json", tmp_path)  # fmt: skip
    cell = got[("apache", "plaintext")]
    assert cell["valid"] is True and cell["median"] > 0, cell
    note = cell["extra"]["notes"][0]
    assert note.startswith(
        "the server closed each connection after 101 requests (Apache's "
        "MaxKeepAliveRequests): every window started on new connections"
    )
    assert "; 2 more opened inside each window (1 connection x 100 requests left < 300)" in note
