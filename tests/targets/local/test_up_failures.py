"""`up` on the local target through the real CLI when things go wrong: a broken /metrics, SIGTERM, preflight parity."""

from __future__ import annotations

import os
import signal
import socket

import pytest

from tests.integration.vllm_server import alive
from tests.targets.local.conftest import FakeLocal, wait_for


def test_nan_counters_fail_smoke_with_a_reason_and_roll_back(fake_local: FakeLocal) -> None:
    code, summary, stderr = fake_local.json("up", "vllm.env.FAKE_VLLM_METRICS='nan'")
    assert code == 1, stderr
    assert "Traceback" not in stderr
    assert [(s["name"], s["status"]) for s in summary["stages"]][-1] == ("smoke", "fail")
    checks = {c["name"]: c for c in summary["smoke"]["checks"]}
    assert checks["speculative decoding"]["status"] == "fail"
    assert checks["speculative decoding"]["detail"].startswith(
        "cannot verify speculative decoding: /metrics reported a non-finite spec-decode counter: "
        "vllm:spec_decode_num_drafts_total{"
    )
    pid = int(summary["stages"][2]["detail"].removeprefix("started vLLM (pid ").split(")")[0])
    assert summary["rollback"] == f"stopped the new server (pid {pid}); nothing ran before"
    assert not alive(pid)
    assert "summary (up local-cpu on local):" in stderr


def test_preflight_runs_the_checks_up_runs(fake_local: FakeLocal) -> None:
    code, report, stderr = fake_local.json("preflight")
    assert code == 0, stderr
    names = [c["name"] for c in report["checks"]]
    assert names == ["local.vllm", "local.model", "local.cpu", "local.ram", "local.disk", "local.port"]
    # A port in use fails preflight exactly as it fails up's preflight stage.
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", fake_local.port))
        busy.listen(1)
        code, report, _ = fake_local.json("preflight")
        assert code == 1
        port = next(c for c in report["checks"] if c["name"] == "local.port")
        # The process holding the port is named: this test's own.
        assert port["status"] == "fail" and port["detail"].startswith(
            f"port {fake_local.port} on 127.0.0.1 is in use by another process: pid {os.getpid()} ("
        )
        code, summary, _ = fake_local.json("up")
        assert (code, summary["stages"][0]["name"], summary["stages"][0]["status"]) == (1, "preflight", "fail")
        assert summary["error"] == f"1 preflight check(s) failed, first: local.port: {port['detail']}"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_starting_leaves_no_lock_or_temporary_file(fake_local: FakeLocal, sig: signal.Signals) -> None:
    proc = fake_local.popen("up", "vllm.env.FAKE_VLLM_START_DELAY_S='30'")
    try:
        assert wait_for(lambda: (fake_local.state_dir / "server.json").exists(), 60)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == (143 if sig == signal.SIGTERM else 130), err
    assert "error: interrupted" in err and "Traceback" not in err
    assert not (fake_local.state_dir / "k3deploy.lock").exists()
    assert not [p for p in fake_local.state_dir.iterdir() if p.name.startswith(".")]  # no half-written record
    # The server it started is recorded, so down finds and stops it.
    pid = fake_local.record()["pid"]
    assert fake_local.run("down", extra=("--yes",)).stderr.strip() == f"down: stopped vLLM (pid {pid})"
    assert list(fake_local.tmp.iterdir()) == []


@pytest.mark.integration  # the rehearsal model is generated with transformers, which comes with vLLM
def test_sigterm_while_the_rehearsal_model_is_generated_removes_its_temporary_folder(fake_local: FakeLocal) -> None:
    proc = fake_local.popen(
        "up", "model.rehearsal=true", "model.id=rehearsal-llama-tiny", "speculative.model=rehearsal-llama-tiny"
    )
    try:
        assert wait_for(lambda: any(p.name.startswith(".model.") for p in fake_local.state_dir.glob(".*")), 120)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert sorted(p.name for p in fake_local.state_dir.iterdir()) == []
