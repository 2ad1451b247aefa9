"""`down` on a terminal asks about what it removes: the local server (pid, endpoint), or a Kubernetes namespace."""

from __future__ import annotations

import contextlib
import os
import pty
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from k3deploy.profile import load_profile
from k3deploy.targets.kubernetes.view import kubernetes_down_question
from k3deploy.targets.local import process
from k3deploy.targets.local.state import ServerRecord, write_record
from k3deploy.targets.local.status_view import local_down_question
from tests.conftest import REPO_ROOT, cli_env

pytestmark = pytest.mark.timeout(120)


def test_local_question_names_the_running_server() -> None:
    profile = load_profile("local-cpu")
    running = {"running": True, "pid": 4321, "endpoint": "http://127.0.0.1:18431", "state_dir": "/s"}
    assert (
        local_down_question(profile, False, running)
        == "Stop the local vLLM server of 'local-cpu' (pid 4321, http://127.0.0.1:18431)?"
    )
    assert local_down_question(profile, True, running) == (
        "Stop the local vLLM server of 'local-cpu' (pid 4321, http://127.0.0.1:18431) "
        "and delete the generated model and vLLM's cache under /s?"
    )
    assert local_down_question(profile, False, {"running": False, "state_dir": "/s"}) == (
        "No local vLLM server of 'local-cpu' is running (port 18431); clear its record?"
    )


def test_kubernetes_question_names_the_namespace() -> None:
    profile = load_profile("kimi-k3-gb300-tp16")
    assert (
        kubernetes_down_question(profile, False)
        == "Delete the deployment (weights kept) of 'kimi-k3-gb300-tp16' in namespace 'kimi-k3'?"
    )
    assert kubernetes_down_question(profile, True) == (
        "Delete everything, including the downloaded weights of 'kimi-k3-gb300-tp16' in namespace 'kimi-k3'?"
    )


def test_down_on_a_terminal_asks_about_the_local_server_and_no_keeps_it(tmp_path: Path) -> None:
    # A stand-in for the server, started and recorded as the local target starts and records vLLM.
    state_dir = tmp_path / "k3deploy" / "local-cpu"
    argv = [sys.executable, "-c", "import time; time.sleep(120)"]
    pid, created = process.start(argv, {}, state_dir / "server.log", state_dir, "id-1")
    server = psutil.Process(pid)
    try:
        write_record(
            state_dir / "server.json",
            ServerRecord(
                profile="local-cpu",
                pid=pid,
                create_time=created,
                host="127.0.0.1",
                server_id="id-1",
                port=18431,
                argv=argv,
                env={},
                argv_hash="0" * 16,
                log_path=str(state_dir / "server.log"),
                model_path=str(state_dir / "model"),
                rehearsal=True,
                started_at="2026-01-01T00:00:00+00:00",
            ),
        )
        primary, secondary = pty.openpty()
        os.write(primary, b"n\n")
        try:
            done = subprocess.run(
                [sys.executable, "-m", "k3deploy", "down", "-p", "local-cpu"],
                stdin=secondary,
                capture_output=True,
                text=True,
                timeout=90,
                cwd=REPO_ROOT,
                env=cli_env({"XDG_CACHE_HOME": str(tmp_path)}),
            )
        finally:
            os.close(secondary)
            os.close(primary)
        assert done.returncode == 2, done.stderr
        assert done.stderr.endswith(
            "not confirmed; nothing was changed\nhint: re-run and answer y, or pass --yes to go ahead without being asked\n"
        ), done.stderr
        assert (
            f"Stop the local vLLM server of 'local-cpu' (pid {server.pid}, http://127.0.0.1:18431)? [y/N]"
            in done.stderr
        )
        assert "namespace" not in done.stderr
        assert server.is_running() and server.status() != psutil.STATUS_ZOMBIE and (state_dir / "server.json").exists()
    finally:
        server.kill()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
