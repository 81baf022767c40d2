"""A backend that counts by construction, for testing icount's logic in milliseconds.

`FakeBackend` implements `icount.backends.protocol.Backend`. Its servers are real HTTP
servers on real ports (a thread in the test process, answering the bundled targets'
`/plaintext` and `/json`), so the load generator, verification and every decision of
the serve method run as they do for real; only the count is synthetic: request number
i of a process (from 0, readiness probes included) costs `cost(i)` instructions, and
every window adds `window_cost` (vgdb's forced command adds 27 under callgrind).

Register it for code that resolves backends by name (`plan.prepare`):
    monkeypatch.setitem(icount.backends.REGISTRY, "fake", "tests.support.fake_backend")
and set `fake_backend.CONFIG` for what `create()` builds.
"""

from __future__ import annotations

import socketserver
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from icount.backends.protocol import (
    ArgvKind,
    Check,
    Counted,
    Probe,
    ProcessCount,
    Registration,
    ServeDefaults,
    Server,
    WindowCount,
)
from icount.errors import RunFailedError
from icount.runtimes import RuntimeWork

BODIES = {
    b"/plaintext": (b"text/plain", b"Hello, World!"),
    b"/json": (b"application/json", b'{"message":"Hello, World!"}'),
}


@dataclass
class FakeConfig:
    """How the fake counts. `cost(i, process)`: instructions of request i of the
    `process`-th server started (0, 1, ...)."""

    cost: Callable[[int, int], float] = lambda i, process: 1000.0
    # the function request i's cost is charged to (a window's profile, by name)
    function: Callable[[int], str] = lambda i: "handle_request"
    window_cost: float = 27.0
    # a collected runtime's work on top of cost(i, process): request i's collector
    # instructions (0: none that request), reported as the window's runtime work
    collector: Callable[[int], float] | None = None
    # work driven by the clock: instructions a second a window counts on top, whatever
    # its requests; and how long each answer takes (a loaded machine's slower windows)
    clock_rate: float = 0.0
    answer_delay_s: float = 0.0
    preflight_problem: str | None = None
    floor: float | None = 100.0  # the backend's instruction floor per request
    uncounted: tuple[str, ...] = ()  # processes the fake pretends not to count
    # A daemonizing server: its requests are served by a child the windows do not count,
    # and the started process exits 0 this many seconds after the first window closes.
    daemon_exit_s: float | None = None
    instrumented: list[bool] = field(default_factory=list)  # every instrument() call
    started: list[FakeServer] = field(default_factory=list)


CONFIG = FakeConfig()


def probe() -> Probe:
    return Probe(True, "the fake backend counts by construction")


@dataclass(frozen=True)
class FakeOptions:
    """The fake takes no settings: what it counts is `CONFIG`."""


def create(options: FakeOptions) -> FakeBackend:
    return FakeBackend(CONFIG)


def checks() -> list[Check]:
    return [Check("fake backend", True, "counts by construction")]


BACKEND = Registration(FakeOptions, create, probe, checks)


class _Handler(socketserver.BaseRequestHandler):
    server: _HTTP

    def handle(self) -> None:
        data = b""
        while True:
            end = data.find(b"\r\n\r\n")
            while end < 0:
                try:
                    chunk = self.request.recv(65536)
                except OSError:
                    return
                if not chunk:
                    return
                data += chunk
                end = data.find(b"\r\n\r\n")
            head, data = data[:end], data[end + 4 :]
            target = head.split(b" ", 2)[1]
            ctype, body = BODIES.get(target, (b"text/plain", b"not found"))
            status = b"200 OK" if target in BODIES else b"404 Not Found"
            self.server.owner.served()
            if self.server.owner.config.answer_delay_s:
                time.sleep(self.server.owner.config.answer_delay_s)  # a slow machine's answer
            self.request.sendall(
                b"HTTP/1.1 " + status + b"\r\nContent-Type: " + ctype
                + b"\r\nContent-Length: " + str(len(body)).encode()
                + b"\r\nConnection: keep-alive\r\nKeep-Alive: timeout=600\r\n\r\n" + body
            )  # fmt: skip


