"""What a counting backend provides, split by what it counts, and what a server started
under one provides.

A backend is an object: its name, its version and the exact arguments it runs with
(both recorded in the fingerprint: `CountingBackend`), and what it counts: whole
commands (`CommandBackend`, for `icount run`), servers in windows (`ServerBackend`,
for `icount serve`), or both (`Backend`, every bundled one). Callers depend on the
protocol they use. A server is a process that starts and stops (`ServerProcess`, all
that `serve/server.py` uses, and all that a native run of `--memory` is) and, under a
counting backend, one counted in windows (`Server`, what `serve/runs.py` uses). A new
backend is one module implementing what it counts, declaring its settings (a frozen
dataclass) and its doctor checks in a `Registration` named `BACKEND`, plus a line in
`icount.backends.REGISTRY`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Literal, Protocol, TypeVar, runtime_checkable

from icount.runtimes import RuntimeWork
from icount.window_profile import WindowProfile

ArgvKind = Literal["command", "server"]
# "root": count only the started process; a setting every bundled backend takes
ProcessMode = Literal["all", "root"]

# The leanest request path measured (c-epoll, C, one read and one write) costs ~850
# instructions; a window that counts under 100 per request counted something else.
# Any backend that counts instructions shares it.
INSTRUCTION_FLOOR = 100.0


@dataclass(frozen=True)
class Probe:
    """Can this backend count here? `why` says so in words either way; `hint` how to fix."""

    usable: bool
    why: str
    hint: str | None = None


@dataclass(frozen=True)
class Check:
    """One line of `icount doctor`: what was checked, whether it is fine, the facts."""

    name: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class Counted:
    """What one run of a command under a backend counted."""

    instructions: int | None  # None when nothing could be read
    returncode: int
    timed_out: bool
    problem: str | None  # why `instructions` is None
    processes: int | None = None  # profiles summed (callgrind); None where not known
    # the run's functions, every process summed, where the backend sees them (callgrind)
    profile: WindowProfile | None = None


def left_running(leftovers: str) -> str:
    """`Counted.problem` of a command that exited and left processes running."""
    return (
        f"the command left processes running when it exited: {leftovers}; icount stopped "
        "them, and a count that misses their work is no count (wait for children)"
    )


@dataclass(frozen=True)
class ProcessCount:
    """One process's share of a window."""

    pid: int
    role: str  # "root" (the started process) or "child"
    instructions: float  # see WindowCount.instructions


@dataclass(frozen=True)
class WindowCount:
    """What a server executed between two points of its life."""

    # An int for instruction counts; perf's software events (task-clock, which tests use
    # where no PMU counts) are fractional.
    instructions: float
    processes: tuple[ProcessCount, ...] = ()  # empty where the backend counts no parts
    # self instructions by function name, summed over the window's processes, where the
    # backend sees functions (callgrind); explains why one window counted more than another
    functions: Mapping[str, float] | None = None
    # the runtime's own work in the window (collector, background compiler: see
    # icount/runtimes.py), where the backend sees the call graph (callgrind)
    runtime: RuntimeWork | None = None
    # an edge (the opening or closing dump) taken with the server not seen idle, as
    # "open: why" / "close: why": it fell inside the server's work, not between requests
    unsettled: tuple[str, ...] = ()


@dataclass(frozen=True)
class ServeDefaults:
    """The serve method's defaults under a backend (native speed differs ~50x)."""

    warmup: int
    requests: int
    client_timeout_s: float
    window: str  # how windows are taken (results.details.WINDOW_*), and why that works
    window_why: str


class ServerProcess(Protocol):
    """A server started by a backend, as the code that starts, checks and stops it sees
    it (`serve/server.py`): whether or not anything counts it."""

    @property
    def pid(self) -> int: ...
    @property
    def run_dir(self) -> Path: ...

    def alive(self) -> bool: ...

    def stop(self) -> int:
        """Stop the server (SIGTERM, then SIGKILL); its return code."""
        ...

    def cleanup(self) -> None:
        """Remove what the backend left in `run_dir` (unless asked to keep it)."""
        ...

    def left_behind(self) -> str | None:
        """After the started process exited: what it left running, described."""
        ...

    def failure(self) -> str | None:
        """The backend's own complaint about the server (an assertion, a profile it could
        not write), with the remedy where one is known; None when there is none."""
        ...


