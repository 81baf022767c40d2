"""Counting windows on a server running under `perf stat` with a control fifo.

The server is started as `perf stat -x; -I 100 -D -1 --control fifo:CTL,ACK -e
instructions:u -- server`: counters start disabled and are enabled and disabled
around each window, perf answering `ack` on ACK for each command. perf 6.1 writes
its counts only at exit or per interval (measured here: a bare enable/disable does
not print, and `-o FILE` is flushed only at exit), so it runs in interval mode with
its output on stderr (unbuffered) into a file. While counters are disabled every
interval reads 0, so a window's count is the sum of the interval records from the
one before `enable` up to the first one printed after `disable` was acknowledged.

An interval printed as `<not counted>` had the counter enabled but never scheduled
(the server slept in epoll_wait): it adds 0. `<not supported>` and multiplexed
records (< 100% running) make the window fail with perf's words.

The server's stderr is sent to its own file through `sh -c 'exec "$@" 2>FILE'`:
the shell runs while counters are still disabled, so it is not counted.
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from icount import environment, procs
from icount.backends.perf_parser import EVENT, IntervalRecord, parse_intervals, window_total
from icount.backends.perf_stat import INSTALL_HINT, INTERVAL_MS, perf_args, perf_env
from icount.backends.protocol import WindowCount
from icount.errors import ParseError, RunFailedError

ACK_TIMEOUT_S = 10.0
STOP_GRACE_S = 5.0
_STDERR_WRAPPER = 'f=$1; shift; exec "$@" 2>"$f"'


class PerfServer:
    """A server under `perf stat` whose counters are switched on for windows only."""

    def __init__(
        self,
        argv: Sequence[str],
        run_dir: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        cpus: Sequence[int],
        event: str = EVENT,
        inherit: bool = True,
        enabled: bool = False,
    ) -> None:
        self.event = event
        self.run_dir = run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        exe = procs.require("perf", INSTALL_HINT)
        self.ctl_path = run_dir / "perf.ctl"
        self.ack_path = run_dir / "perf.ack"
        for fifo in (self.ctl_path, self.ack_path):
            fifo.unlink(missing_ok=True)
            os.mkfifo(fifo)
        self.out_file = run_dir / "perf.out"
        # perf opens ACK for writing and blocks until a reader exists: open it first.
        self._ack = os.open(self.ack_path, os.O_RDONLY | os.O_NONBLOCK)
        self._ctl: int | None = None
        prefix, _ = environment.aslr_wrapper()
        full = [
            *prefix,
            exe,
            *perf_args(event, self.ctl_path, self.ack_path, inherit, enabled),
            "--",
            "/bin/sh",
            "-c",
            _STDERR_WRAPPER,
            "sh",
            str(run_dir / "server.stderr"),
            *argv,
        ]
        try:
            self.child = procs.spawn(
                full,
                env=perf_env(env),
                cwd=cwd,
                cpus=cpus,
                stdout=run_dir / "server.stdout",
                stderr=self.out_file,
            )
        except BaseException:
            os.close(self._ack)
            raise
        self.pid = self.child.pid
        self._mark = 0
        self.opened_at = 0.0
        self.close_latency_s = 0.0  # `disable` is acknowledged as soon as perf reads it
        self._seen: list[IntervalRecord] = []
        self._read_to = 0  # bytes of out_file already parsed into _seen

    # ------------------------------------------------------------ protocol

    def _records(self) -> list[IntervalRecord]:
        """Every interval record so far. perf appends one every INTERVAL_MS for the
        server's whole life, so only the lines added since the last call are parsed."""
        try:
            with open(self.out_file, "rb") as f:
                f.seek(self._read_to)
                data = f.read()
        except OSError:
            return self._seen
        complete = data[: data.rfind(b"\n") + 1]  # perf may be writing the last line
        self._read_to += len(complete)
        try:
            text = complete.decode("utf-8", "replace")
            self._seen += parse_intervals(text, str(self.out_file), self.event)
        except ParseError as e:
            raise RunFailedError(str(e)) from None
        return self._seen

    def _open_ctl(self) -> int:
        if self._ctl is not None:
            return self._ctl
        deadline = time.monotonic() + ACK_TIMEOUT_S
        while True:
            try:
                self._ctl = os.open(self.ctl_path, os.O_WRONLY | os.O_NONBLOCK)
                return self._ctl
            except OSError:  # ENXIO: perf has not opened its end yet
                if time.monotonic() > deadline or not self.alive():
                    why = self._why()
                    raise RunFailedError(f"perf did not open its control fifo: {why}") from None
                time.sleep(0.02)

    def _command(self, word: str) -> None:
        ctl = self._open_ctl()
        os.write(ctl, (word + "\n").encode())
        answer = b""
        deadline = time.monotonic() + ACK_TIMEOUT_S
        while b"ack" not in answer:
            left = deadline - time.monotonic()
            if left <= 0 or not self.alive():
                raise RunFailedError(f"perf did not acknowledge {word!r}: {self._why()}")
            ready, _, _ = select.select([self._ack], [], [], min(left, 0.2))
            if ready:
                with contextlib.suppress(BlockingIOError):
                    answer += os.read(self._ack, 64)

    def _why(self) -> str:
        rc = self.child.poll()
        tail = self.out_file.read_text(errors="replace").strip().splitlines()[-1:]
        state = "perf is running" if rc is None else f"perf {procs.describe_exit(rc)}"
        return state + (f"; perf said: {tail[0][:200]}" if tail else "")

    def open_window(self) -> None:
        self._mark = len(self._records())
        self._command("enable")
        self.opened_at = time.monotonic()

    def preflight(self) -> str | None:
        return None  # the control fifo answers whether the server is idle or not

    def instrument(self, on: bool) -> None:
        pass  # perf counts natively: nothing to switch

    def close_window(self) -> WindowCount:
        self._command("disable")
        after_ack = len(self._records())
        # The first record printed after the acknowledged disable holds the window's end.
        if not procs.wait_until(
            lambda: len(self._records()) > after_ack, timeout=10 * INTERVAL_MS / 1000 + 2
        ):
            raise RunFailedError(f"perf printed no interval after disable: {self._why()}")
        records = self._records()
        total, problem = window_total(records[self._mark :], enabled=True)
        if problem is not None or total is None:
            raise RunFailedError(problem or "nothing counted")
        # perf counts the server's process and every child it forked (inherited
        # counters), as one figure: there are no per-process parts to report.
        return WindowCount(total)

    def lifetime_count(self) -> WindowCount:
        # Never needed: preflight() always allows windows, so no caller falls back to
        # lifetimes under perf. Refuse rather than invent a figure.
        raise RunFailedError("perf servers are counted in windows only")

    def alive(self) -> bool:
        return self.child.poll() is None

    def left_behind(self) -> str | None:
        return self.child.left_behind

    def uncounted(self) -> list[str]:
        return []  # inherited counters follow every child; --processes root is a choice

    def failure(self) -> str | None:
        return None  # perf's complaints reach the windows (<not supported>, no ack)

    def stop(self) -> int:
        try:
            return self.child.stop(grace_s=STOP_GRACE_S)
        finally:
            self.cleanup()

    def cleanup(self) -> None:
        for fd in (self._ack, self._ctl):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._ctl = None
        self._ack = -1
        for fifo in (self.ctl_path, self.ack_path):
            fifo.unlink(missing_ok=True)
