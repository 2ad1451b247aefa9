"""The plane's processes: each started with its own log file and stopped by the pid this module started."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.ports import free_port  # noqa: F401 - where the plane imports it from


@dataclass
class Process:
    """One started component: its name, argv, log file and the Popen that holds its pid."""

    name: str
    argv: list[str]
    log: Path
    popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    #: The environment additions of the first start, kept for a restart.
    env: dict[str, str] | None = field(default=None, repr=False)

    @property
    def pid(self) -> int | None:
        """The pid this module started, None before start."""
        return self.popen.pid if self.popen else None

    def start(self, env: dict[str, str] | None = None) -> Process:
        """Start the process in a session of its own (so a terminal's Ctrl-C reaches only the launcher); a second
        start (after it stopped) runs the same command line with the same environment, its log appended."""
        if env is not None:
            self.env = env
        env = self.env
        with self.log.open("ab") as log:
            self.popen = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **(env or {})},
                start_new_session=True,
            )
        return self

    def running(self) -> bool:
        """True while the started process has not exited."""
        return self.popen is not None and self.popen.poll() is None

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM the pid this object started, then SIGKILL after `grace_s`; reaps it."""
        if self.popen is None or self.popen.poll() is not None:
            return
        self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                self.popen.kill()
            self.popen.wait(timeout=grace_s)

    def kill(self) -> None:
        """SIGKILL the started pid (a crash, for fault tests) and reap it."""
        if self.popen is not None and self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(timeout=10)

    def tail(self, lines: int = 30) -> str:
        """The last lines of the log, for an error message."""
        try:
            text = self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])
