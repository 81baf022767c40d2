"""`compare --interleave` measured under callgrind, on C programs and a C server built
here: the same binary from two folders counts the same (each arm runs from
WORKDIR/bin/NAME), a known change is found exactly, and a control arm whose cost grows
each round (a counter file it reads and bumps at every start) is reported as drifting
and bounds what the comparison may claim."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_icount

pytestmark = pytest.mark.slow

# spin(n) costs exactly 2n instructions: one decrement and one branch an iteration
SPIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void spin(unsigned long n) {
    if (!n) return;
#if defined(__x86_64__)
    __asm__ volatile("1: dec %0\n\tjnz 1b" : "+r"(n));
#else
    __asm__ volatile("1: subs %0, %0, #1\n\tb.ne 1b" : "+r"(n));
#endif
}
/* The value in FILE (0 when there is none), and FILE holding one more after. */
static unsigned long bump(const char *path) {
    unsigned long k = 0;
    FILE *f = fopen(path, "r");
    if (f) { if (fscanf(f, "%lu", &k) != 1) k = 0; fclose(f); }
    f = fopen(path, "w");
    if (f) { fprintf(f, "%lu\n", k + 1); fclose(f); }
    return k;
}
"""

PROGRAM = (
    SPIN
    + r"""
/* prog N [COUNTER STEP]: spins N iterations, STEP more for each earlier run. */
int main(int argc, char **argv) {
    unsigned long n = strtoul(argv[1], 0, 10);
    if (argc > 3) n += bump(argv[2]) * strtoul(argv[3], 0, 10);
    spin(n);
    return 0;
}
"""
)

SERVER = (
    SPIN
    + r"""
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
/* server --port P [--loop N] [--counter FILE --step S]: answers "ok" to every request on
   one keep-alive connection at a time, spinning N iterations a request, S more for each
   earlier start counted in FILE. */
int main(int argc, char **argv) {
    int port = 0;
    unsigned long loop = 0, step = 0;
    const char *counter = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--port")) port = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--loop")) loop = strtoul(argv[i + 1], 0, 10);
        else if (!strcmp(argv[i], "--counter")) counter = argv[i + 1];
        else if (!strcmp(argv[i], "--step")) step = strtoul(argv[i + 1], 0, 10);
    }
    if (counter) loop += bump(counter) * step;
    signal(SIGPIPE, SIG_IGN);
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 64)) return 1;
    static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                             "Content-Length: 2\r\n\r\nok";
    static char buf[8192];
    for (;;) {
        int c = accept(s, 0, 0);
        if (c < 0) continue;
        size_t have = 0;
        for (;;) {
            ssize_t r = read(c, buf + have, sizeof buf - 1 - have);
            if (r <= 0) break;
            have += (size_t)r;
            buf[have] = 0;
            char *end;
            while ((end = strstr(buf, "\r\n\r\n")) != NULL) {
                spin(loop);
                if (write(c, ok, sizeof ok - 1) < 0) break;
                size_t used = (size_t)(end + 4 - buf);
                memmove(buf, buf + used, have - used + 1);
                have -= used;
            }
        }
        close(c);
    }
}
"""
)


