"""Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
JSON messages ending in NUL on file descriptors 3 and 4), so no websocket library and
no network port are needed. Used by the report tests and scripts/bench_report.py.

Each page load records what a user would see go wrong: console messages, JavaScript
exceptions, log entries (a Content-Security-Policy refusal lands there) and every
network request other than the page itself.

Flags: as root Chromium needs --no-sandbox; on a closed network the background
services (component updates, sync, QUIC probes) otherwise stall on refused connections
(measured here, see ../shared/README.md).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-pipe",
]
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find_chromium() -> str | None:
    env = os.environ.get("ICOUNT_CHROMIUM")
    if env:
        return env
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


_PAINTED = """window.__icountPainted = new Promise(done => addEventListener('load', () =>
  requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now())))));"""


class BrowserError(Exception):
    pass


@dataclass
class Load:
    """What one page load produced."""

    problems: list[str] = field(default_factory=list)  # console errors, exceptions, refusals
    requests: list[str] = field(default_factory=list)  # URLs other than the page's own


class Browser:
    def __init__(self, binary: str, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="icount-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire() -> None:  # in the child, before exec: the protocol's two descriptors
            # Through fresh numbers first: either pipe end may itself be 3 or 4.
            a, b = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            # Not close_fds: it would close 3 and 4 after wire(); Python's own
            # descriptors are close-on-exec anyway.
            close_fds=False,
            preexec_fn=wire,
            start_new_session=True,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._next = 0
        self._events: list[dict[str, Any]] = []
        self.session = ""
        try:
            target = self.call("Target.createTarget", url="about:blank")["targetId"]
            self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
                "sessionId"
            ]
            for domain in ("Page", "Runtime", "Log", "Network"):
                self.call(f"{domain}.enable")
            # Runs in every page before its own content (DevTools scripts are not the
            # page's, so its CSP does not refuse them): the time of the second frame
            # after load, when the loaded page has been laid out and painted.
            self.call("Page.addScriptToEvaluateOnNewDocument", source=_PAINTED)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ protocol

    def _send(self, msg: dict[str, Any]) -> None:
        data = json.dumps(msg).encode() + b"\0"
        while data:
            n = os.write(self._to_child, data)
            data = data[n:]

    def _recv(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("chromium did not answer in time")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise BrowserError(f"chromium exited: {self._stderr_tail()}")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        msg: dict[str, Any] = json.loads(raw)
        return msg

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        self._send(msg)
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._recv(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            if "method" in reply:
                self._events.append(reply)

    def wait_event(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        for i, ev in enumerate(self._events):
            if ev["method"] == method:
                return self._events.pop(i)
        while True:
            msg = self._recv(deadline)
            if msg.get("method") == method:
                return msg
            if "method" in msg:
                self._events.append(msg)

    # ------------------------------------------------------------ pages

    def load(self, path: Path, width: int = 1000, height: int = 800, dark: bool = False) -> Load:
        """Open `path` at this viewport and wait until it has loaded and painted."""
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=width < 600,
        )
        self.call(
            "Emulation.setEmulatedMedia",
            features=[{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}],
        )
        self._events.clear()
        url = path.resolve().as_uri()
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")
        # Two animation frames after load: the page has been laid out and painted.
        self.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        result = Load()
        for ev in self._events:
            m, p = ev["method"], ev.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning"):
                result.problems.append(f"console {p['type']}: {p.get('args')}")
            elif m == "Runtime.exceptionThrown":
                result.problems.append(f"exception: {p.get('exceptionDetails')}")
            elif m == "Log.entryAdded" and p["entry"].get("level") in ("error", "warning"):
                result.problems.append(f"log: {p['entry'].get('text')}")
            elif m == "Network.requestWillBeSent" and p["request"]["url"] != url:
                result.requests.append(p["request"]["url"])
            elif m == "Network.loadingFailed":
                result.problems.append(f"failed to load: {p.get('errorText')}")
        return result

    def evaluate(self, expression: str) -> Any:
        reply = self.call(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        if "exceptionDetails" in reply:
            raise BrowserError(f"{expression}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def count(self, selector: str) -> int:
        n = self.evaluate(f"document.querySelectorAll({json.dumps(selector)}).length")
        assert isinstance(n, int)
        return n

    def screenshot(self, out: Path, selector: str | None = None, full_page: bool = True) -> None:
        """A PNG of the whole page, of the viewport (full_page=False), or of the first
        element matching `selector`."""
        params: dict[str, Any] = {"format": "png"}
        if selector is not None:
            box = self.evaluate(
                f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
                ".getBoundingClientRect(); return [r.left + scrollX, r.top + scrollY, "
                "r.width, r.height]; })()"
            )
        elif full_page:
            box = self.evaluate(
                "[0, 0, document.documentElement.scrollWidth, "
                "document.documentElement.scrollHeight]"
            )
        else:
            box = None
        if box is not None:
            params["captureBeyondViewport"] = True
            x, y, w, h = box
            params["clip"] = {"x": x, "y": y, "width": w, "height": h, "scale": 1}
        data = self.call("Page.captureScreenshot", **params)["data"]
        out.write_bytes(base64.b64decode(data))

    def timing(self) -> dict[str, float]:
        """Milliseconds from the start of navigation to: DOM ready, load, and the second
        frame after load (the page laid out and painted), measured inside the page."""
        value = self.evaluate(
            """(async () => {
              const nav = performance.getEntriesByType('navigation')[0];
              return {dom_content_loaded: nav.domContentLoadedEventEnd, load: nav.loadEventEnd,
                      painted: await window.__icountPainted};
            })()"""
        )
        assert isinstance(value, dict)
        return {k: float(v) for k, v in value.items()}

    # ------------------------------------------------------------ teardown

    def _stderr_tail(self) -> str:
        try:
            self.proc.wait(timeout=5)
            err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
        except subprocess.TimeoutExpired:
            err = ""
        return err.strip().splitlines()[-1] if err.strip() else f"status {self.proc.returncode}"

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self._send({"id": 0, "method": "Browser.close", "params": {}})
                    self.proc.wait(timeout=10)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, 9)
                self.proc.wait(timeout=10)
            else:  # the browser's helpers live in its session: none outlives it
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, 9)
        finally:
            for fd in (self._to_child, self._from_child):
                with contextlib.suppress(OSError):
                    os.close(fd)
            if self.proc.stderr:
                self.proc.stderr.close()
            shutil.rmtree(self.profile, ignore_errors=True)
