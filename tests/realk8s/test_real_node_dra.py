"""A ComputeDomain channel claim on a real node: the real scheduler allocates the node's channel (its ResourceSlice
from tests/realk8s/dra.py), the kubelet's DRA manager calls NodePrepareResources on the compute-domain kubelet plugin
stand-in (tests/realk8s/plugins/dra-plugin) before the container starts, and NodeUnprepareResources after."""

from __future__ import annotations

from typing import Any

import pytest

from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.plane import Plane
from tests.realk8s.realnode import RealNode
from tests.realk8s.standins import container, pod

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]

POD_START_S = 90.0
RESOURCE = "resource.k8s.io/v1"


def test_a_channel_claim_is_prepared_by_the_kubelets_dra_manager(
    realk8s: Plane, real_node: RealNode, namespace: str
) -> None:
    claim = {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaim",
        "metadata": {"name": "channel"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "channel", "exactly": {"deviceClassName": "compute-domain-default-channel.nvidia.com"}}
                ]
            }
        },
    }
    realk8s.api.create(resource_path(RESOURCE, "resourceclaims", namespace), claim)
    spec = {
        "containers": [container("c", "exec sleep 3600", resources={"claims": [{"name": "channel"}]})],
        "resourceClaims": [{"name": "channel", "resourceClaimName": "channel"}],
        "terminationGracePeriodSeconds": 0,
    }
    realk8s.api.create(resource_path("v1", "pods", namespace), pod("holder", spec))

    def running() -> dict[str, Any] | None:
        live = realk8s.api.get(resource_path("v1", "pods", namespace, "holder"))
        return live if live["status"].get("phase") == "Running" else None

    try:
        wait_until("the pod to run", running, POD_START_S)
    except TimeoutError:
        events = realk8s.api.get(resource_path("v1", "events", namespace))["items"]
        raise AssertionError(
            "\n".join(f"{e['reason']}: {e['message']}" for e in events) + "\n" + real_node.tail()
        ) from None
    live = realk8s.api.get(resource_path(RESOURCE, "resourceclaims", namespace, "channel"))
    results = live["status"]["allocation"]["devices"]["results"]
    assert [(r["driver"], r["pool"], r["device"]) for r in results] == [
        ("compute-domain.nvidia.com", real_node.name, "channel-0")
    ]
    log = real_node.dir / "logs" / "dra-plugin.log"
    assert f'"prepared" claim="{namespace}/channel" devices=1' in log.read_text()
    realk8s.api.request("DELETE", resource_path("v1", "pods", namespace, "holder"))
    wait_until(
        "the pod to be gone", lambda: realk8s.api.find(resource_path("v1", "pods", namespace, "holder")) is None, 60
    )