def _build(tmp: Path, name: str, source: str) -> Path:
    for tool in ("cc", "valgrind", "vgdb"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (scripts/setup.sh installs it)")
    if platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip(f"the spin loop is x86-64 or AArch64 assembly; this is {platform.machine()}")
    src = tmp / f"{name}.c"
    src.write_text(source)
    exe = tmp / name
    subprocess.run(["cc", "-O2", "-o", str(exe), str(src)], check=True)
    return exe


def _twice(exe: Path, tmp: Path) -> tuple[Path, Path]:
    """The same binary, under one name, in two folders of different lengths."""
    short, long = tmp / "a", tmp / "a-folder-thirty-letters-longer"
    for d in (short, long):
        d.mkdir()
        shutil.copy2(exe, d / exe.name)
    return short / exe.name, long / exe.name


def _compare(*args: str) -> tuple[int, dict[str, Any], str]:
    """Every path given is absolute: icount runs from the checkout, where it imports."""
    done = run_icount(["compare", "--interleave", "--backend", "callgrind", "-q", "-f", "json",
                       *args], None, 300)  # fmt: skip
    return done.returncode, json.loads(done.stdout) if done.stdout else {}, done.stderr


def test_commands_with_a_control_arm(tmp_path: Path) -> None:
    base, new = _twice(_build(tmp_path, "prog", PROGRAM), tmp_path)
    counter = tmp_path / "counter"

    # the same binary from two folders: every pair the same count
    code, doc, err = _compare("--base-cmd", f"{base} 1000000", "--new-cmd",
                              f"{new} 1000000", "--pairs", "2")  # fmt: skip
    assert code == 0, err
    assert [p["ratio"] for p in doc["pairs"]] == [1.0, 1.0]
    assert doc["cells"][0]["delta"] == 0

    # +30,000 iterations (+60,000 instructions, about 3%) against a steady control
    change = ("--base-cmd", f"{base} 1000000", "--new-cmd", f"{new} 1030000")
    code, doc, err = _compare(*change, "--control-cmd", f"{base} 1000000",
                              "--pairs", "2")  # fmt: skip
    assert code == 3, err
    (cell,) = doc["cells"]
    assert (cell["verdict"], cell["delta"]) == ("regressed", 60000)
    assert cell["rounds"]["control"]["drift"] == 0
    assert "control drift 0.00% over 2 rounds" in cell["why"]

    # the control spins 40,000 iterations more each run: ~4% a round, its drift ~8%
    code, doc, err = _compare(*change, "--control-cmd",
                              f"{base} 1000000 {counter} 40000", "--pairs", "3")  # fmt: skip
    assert code == 0, err
    (cell,) = doc["cells"]
    control = cell["rounds"]["control"]
    values = control["values"]
    assert values[2] - values[1] == 80000  # both runs read a counter: only the spin differs
    assert control["drift"] > cell["delta_pct"] > 0.02 and control["first_last"] > 0
    assert cell["verdict"] == "unchanged" and cell["delta"] == 60000
    assert "is within the control drift" in cell["why"] and "not claimable" in cell["why"]
    assert counter.read_text() == "3\n"


def _adapter(folder: Path, program: Path, *flags: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    start = [str(program), "--port", "{port}", *flags]
    (folder / "adapter.toml").write_text(
        f'name = "tiny"\nstart = {json.dumps(start)}\nbinary = {json.dumps(str(program))}\n'
        '[ready]\ntarget = "/a"\ntimeout_s = 30\n'
        '[[paths]]\nname = "a"\ntarget = "/a"\n[paths.expect]\nstatus = 200\nbody = "ok"\n'
    )
    return folder


# spin(0) returns before the loop: every arm spins, so that only the iterations differ
LOOP = ("--loop", "100")


def test_servers_with_a_control_arm(tmp_path: Path) -> None:
    base, new = _twice(_build(tmp_path, "server", SERVER), tmp_path)
    counter = tmp_path / "counter"
    fast = ("--requests", "100", "--warmup", "20", "--reps", "1", "--idle-seconds", "0",
            "--pairs", "2")  # fmt: skip

    # the same binary from two folders, and a control 1,000 instructions a request dearer
    # each round
    code, doc, err = _compare(
        *fast,
        "--base-target", str(_adapter(tmp_path / "arms" / "base", base, *LOOP)),
        "--new-target", str(_adapter(tmp_path / "arms" / "same", new, *LOOP)),
        "--control-target", str(_adapter(tmp_path / "arms" / "drift", base, *LOOP,
                                          "--counter", str(counter), "--step", "500")),
    )  # fmt: skip
    assert code == 0, err
    (cell,) = doc["cells"]
    assert (cell["name"], cell["path"], cell["verdict"]) == ("tiny", "a", "unchanged")
    assert cell["delta"] == 0
    assert [p["ratio"] for p in doc["pairs"]] == [1.0, 1.0]
    control = cell["rounds"]["control"]
    assert control["values"][1] - control["values"][0] == 1000
    assert control["drift"] > 0 and control["first_last"] > 0
    assert "control drift" in cell["why"]

    # +500 iterations a request against a steady control: exactly +1,000 a request
    code, doc, err = _compare(
        *fast,
        "--base-target", str(tmp_path / "arms" / "base"),
        "--new-target", str(_adapter(tmp_path / "arms" / "loop", new, "--loop", "600")),
        "--control-target", str(_adapter(tmp_path / "arms" / "steady", base, *LOOP)),
    )  # fmt: skip
    assert code == 3, err
    (cell,) = doc["cells"]
    assert (cell["verdict"], cell["delta"]) == ("regressed", 1000)
    assert cell["rounds"]["control"]["drift"] == 0
