"""The NVIDIA DRA driver stand-in (tests/realk8s/dra.py) with the real scheduler and resourceclaim controller: what
the driver publishes, the ComputeDomain's workload claim template, allocation of its IMEX channel on the pod's node,
the domain's status and the IMEX-ready gate, and clean-up through the controller's finalizer."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.dra import CD_API, CD_DRIVER, CD_LABEL, FINALIZER, GPU_DRIVER, RESOURCE
from tests.realk8s.objects import GPU_TAINT
from tests.realk8s.plane import Plane
from tests.realk8s.realnode import REAL_NODE_KEY
from tests.realk8s.stages import IMEX_READY_ANNOTATION

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]


def _domain(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": CD_API,
        "kind": "ComputeDomain",
        "metadata": {"name": "imex", "namespace": namespace},
        "spec": {"numNodes": 0, "channel": {"allocationMode": "Single", "resourceClaimTemplate": {"name": "imex-ch"}}},
    }


def _pod(name: str, namespace: str, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "tolerations": [{"key": GPU_TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}],
            "automountServiceAccountToken": False,
            "resourceClaims": [{"name": "imex", "resourceClaimTemplateName": "imex-ch"}],
            "containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "imex"}]}}],
        },
    }


def test_the_driver_publishes_its_classes_and_one_slice_per_driver_and_gpu_node(realk8s: Plane) -> None:
    api = realk8s.api
    classes = {c["metadata"]["name"] for c in api.get(resource_path(RESOURCE, "deviceclasses"))["items"]}
    assert {
        "gpu.nvidia.com",
        "compute-domain-daemon.nvidia.com",
        "compute-domain-default-channel.nvidia.com",
    } <= classes
    slices = api.get(resource_path(RESOURCE, "resourceslices"))["items"]
    gpu_nodes = [
        n["metadata"]["name"]
        for n in api.get("/api/v1/nodes")["items"]
        if n["metadata"]["labels"].get("nvidia.com/gpu.present") == "true"
        or n["metadata"]["labels"].get(REAL_NODE_KEY) == "true"  # a real node the session joined, if any
    ]
    for driver, devices in ((GPU_DRIVER, ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]), (CD_DRIVER, ["channel-0", "daemon-0"])):
        mine = {s["spec"]["nodeName"]: s for s in slices if s["spec"]["driver"] == driver}
        assert sorted(mine) == sorted(gpu_nodes)
        assert sorted(d["name"] for d in mine[gpu_nodes[0]]["spec"]["devices"]) == devices
    gpu = next(s for s in slices if s["spec"]["driver"] == GPU_DRIVER)["spec"]["devices"][0]
    assert gpu["attributes"]["productName"] == {"string": "NVIDIA GB300"}
    assert gpu["attributes"]["driverVersion"] == {"version": "580.95.5"}


def test_a_compute_domain_channel_is_allocated_by_the_real_scheduler_and_gates_the_pod(
    realk8s: Plane, namespace: str
) -> None:
    api = realk8s.api
    node = "gb300-12"  # the last tray of the last clique: the other tests fill cliques from the first
    cd_path = resource_path(CD_API, "computedomains", namespace, "imex")
    api.create(resource_path(CD_API, "computedomains", namespace), _domain(namespace))
    template = wait_until(
        "the workload claim template",
        lambda: api.find(resource_path(RESOURCE, "resourceclaimtemplates", namespace, "imex-ch")),
        60,
    )
    cd = api.get(cd_path)
    assert template["metadata"]["labels"][CD_LABEL] == cd["metadata"]["uid"]
    assert FINALIZER in cd["metadata"]["finalizers"]
    [config] = template["spec"]["spec"]["devices"]["config"]
    assert config["opaque"]["parameters"]["domainID"] == cd["metadata"]["uid"]

    pods = f"/api/v1/namespaces/{namespace}/pods"

    def running() -> dict[str, Any] | None:
        pod = api.get(f"{pods}/first")
        return pod if pod["status"].get("phase") == "Running" else None

    assert realk8s.dra is not None
    with realk8s.dra.paused():
        api.create(pods, _pod("first", namespace, node))

        def held() -> dict[str, Any] | None:
            pod = api.get(f"{pods}/first")
            waiting = [(c.get("state") or {}).get("waiting", {}) for c in pod["status"].get("containerStatuses", [])]
            return pod if waiting and waiting[0].get("reason") == "ContainerCreating" else None

        # Scheduled with its channel allocated, but the driver has not reported the node Ready in the domain.
        wait_until("the pod to be held in ContainerCreating", held, 60)
        time.sleep(2)
        assert held() is not None and running() is None
        assert api.get(cd_path).get("status", {}).get("nodes") in (None, [])

    pod = wait_until("the pod to run", running, 120)
    assert pod["metadata"]["annotations"][IMEX_READY_ANNOTATION] == "true"
    [claim_status] = pod["status"]["resourceClaimStatuses"]
    # Made from the template by the real resourceclaim controller, allocated by the real scheduler.
    claim = api.get(resource_path(RESOURCE, "resourceclaims", namespace, claim_status["resourceClaimName"]))
    assert claim["metadata"]["ownerReferences"][0]["name"] == "first"
    [result] = claim["status"]["allocation"]["devices"]["results"]
    assert (result["driver"], result["pool"], result["device"]) == (CD_DRIVER, node, "channel-0")
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["first"]
    status = api.get(cd_path)["status"]
    assert status["status"] == "Ready"
    labels = api.get(f"/api/v1/nodes/{node}")["metadata"]["labels"]
    assert [(n["name"], n["cliqueID"], n["index"]) for n in status["nodes"]] == [
        (node, labels["nvidia.com/gpu.clique"], 0)
    ]

    # The node's only default channel is taken: a second pod of the domain there cannot be scheduled.
    api.create(pods, _pod("second", namespace, node))

    def unschedulable() -> str | None:
        pod = api.get(f"{pods}/second")
        cond = {c["type"]: c for c in pod["status"].get("conditions", [])}.get("PodScheduled")
        return cond["message"] if cond and cond["status"] == "False" else None

    assert "cannot allocate all claims" in wait_until("the scheduler to refuse", unschedulable, 60)

    for name in ("first", "second"):
        api.delete(f"{pods}/{name}?gracePeriodSeconds=0")
    api.delete(cd_path)
    wait_until("the domain to go", lambda: api.find(cd_path) is None, 60)
    assert api.find(resource_path(RESOURCE, "resourceclaimtemplates", namespace, "imex-ch")) is None
