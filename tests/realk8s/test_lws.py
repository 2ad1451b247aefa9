"""The real LeaderWorkerSet controller and its webhooks on the plane: an LWS makes StatefulSets and pods, the real
scheduler places them on the GB300 nodes, and KWOK makes them Running and Ready."""

from __future__ import annotations

from typing import Any

import pytest

from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.plane import Plane

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]
LWS_API = "leaderworkerset.x-k8s.io/v1"


def lws(name: str, size: int, replicas: int = 1) -> dict[str, Any]:
    """A LeaderWorkerSet of `replicas` groups of `size` pods, each pod taking a whole 4-GPU GB300 tray."""
    template = {
        "spec": {
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-GB300"},
            "containers": [
                {"name": "vllm", "image": "vllm/vllm-openai:v0", "resources": {"limits": {"nvidia.com/gpu": "4"}}}
            ],
        }
    }
    return {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "leaderWorkerTemplate": {"size": size, "workerTemplate": template}},
    }


def test_an_lws_makes_real_statefulsets_and_pods_that_kwok_runs(realk8s: Plane, namespace: str) -> None:
    api = realk8s.api
    created = api.create(resource_path(LWS_API, "leaderworkersets", namespace), lws("demo", size=2))
    # The mutating webhook (served by the controller on 127.0.0.1, registered by URL) filled the defaults.
    assert created["spec"]["rolloutStrategy"]["type"] == "RollingUpdate"
    assert created["spec"]["startupPolicy"] == "LeaderCreated"

    def available() -> dict | None:
        live = api.get(resource_path(LWS_API, "leaderworkersets", namespace, "demo"))
        conditions = {c["type"]: c["status"] for c in live.get("status", {}).get("conditions", [])}
        return live if conditions.get("Available") == "True" and live["status"].get("readyReplicas") == 1 else None

    wait_until("the LeaderWorkerSet to be Available", available, 120)
    sets = api.get(resource_path("apps/v1", "statefulsets", namespace))["items"]
    assert sorted(s["metadata"]["name"] for s in sets) == ["demo", "demo-0"]
    owners = {s["metadata"]["name"]: s["metadata"]["ownerReferences"][0]["kind"] for s in sets}
    assert owners == {"demo": "LeaderWorkerSet", "demo-0": "Pod"}
    pods = {p["metadata"]["name"]: p for p in api.get(resource_path("v1", "pods", namespace))["items"]}
    assert sorted(pods) == ["demo-0", "demo-0-1"]
    nodes = {p["spec"]["nodeName"] for p in pods.values()}
    assert len(nodes) == 2 and all(n.startswith("gb300-") for n in nodes)
    for pod in pods.values():
        assert pod["status"]["phase"] == "Running"
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0].get("env", [])}
        # The pod webhook injected the group's addressing.
        assert env["LWS_GROUP_SIZE"] == "2"
        assert env["LWS_LEADER_ADDRESS"].startswith(f"demo-0.demo.{namespace}")
    assert api.get(resource_path("apps/v1", "controllerrevisions", namespace))["items"]


def test_the_validating_webhook_refuses_an_invalid_lws(realk8s: Plane, namespace: str) -> None:
    bad = lws("bad", size=2)
    bad["spec"]["rolloutStrategy"] = {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 0, "maxSurge": 0},
    }
    response = realk8s.api.request("POST", resource_path(LWS_API, "leaderworkersets", namespace), json=bad)
    assert response.status_code in (400, 403, 422), response.text
    message = response.json()["message"]
    assert 'admission webhook "vleaderworkerset.kb.io" denied the request' in message
    assert "must not be 0 when `maxSurge` is 0" in message
