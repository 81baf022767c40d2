"""A served path's profile under callgrind (c-epoll, costs known by construction): two
builds that differ only in one named function's cost per request, and compare names
that function first with its per-request delta exact, the rest unchanged."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Icount

from .conftest import AdapterMaker, run_icount

K = 1000  # periodic_work's loop iterations a request in the base (2 instructions each)
FAST = ["--runs", "1", "--reps", "2", "--requests", "200", "--warmup", "50", "--backend",
        "callgrind", "--idle-seconds", "0", "-q"]  # fmt: skip


@pytest.mark.slow
def test_compare_names_the_function_whose_cost_per_request_changed(
    need_valgrind: None, make_adapter: AdapterMaker, tmp_path: Path
) -> None:
    files = []
    for side, loop in (("base", K), ("new", 2 * K)):
        # the same adapter name: the two cells compare as one
        target = make_adapter("every", "--every", "1", "--every-loop", str(loop))
        out = tmp_path / f"{side}.json"
        done = run_icount(["serve", str(target), *FAST, "-o", str(out)], tmp_path)
        assert done.returncode == 0, done.stderr
        files.append(out)
    (cell,) = json.loads(files[0].read_text())["cells"]
    profile = cell["profile"]
    assert profile["per"] == "request" and profile["windows"] == 2
    # every request runs periodic_work once
    by_name = {f[0]: f for f in profile["functions"]}
    assert by_name["periodic_work"][3] == 1.0
    assert by_name["periodic_work"][2] >= 2 * K
    done = run_icount(["compare", *map(str, files), "-f", "json"], tmp_path)
    assert done.returncode == 3, done.stderr
    (row,) = json.loads(done.stdout)["cells"]
    first, *rest = row["explained"]["functions"]
    assert first["function"] == "periodic_work"
    assert first["delta"] == 2 * K and first["base"] + 2 * K == first["new"]
    # the server's own work per request repeats to the instruction between builds
    assert all(abs(m["delta"]) < 1 for m in rest), rest


N_ALLOC = 7  # malloc calls of each request, freed before the answer
SERVER = r"""
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
static const char answer[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi";
void *volatile slot[16];
__attribute__((noinline)) static void handle(void) {
    for (int i = 0; i < COUNT; i++) slot[i] = malloc(32 + i);
    for (int i = 0; i < COUNT; i++) free(slot[i]);
}
int main(int argc, char **argv) {
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)atoi(argv[argc - 1]));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 64)) return 1;
    static char buf[65536];
    for (;;) {
        int c = accept(s, 0, 0);
        size_t len = 0;
        ssize_t r;
        while (c >= 0 && (r = read(c, buf + len, sizeof buf - len - 1)) > 0) {
            len += (size_t)r;
            buf[len] = 0;
            char *end;
            while ((end = strstr(buf, "\r\n\r\n")) != 0) {  /* one request a header */
                handle();
                if (write(c, answer, sizeof answer - 1) < 0) break;
                size_t used = (size_t)(end + 4 - buf);
                memmove(buf, buf + used, len - used + 1);
                len -= used;
            }
        }
        if (c >= 0) close(c);
    }
}
""".replace("COUNT", str(N_ALLOC))


@pytest.mark.slow
def test_allocations_per_request_are_exact(
    need_valgrind: None, icount: Icount, compile_c: Callable[[str, str], Path], tmp_path: Path
) -> None:
    exe = compile_c("alloc-server", SERVER)
    out = tmp_path / "allocs.json"
    done = icount("serve", "--cmd", f"{exe} --port {{port}}", "--name", "allocs",
                  "--expect-body", "hi", *FAST, "-o", str(out), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (cell,) = json.loads(out.read_text())["cells"]
    assert cell["profile"]["allocations"] == N_ALLOC and cell["profile"]["frees"] == N_ALLOC
    by_name = {f[0]: f for f in cell["profile"]["functions"]}
    assert by_name["handle"][3] == 1.0  # a call a request
    table = icount("table", str(out)).stdout
    assert "allocs/request" in table and f" {N_ALLOC}\n" in table, table
