"""`run_cli` (the CLI in the test's process) answers as `python -m k3deploy` does, and leaves the process as it was."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from tests.conftest import EXAMPLE_SETS, run_cli, run_cli_process

K3 = "kimi-k3-gb300-tp16"


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        [],
        ["render", "--no-such-flag"],
        ["smoke", "--endpoint", "notaurl"],
        ["render", "-p", K3, "--set", "no_such.field=1"],
        ["plan", "-p", K3, "--set", "model.checkpoint_bytes=9000000000000", "-o", "json"],
        ["render", "-p", K3, *EXAMPLE_SETS, "-o", "-"],
        ["profiles"],
    ],
    ids=["version", "bare", "bad-flag", "bad-endpoint", "bad-profile", "plan-exit-1", "render-stdout", "profiles"],
)
def test_in_process_and_subprocess_give_the_same_answer(args: list[str]) -> None:
    inside, outside = run_cli(*args), run_cli_process(*args)
    assert (inside.returncode, inside.stdout, inside.stderr) == (outside.returncode, outside.stdout, outside.stderr)


def test_a_run_leaves_the_process_as_it_was() -> None:
    handler, streams, temp = signal.getsignal(signal.SIGTERM), (sys.stdout, sys.stderr, sys.stdin), tempfile.tempdir
    assert run_cli("smoke", "--endpoint", "notaurl", env={"K3DEPLOY_IN_PROCESS_PROBE": "1"}).returncode == 2
    assert signal.getsignal(signal.SIGTERM) is handler
    assert (sys.stdout, sys.stderr, sys.stdin) == streams and tempfile.tempdir == temp
    assert "K3DEPLOY_IN_PROCESS_PROBE" not in os.environ


def test_what_other_threads_print_meanwhile_is_not_the_commands_output() -> None:
    stop = threading.Event()

    def chatter() -> None:
        while not stop.is_set():
            print("a test server's noise", file=sys.stderr)
            time.sleep(0.001)

    thread = threading.Thread(target=chatter, daemon=True)
    thread.start()
    try:
        result = run_cli("render", "-p", K3, *EXAMPLE_SETS, "-o", "-")
    finally:
        stop.set()
        thread.join()
    assert result.returncode == 0 and "noise" not in result.stderr + result.stdout


def test_a_run_past_its_timeout_is_interrupted_and_raises_as_subprocess_run_does() -> None:
    with socket.socket() as listener:  # accepts, never answers: smoke waits for /health until interrupted
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        with pytest.raises(subprocess.TimeoutExpired) as timed_out:
            run_cli("smoke", "-p", "local-cpu", "--endpoint", url, "--wait-ready", "60s", timeout=2)
    assert "error: interrupted" in (timed_out.value.stderr or "")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