class _HTTP(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int, owner: FakeServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", port), _Handler)


class FakeServer:
    """A server whose count is the sum of its requests' constructed costs."""

    def __init__(
        self, argv: Sequence[str], run_dir: Path, config: FakeConfig, whole_life: bool = False
    ) -> None:
        self.run_dir = run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        self.config = config
        self.index = len(config.started)
        config.started.append(self)
        self.pid = 100000 + self.index
        port = int(argv[argv.index("--port") + 1])
        self._lock = threading.Lock()
        self.requests = 0
        self.total = 0.0
        self.by_function: dict[str, float] = {}
        self.collected = [0.0, 0]  # collector instructions and calls since the window opened
        # counting from the start (a cold start, a lifetime) is a window open from birth
        self._window_start: float | None = 0.0 if whole_life else None
        self.opened_at = 0.0
        self.close_latency_s = 0.0
        self.windows = 0
        self._exits_at: float | None = None  # a daemonizing server's started process
        self.returncode = 0
        try:
            self._http: _HTTP | None = _HTTP(port, self)
        except OSError as e:  # its port was taken: it exits as a real server does
            (run_dir / "server.stderr").write_text(f"fake: port {port}: {e.strerror}\n")
            self._http, self.returncode = None, 1
            return
        # a short poll: shutdown() waits for it, and tests start many servers
        thread = threading.Thread(target=self._http.serve_forever, args=(0.005,), daemon=True)
        thread.start()

    def served(self) -> None:
        with self._lock:
            cost = self.config.cost(self.requests, self.index)
            name = self.config.function(self.requests)
            self.total += cost
            self.by_function[name] = self.by_function.get(name, 0.0) + cost
            gc = self.config.collector(self.requests) if self.config.collector else 0.0
            if gc:
                self.total += gc
                self.collected[0] += gc
                self.collected[1] += 1
            self.requests += 1

    def alive(self) -> bool:
        if self._exits_at is not None and time.monotonic() >= self._exits_at:
            return False
        return self._http is not None

    def preflight(self) -> str | None:
        return self.config.preflight_problem

    def instrument(self, on: bool) -> None:
        self.config.instrumented.append(on)

    def open_window(self) -> None:
        if self.config.preflight_problem is not None:
            raise RunFailedError(f"fake: {self.config.preflight_problem}")
        with self._lock:
            self._window_start = self.total
            self.by_function = {}
            self.collected = [0.0, 0]
        self.opened_at = time.monotonic()

    def close_window(self) -> WindowCount:
        with self._lock:
            if self._window_start is None:
                raise RunFailedError("fake: close_window without open_window")
            count = self.total - self._window_start + self.config.window_cost
            count += self.config.clock_rate * (time.monotonic() - self.opened_at)
            if self.config.daemon_exit_s is not None:
                count = self.config.window_cost  # the serving child is not counted
                if self._exits_at is None:
                    self._exits_at = time.monotonic() + self.config.daemon_exit_s
            self._window_start = None
            self.windows += 1
            functions = {**self.by_function, "vgdb": self.config.window_cost}
            gc, calls = self.collected
        runtime = None
        if self.config.collector is not None:
            runtime = RuntimeWork("fake-gc", int(gc), 0, int(calls))
        return WindowCount(count, (ProcessCount(self.pid, "root", count),), functions, runtime)

    def stop(self) -> int:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        return self.returncode

    def lifetime_count(self) -> WindowCount:
        return WindowCount(self.total, (ProcessCount(self.pid, "root", self.total),))

    def cleanup(self) -> None:
        pass

    def uncounted(self) -> list[str]:
        return list(self.config.uncounted)

    def left_behind(self) -> str | None:
        return f"{self.pid + 1} (fake daemon)" if self._exits_at is not None else None

    def failure(self) -> str | None:
        return None


class FakeBackend:
    name = "fake"
    serve_defaults = ServeDefaults(
        warmup=20,
        requests=100,
        client_timeout_s=10.0,
        window="dump",
        window_why="the fake backend takes windows",
    )
    instrumented = True  # as callgrind: its counts do not depend on the load

    def __init__(self, config: FakeConfig | None = None) -> None:
        self.config = config or CONFIG
        self.instruction_floor = self.config.floor

    def probe(self) -> Probe:
        return probe()

    def version(self) -> str:
        return "fake 1"

    def fingerprint_argv(self, kind: ArgvKind) -> list[str]:
        return ["fake", kind]

    def cell_params(self) -> dict[str, object]:
        return {"thread": None}

    def count_command(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        timeout: float | None,
    ) -> Counted:
        # The count is the command's argument count times 1000: known by construction.
        return Counted(1000 * len(argv), 0, False, None, 1)

    def server_problem(self, argv: Sequence[str]) -> str | None:
        return None

    def start_server(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        cpus: Sequence[int],
        whole_life: bool = False,
    ) -> Server:
        return FakeServer(argv, run_dir, self.config, whole_life)
