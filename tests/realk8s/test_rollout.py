"""`k3deploy apply`, `status` and `down` of the GB300 set against the real plane: the real LWS controller makes
the group's StatefulSets, the real scheduler places the pods on four GB300 trays of one clique, the real PV
controller binds the weight cache, the real Job controller completes the Jobs KWOK's pods finish, and the real
garbage collector removes what `down` deletes. The set is rendered with its ComputeDomain: the DRA driver stand-in
(tests/realk8s/dra.py) makes its claim template and the real scheduler allocates each pod's IMEX channel."""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest

from tests.conftest import run_cli
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.plane import Plane

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]
PROFILE = "kimi-k3-gb300-tp16"
LWS = "kimi-k3-gb300-tp16"


def k3(plane: Plane, namespace: str, command: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI against the plane with the admin kubeconfig, in `namespace`."""
    assert plane.admin_kubeconfig is not None
    return run_cli(
        command,
        "-p",
        PROFILE,
        "--kubeconfig",
        str(plane.admin_kubeconfig),
        "-n",
        namespace,
        *args,
        timeout=300,
    )


def test_apply_then_status_then_down_on_the_real_plane(realk8s: Plane) -> None:
    namespace = f"k3-{uuid.uuid4().hex[:8]}"
    api = realk8s.api
    applied = k3(realk8s, namespace, "apply", "--timeout", "240s")
    assert applied.returncode == 0, applied.stderr

    live = api.get(resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", namespace, LWS))
    assert live["status"]["readyReplicas"] == 1
    sets = {s["metadata"]["name"] for s in api.get(resource_path("apps/v1", "statefulsets", namespace))["items"]}
    assert sets == {LWS, f"{LWS}-0"}
    pods = [
        p
        for p in api.get(resource_path("v1", "pods", namespace))["items"]
        if p["metadata"]["labels"].get("leaderworkerset.sigs.k8s.io/name") == LWS
    ]
    assert len(pods) == 4 and all(p["status"]["phase"] == "Running" for p in pods)
    # The real ServiceAccount admission plugin mounted no API token into any pod of the set but the smoke Job's,
    # which labels the leaders its gate passed (smoke.gate_traffic, under its own Role): no serving pod calls the
    # Kubernetes API, so none has one.
    every_pod = api.get(resource_path("v1", "pods", namespace))["items"]
    assert every_pod and not [
        (p["metadata"]["name"], v["name"])
        for p in every_pod
        for v in p["spec"].get("volumes", [])
        if v["name"].startswith("kube-api-access-") and not p["metadata"]["name"].startswith(f"{LWS}-smoke-")
    ]
    nodes = {p["spec"]["nodeName"] for p in pods}
    cliques = {api.get(f"/api/v1/nodes/{n}")["metadata"]["labels"]["nvidia.com/gpu.clique"] for n in nodes}
    assert len(nodes) == 4 and len(cliques) == 1
    claim = api.get(resource_path("v1", "persistentvolumeclaims", namespace, f"{LWS}-model-cache"))
    assert claim["status"]["phase"] == "Bound"
    # Provisioned for the claim (the stand-in CSI driver) and bound by the real PV controller.
    assert claim["spec"]["volumeName"] == f"pvc-{claim['metadata']['uid']}"
    jobs = {j["metadata"]["name"]: j for j in api.get(resource_path("batch/v1", "jobs", namespace))["items"]}
    (prefetch,) = [job for name, job in jobs.items() if name.startswith(f"{LWS}-prefetch-")]
    assert prefetch["status"].get("succeeded") == 1

    state = k3(realk8s, namespace, "status", "-o", "json")
    assert state.returncode == 0, state.stderr
    report = json.loads(state.stdout)
    assert report["ready"] is True

    down = k3(realk8s, namespace, "down", "--yes", "--timeout", "120s")
    assert down.returncode == 0, down.stderr
    assert api.find(resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", namespace, LWS)) is None

    def gone() -> bool:
        left = api.get(resource_path("v1", "pods", namespace))["items"]
        return not left and not api.get(resource_path("apps/v1", "statefulsets", namespace))["items"]

    wait_until("the garbage collector to remove the group", gone, 120)
    # The weight cache is kept without --purge.
    assert api.find(resource_path("v1", "persistentvolumeclaims", namespace, f"{LWS}-model-cache")) is not None
