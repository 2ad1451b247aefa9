"""Upgrades on the real plane: two groups rolled one at a time by the real LWS controller under k3deploy's
partition walk, and blue-green with one group; each new group smoke-tested through its leader: by a port-forward
through the real kube-apiserver (KWOK PortForward objects serve the leaders' port with a scripted server), or by
--endpoint, which overrides every gate. The API Service's EndpointSlice is filled by the real controller."""

from __future__ import annotations

import json
import subprocess
import uuid

import httpx
import pytest

from tests.realk8s import objects
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.cluster_fixtures import API_SERVICE, NEW_IMAGE, SCRIPTED
from tests.realk8s.plane import Plane
from tests.realk8s.test_rollout import LWS, k3
from tests.realk8s.test_up import _group_pods
from tests.smoke.scripted_server import Script, scripted_server

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]
GREEN = LWS + "-green"
LWS_API = "leaderworkerset.x-k8s.io/v1"


def _ready_leaders(plane: Plane, namespace: str) -> list[str]:
    """The pods the real EndpointSlice controller lists as ready behind the API Service."""
    slices = plane.api.get(
        resource_path("discovery.k8s.io/v1", "endpointslices", namespace)
        + f"?labelSelector=kubernetes.io/service-name={API_SERVICE}"
    )["items"]
    return sorted(
        e["targetRef"]["name"]
        for s in slices
        for e in s.get("endpoints") or []
        if (e.get("conditions") or {}).get("ready")
    )


def _serving(plane: Plane, namespace: str, leaders: list[str]) -> None:
    """Wait until exactly `leaders` are ready behind the API Service (the real EndpointSlice controller follows
    pod readiness a moment later than `up` returns)."""
    wait_until(f"{leaders} behind {API_SERVICE}", lambda: _ready_leaders(plane, namespace) == leaders, 30)


def _images(plane: Plane, namespace: str) -> set[str]:
    return {c["image"] for p in _group_pods(plane, namespace) for c in p["spec"]["containers"]}


def _up(plane: Plane, namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    return k3(plane, namespace, "up", *SCRIPTED, *args)


def test_two_groups_roll_one_at_a_time_on_the_real_controllers(realk8s: Plane) -> None:
    namespace = f"k3-{uuid.uuid4().hex[:8]}"
    two = ("--set", "parallel.replicas=2")
    first = _up(realk8s, namespace, *two, "--skip-smoke")
    assert first.returncode == 0, first.stderr
    _serving(realk8s, namespace, [LWS + "-0", LWS + "-1"])
    # Chunks 50 ms apart: the forward's hops (API server, KWOK) may join chunks sent 2 ms apart into one read, and a
    # stream that arrives in one piece has no decode rate to judge.
    script = Script(models=["moonshotai/Kimi-K3"], tokens_per_chunk=[4, 4, 4, 4], chunk_delay_s=0.05)
    with scripted_server(script) as server:
        address = httpx.URL(server.url)
        for leader in (LWS + "-0", LWS + "-1"):
            forward = objects.port_forward(leader, namespace, 8000, address.host, int(address.port or 80))
            realk8s.api.create(resource_path("kwok.x-k8s.io/v1alpha1", "portforwards", namespace), forward)
        # No --endpoint, no --group-endpoint: every gate forwards through the API server, as from a workstation.
        upgrade = _up(realk8s, namespace, *two, *NEW_IMAGE)
        served = server.counters.requests
    assert upgrade.returncode == 0, upgrade.stderr
    order = [
        upgrade.stderr.index(line)
        for line in (
            f"rolling group 1 of {LWS} (partition 1",
            f"smoke of group 1 through its leader {LWS}-1",
            f"via port-forward to pod/{namespace}/{LWS}-1:8000",
            f"rolling group 0 of {LWS} (partition 0",
            f"smoke of group 0 through its leader {LWS}-0",
            f"via port-forward to pod/{namespace}/{LWS}-0:8000",
            f"all 2 groups of {LWS} rolled",
            "smoke via port-forward to pod/",
        )
    ]
    # Three smokes (two gates and the final one) of a warm-up and two measured streams each.
    assert served >= 3 * 3
    assert order == sorted(order), upgrade.stderr
    assert _images(realk8s, namespace) == {"vllm/vllm-openai:kimi-k3-next"}
    live = realk8s.api.get(resource_path(LWS_API, "leaderworkersets", namespace, LWS))
    assert live["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"].get("partition", 0) == 0
    assert live["status"]["readyReplicas"] == 2 and live["status"]["updatedReplicas"] == 2
    _serving(realk8s, namespace, [LWS + "-0", LWS + "-1"])
    assert k3(realk8s, namespace, "down", "--yes", "--purge", "--timeout", "120s").returncode == 0


def test_blue_green_switches_to_a_smoked_new_group_on_the_real_controllers(realk8s: Plane) -> None:
    namespace = f"k3-{uuid.uuid4().hex[:8]}"
    first = _up(realk8s, namespace, "--skip-smoke")
    assert first.returncode == 0, first.stderr
    with scripted_server(Script(models=["moonshotai/Kimi-K3"], tokens_per_chunk=[4, 4, 4, 4])) as server:
        result = _up(
            realk8s,
            namespace,
            "--strategy",
            "blue-green",
            *NEW_IMAGE,
            # --endpoint alone overrides the new group's gate too (no PortForward exists: a forward would fail).
            "--endpoint",
            server.url,
        )
    assert result.returncode == 0, result.stderr
    order = [
        result.stderr.index(line)
        for line in (
            f"blue-green: new group {GREEN} beside the live {LWS}",
            f"smoke of the new group {GREEN} through its leader",
            f"via the given endpoint {server.url}",
            f"switched Service {API_SERVICE} to {GREEN}",
            f"deleted the old group {LWS}",
        )
    ]
    assert order == sorted(order), result.stderr
    api = realk8s.api
    assert api.find(resource_path(LWS_API, "leaderworkersets", namespace, LWS)) is None
    assert api.find(resource_path(LWS_API, "leaderworkersets", namespace, GREEN)) is not None
    selector = api.get(resource_path("v1", "services", namespace, API_SERVICE))["spec"]["selector"]
    assert selector["leaderworkerset.sigs.k8s.io/name"] == GREEN
    _serving(realk8s, namespace, [GREEN + "-0"])
    status = json.loads(k3(realk8s, namespace, "status", "-o", "json").stdout)
    assert status["blue_green"] == {"serving": GREEN, "groups": [GREEN], "previews": [], "in_progress": False}
    assert k3(realk8s, namespace, "down", "--yes", "--purge", "--timeout", "120s").returncode == 0
    assert api.find(resource_path(LWS_API, "leaderworkersets", namespace, GREEN)) is None
