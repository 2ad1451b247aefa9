"""A broken local profile stops `up` at preflight with one clear line and exit 1, and starts no process.

No vLLM server runs here: each failure is caught before apply. The state directory is per test, so nothing
touches a user's own server.
"""

from __future__ import annotations

import json
import os
import socket
import venv
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.conftest import run_cli
from tests.integration.vllm_server import free_port

#: The port and model checks are asserted to be the only failures, which needs a working vLLM beside them: the
#: integration tier's (a unit run without vLLM must not pass or fail differently by skipping them).
needs_vllm = pytest.mark.integration


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


def up(state_dir: Path, port: int, *sets: str) -> tuple[int, dict, str]:
    """`k3deploy up -p local-cpu` in `state_dir` on `port`: exit code, JSON summary, stderr."""
    args = [
        "up",
        "-p",
        "local-cpu",
        "-o",
        "json",
        "--set",
        f"local.state_dir={state_dir}",
        "--set",
        f"vllm.port={port}",
    ]
    for item in sets:
        args += ["--set", item]
    done = run_cli(*args, timeout=300)
    return done.returncode, json.loads(done.stdout), done.stderr


def assert_stopped_at_preflight(code: int, summary: dict, stderr: str, state_dir: Path, check_line: str) -> None:
    assert code == 1
    ran = [(s["name"], s["status"]) for s in summary["stages"]]
    assert ran[0] == ("preflight", "fail")
    assert not {"apply", "wait", "smoke"} & {name for name, _ in ran}
    assert f"    fail {check_line}\n" in stderr
    error_lines = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert error_lines == [f"error: 1 preflight check(s) failed, first: {check_line}"]
    assert "Traceback" not in stderr
    assert not (state_dir / "server.json").exists() and not (state_dir / "server.log").exists()


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port another program listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield int(sock.getsockname()[1])


@needs_vllm
def test_port_in_use_fails_preflight(state_dir: Path, busy_port: int) -> None:
    code, summary, stderr = up(state_dir, busy_port)
    # The holder is named: this test's own process, by pid and the start of its command line.
    holder = f"pid {os.getpid()} ({' '.join(psutil.Process().cmdline()[:4])})"
    line = f"local.port: port {busy_port} on 127.0.0.1 is in use by another process: {holder}"
    assert_stopped_at_preflight(code, summary, stderr, state_dir, line)
    assert summary["hint"] == "stop what listens there, or choose another port with --set vllm.port=N"


@needs_vllm
def test_missing_model_folder_fails_preflight(state_dir: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    code, summary, stderr = up(state_dir, free_port(), "model.rehearsal=false", f"model.id={missing}")
    assert_stopped_at_preflight(code, summary, stderr, state_dir, f"local.model: model path {missing} does not exist")


def test_interpreter_without_vllm_fails_preflight(state_dir: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare-venv"
    venv.create(bare, with_pip=False)
    python = bare / "bin" / "python"
    code, summary, stderr = up(state_dir, free_port(), f"local.python={python}")
    assert_stopped_at_preflight(code, summary, stderr, state_dir, f"local.vllm: vLLM is not importable by {python}")
    assert summary["hint"].startswith("run `bash .ci/setup`")


def test_interpreter_that_does_not_exist_fails_preflight(state_dir: Path, tmp_path: Path) -> None:
    python = tmp_path / "nowhere" / "python"
    code, summary, stderr = up(state_dir, free_port(), f"local.python={python}")
    assert_stopped_at_preflight(code, summary, stderr, state_dir, f"local.vllm: interpreter {python} not found")
