"""kubernetes#127004 on a real 1.34 kubelet: a pod spec naming one PersistentVolumeClaim in two pod volumes never
finishes mounting (the volume manager waits for both names of the one volume and finds one; fixed by #122140, first
in v1.35.0-alpha.1), while the same mounts from one volume start at once. The serving templates rendered that form
(issue 43, point 1): this builds both forms explicitly, so it shows the kubelet's behaviour whatever the render does."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.plane import Plane
from tests.realk8s.realnode import RealNode
from tests.realk8s.standins import container, pod

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]

POD_START_S = 90.0
#: How long the two-volume pod is watched after the one-volume pod ran: ~40 times what a pod of the real node takes
#: (~1 s), well short of the 14 min the hang was seen to last, and of the kubelet's 2 min 3 s mount wait.
HANG_BOUND_S = 45.0


def _claim(plane: Plane, namespace: str, node: RealNode, tmp_path: Path) -> str:
    pv_name = f"{namespace}-weights"
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "model.bin").write_text("weights\n")
    (tmp_path / "weights").chmod(0o777)
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": pv_name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "",
            "hostPath": {"path": str(tmp_path / "weights"), "type": "Directory"},
            "claimRef": {"namespace": namespace, "name": "weights"},
        },
    }
    plane.api.create("/api/v1/persistentvolumes", volume)
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "weights"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "",
            "volumeName": pv_name,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    plane.api.create(resource_path("v1", "persistentvolumeclaims", namespace), claim)
    wait_until(
        "the claim to be Bound",
        lambda: (
            plane.api.get(resource_path("v1", "persistentvolumeclaims", namespace, "weights"))["status"].get("phase")
            == "Bound"
        ),
        POD_START_S,
    )
    return pv_name


def _spec(volumes: list[dict[str, Any]], mounts: list[dict[str, Any]]) -> dict[str, Any]:
    script = "cat /models/model.bin && touch /compile/ok && exec sleep 3600"
    return {
        "containers": [container("serve", script, volumeMounts=mounts)],
        "volumes": volumes,
        "terminationGracePeriodSeconds": 0,
    }


def _state(plane: Plane, namespace: str, name: str) -> tuple[str, str]:
    live = plane.api.get(resource_path("v1", "pods", namespace, name))
    statuses = live["status"].get("containerStatuses") or [{}]
    waiting = (statuses[0].get("state") or {}).get("waiting") or {}
    return live["status"].get("phase", ""), waiting.get("reason", "")


def test_one_claim_in_two_volumes_hangs_a_1_34_kubelet_and_one_volume_starts(
    realk8s: Plane, real_node: RealNode, namespace: str, tmp_path: Path
) -> None:
    pv_name = _claim(realk8s, namespace, real_node, tmp_path)
    pods = resource_path("v1", "pods", namespace)
    try:
        claim = {"claimName": "weights"}
        two = _spec(
            [
                {"name": "model-cache", "persistentVolumeClaim": {**claim, "readOnly": True}},
                {"name": "compile-cache", "persistentVolumeClaim": claim},
            ],
            [
                {"name": "model-cache", "mountPath": "/models", "readOnly": True},
                {"name": "compile-cache", "mountPath": "/compile", "subPath": "compile"},
            ],
        )
        one = _spec(
            [{"name": "weights", "persistentVolumeClaim": claim}],
            [
                {"name": "weights", "mountPath": "/models", "readOnly": True},
                {"name": "weights", "mountPath": "/compile", "subPath": "compile"},
            ],
        )
        realk8s.api.create(pods, pod("two-volumes", two))
        realk8s.api.create(pods, pod("one-volume", one))
        wait_until(
            "the one-volume pod to run", lambda: _state(realk8s, namespace, "one-volume")[0] == "Running", POD_START_S
        )
        deadline = time.monotonic() + HANG_BOUND_S
        while time.monotonic() < deadline:
            assert _state(realk8s, namespace, "two-volumes") == ("Pending", "ContainerCreating")
            time.sleep(1)
        assert realk8s.api.get(pods + "/two-volumes")["spec"]["nodeName"] == real_node.name
        assert (tmp_path / "weights" / "compile" / "ok").exists()
    finally:
        realk8s.api.request("DELETE", pods + "/two-volumes")
        realk8s.api.request("DELETE", pods + "/one-volume")
        realk8s.api.request("DELETE", f"/api/v1/persistentvolumes/{pv_name}")
