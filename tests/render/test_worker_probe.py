"""The headless worker pods' livenessProbe (render/worker_probe.py): an exec of the worker_alive script with the GPUs
per node, judged only after the start-up budget; the leader keeps its /health probes; off with
kubernetes.worker_liveness false. The script itself is tests/pod_scripts/test_worker_alive.py's."""

from __future__ import annotations

from typing import Any

from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.render.worker_probe import script_text

K3 = "kimi-k3-gb300-tp16"


def containers(sets: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    [lws] = [m.obj for m in build(load_profile(K3, sets)) if m.kind == "LeaderWorkerSet"]
    template = lws["spec"]["leaderWorkerTemplate"]
    leader, worker = (
        next(c for c in template[role]["spec"]["containers"] if c["name"] == "vllm")
        for role in ("leaderTemplate", "workerTemplate")
    )
    return leader, worker


def test_the_worker_is_probed_by_its_processes_after_the_start_up_budget() -> None:
    profile = load_profile(K3)
    leader, worker = containers([])
    assert "--headless" in " ".join(worker["command"] + worker.get("args", []))
    probe = worker["livenessProbe"]
    assert probe["exec"]["command"] == ["python3", "-c", script_text(), str(profile.parallel.gpus_per_node)]
    assert probe["initialDelaySeconds"] == profile.startup_budget.total_s
    assert (probe["periodSeconds"], probe["failureThreshold"]) == (30, 4)
    assert "startupProbe" not in worker and "readinessProbe" not in worker
    assert leader["livenessProbe"]["httpGet"]["path"] == "/health"
    compile(script_text(), "worker-alive", "exec")  # what python3 -c runs is the whole script


def test_off_there_is_no_worker_probe() -> None:
    _, worker = containers(["kubernetes.worker_liveness=false"])
    assert "livenessProbe" not in worker