class Server(ServerProcess, Protocol):
    """A server process started under a backend, counted in windows (`serve/runs.py`)."""

    def preflight(self) -> str | None:
        """None when windows can be taken on this process, else why not (the caller
        then falls back to whole lifetimes, `lifetime_count`)."""
        ...

    def instrument(self, on: bool) -> None:
        """Switch the backend's instrumentation on or off where it has one to switch
        (callgrind: warm-up runs uninstrumented, ~5x faster; the guest's instructions do
        not depend on it). A window opens with instrumentation on."""
        ...

    def open_window(self) -> None:
        """Start counting; `opened_at` is then the moment counting started
        (time.monotonic()), after whatever bookkeeping the opening took."""
        ...

    @property
    def opened_at(self) -> float: ...

    @property
    def close_latency_s(self) -> float:
        """How long after close_window() is called counting typically stops."""
        ...

    def close_window(self) -> WindowCount: ...

    def lifetime_count(self) -> WindowCount:
        """After `stop()`: what the whole life executed."""
        ...

    def uncounted(self) -> list[str]:
        """Live processes of the server that the backend does not count, described."""
        ...


S_co = TypeVar("S_co", bound=ServerProcess, covariant=True)


class ServerStarter(Protocol[S_co]):
    """Starts servers: a counting backend (its servers are `Server`s), or none at all
    (`serve/native.py`'s memory runs)."""

    def server_problem(self, argv: Sequence[str]) -> str | None:
        """Why a server started as `argv` could not be measured, or None."""
        ...

    def start_server(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        cpus: Sequence[int],
        whole_life: bool = False,
    ) -> S_co:
        """Start a server to count in windows; `whole_life`: counted from its exec (the
        differential method's lifetimes, cold starts)."""
        ...


class CountingBackend(Protocol):
    """What every backend is, whatever it counts: recorded in the fingerprint."""

    @property
    def name(self) -> str: ...
    @property
    def instrumented(self) -> bool:
        """The program runs under a simulator (~50x slower), not natively: its count does
        not depend on the machine's load, so parallel jobs may share CPUs with a client."""
        ...

    def version(self) -> str: ...

    def fingerprint_argv(self, kind: ArgvKind) -> list[str]:
        """The tool's argv with run-specific paths masked, as recorded in the fingerprint."""
        ...


@runtime_checkable
class CommandBackend(CountingBackend, Protocol):
    """A backend that counts whole commands (`icount run`, `measure_command.py`)."""

    def count_command(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        timeout: float | None,
    ) -> Counted:
        """Run `argv` once to completion, every process it starts counted; the command's
        stdout and stderr go to `run_dir`."""
        ...


@runtime_checkable
class ServerBackend(CountingBackend, ServerStarter[Server], Protocol):
    """A backend that counts servers in windows (`icount serve`, `serve/runs.py`)."""

    @property
    def serve_defaults(self) -> ServeDefaults: ...
    @property
    def instruction_floor(self) -> float | None:
        """Fewer instructions per request than this, and the counted processes cannot
        have served the requests (None where the backend counts no instructions)."""
        ...

    def cell_params(self) -> dict[str, object]:
        """Backend settings that move a serve cell's count, recorded in its params."""
        ...


@runtime_checkable
class Backend(CommandBackend, ServerBackend, Protocol):
    """A backend that counts both (every bundled one)."""


Options = TypeVar("Options")


@dataclass(frozen=True)
class Registration(Generic[Options]):
    """What a backend module registers as its `BACKEND`. `options` is a frozen dataclass
    of the settings the backend takes, typed, with their defaults: the registry
    (`icount.backends.settings`) checks a command's settings against it and refuses, naming
    the flag, those the backend does not take; the dataclass's `__post_init__` checks
    their values. A field `keep_profiles` is the flag `--keep-profiles`; a field typed
    `tuple[str, ...]` a flag given once per value (`--collector`)."""

    options: type[Options]
    create: Callable[[Options], CountingBackend]
    probe: Callable[[], Probe]
    checks: Callable[[], list[Check]]  # `icount doctor`'s lines for what this backend needs
