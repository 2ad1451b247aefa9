"""`k3deploy watch` in a pseudo-terminal: the live view a person sees, read back from the terminal's output."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time
from pathlib import Path

from tests.conftest import cli_env
from tests.observe.watch_servers import MetricsScript, serve

DATA = Path(__file__).parent.parent / "measure" / "data"
#: CSI and OSC sequences rich's live view moves the cursor and hides it with.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def _read_until(fd: int, wanted: list[str], budget_s: float) -> str:
    """Terminal output (escape sequences removed) until every string of `wanted` appeared, or the budget ran out."""
    raw = b""
    end = time.monotonic() + budget_s
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            raw += chunk
            screen = _ANSI.sub("", raw.decode("utf-8", "replace"))
            if all(w in screen for w in wanted):
                return screen
    return _ANSI.sub("", raw.decode("utf-8", "replace"))


def test_live_view_in_a_terminal_shows_figures_targets_and_ends_on_ctrl_c() -> None:
    bodies: list[str | int] = [(DATA / "metrics_before.prom").read_text(), (DATA / "metrics_after.prom").read_text()]
    with serve(MetricsScript(bodies)) as url:
        pid, fd = pty.fork()
        if pid == 0:  # the child: k3deploy on the terminal, as a person starts it
            env = cli_env({"TERM": "xterm-256color"})
            env.pop("NO_COLOR", None)
            env.pop("COLUMNS", None)
            os.execvpe(
                sys.executable,
                [
                    sys.executable,
                    "-m",
                    "k3deploy",
                    "watch",
                    "-p",
                    "local-cpu",
                    "--endpoint",
                    url,
                    "--interval",
                    "0.3s",
                    "--set",
                    "targets.decode_tok_s=1000",
                ],
                env,
            )
        status: int | None = None
        try:
            fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
            wanted = [
                "decode tok/s per request",
                "715.0",
                "≥ 1000.0",
                "▼ below target",
                "mean acceptance length",
                "3.32",
                "≥ 2.00",
                "acceptance per position",
                "0: 95 %",
                "output tok/s",
                "KV-cache usage",
            ]
            screen = _read_until(fd, wanted, budget_s=60)
            missing = [w for w in wanted if w not in screen]
            assert missing == [], screen[-3000:]
            decode_row = next(line for line in screen.splitlines() if "decode tok/s per request" in line)
            assert "715.0" in decode_row and "below target" in decode_row
            os.write(fd, b"\x03")  # Ctrl-C typed at the terminal: SIGINT to its foreground process group
            rest = _read_until(fd, ["never printed"], budget_s=30)
            _, status = os.waitpid(pid, 0)
        finally:
            if status is None:  # not reaped yet, so the pid is still our child's (pty.fork)
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            os.close(fd)
    assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, rest
    assert "Traceback" not in screen + rest and "KeyboardInterrupt" not in rest


def test_first_scrape_failing_in_a_terminal_is_only_the_error() -> None:
    with serve(MetricsScript([""])) as url:
        pass  # nothing listens there any more
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(
            sys.executable,
            [sys.executable, "-m", "k3deploy", "watch", "--endpoint", url],
            cli_env({"TERM": "xterm-256color"}),
        )
    status: int | None = None
    try:
        screen = _read_until(fd, ["never printed"], budget_s=60)  # to the end of its output
        _, status = os.waitpid(pid, 0)
    finally:
        if status is None:  # not reaped yet, so the pid is still our child's (pty.fork)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 3
    assert "error: first scrape failed: cannot connect to" in screen and "hint: " in screen
    assert "k3deploy watch ·" not in screen and "waiting for the second scrape" not in screen  # no view was drawn
