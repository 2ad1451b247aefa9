"""A headless Chromium driven over the Chrome DevTools Protocol on a pipe (`--remote-debugging-pipe`).

Why not a library: playwright and pyppeteer download their own browser (unreachable here), and the PyPI CDP
clients speak CDP over a WebSocket, which needs a debugging port on the machine; the pipe needs none and no
network at all. The protocol on the pipe is the one Chromium's own DevToolsPipeHandler implements
(chromium/src, content/browser/devtools/devtools_pipe_handler.cc): JSON messages, each ended by a NUL byte, read
from fd 3 and written to fd 4; commands carry an `id` and answers echo it; with `Target.attachToTarget
{flatten: true}` page commands and events carry a `sessionId`. Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

#: Flags for a headless run as root on a machine without a display, GPU or D-Bus.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--remote-debugging-pipe",
)


def chromium_binary() -> str | None:
    """The Chromium `.ci/chromium` linked into the venv, else one on PATH."""
    beside = Path(sys.prefix) / "bin" / "chromium"
    if beside.exists():
        return str(beside)
    return shutil.which("chromium")


class CDPError(Exception):
    """An error answer to a command, or a wait that ran out."""


class Browser:
    """One Chromium process and its pipe; `call` sends a command and waits for its answer, events are kept."""

    def __init__(self, binary: str, profile_dir: Path, timeout_s: float = 60.0) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # bash (dash takes no fd above 9) puts the pipe ends at fd 3 and 4 (what Chromium reads and writes) and closes the originals.
        script = f'exec "$0" "$@" 3<&{to_chrome_r} 4>&{from_chrome_w} {to_chrome_r}<&- {from_chrome_w}>&-'
        log = (profile_dir.parent / "chromium.log").open("wb")  # its D-Bus complaints; read only when it fails
        self.proc = subprocess.Popen(
            ["bash", "-c", script, binary, *FLAGS, f"--user-data-dir={profile_dir}", "about:blank"],
            pass_fds=(to_chrome_r, from_chrome_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        log.close()
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.timeout_s = timeout_s
        self.events: list[dict[str, Any]] = []
        self._answers: queue.Queue[dict[str, Any]] = queue.Queue()
        self._next_id = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buffer = b""
        with os.fdopen(self._from_chrome, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                buffer += chunk
                *messages, buffer = buffer.split(b"\0")
                for raw in messages:
                    message = json.loads(raw)
                    if "id" in message:
                        self._answers.put(message)
                    else:
                        self.events.append(message)

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        """Send a command; its result, or CDPError for an error answer or no answer within the timeout."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                answer = self._answers.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise CDPError(f"{method}: no answer within {self.timeout_s:g} s") from None
            if answer["id"] == self._next_id:
                if "error" in answer:
                    raise CDPError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result

    def wait_event(self, method: str, session: str | None = None) -> dict[str, Any]:
        """The first event `method` (of `session`), waiting up to the timeout."""
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            for event in self.events:
                if event.get("method") == method and (session is None or event.get("sessionId") == session):
                    return event
            time.sleep(0.05)
        raise CDPError(f"no {method} event within {self.timeout_s:g} s")

    def close(self) -> None:
        """Ask the browser to quit; kill it (the process this object started) if it does not within 10 s."""
        with contextlib.suppress(CDPError, OSError):
            self.call("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.close(self._to_chrome)
