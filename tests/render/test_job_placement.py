"""Where the set's pods that need no GPU land: the prefetch and smoke Jobs and the endpoint picker take
`kubernetes.job_tolerations` and `kubernetes.job_node_selector` (a tainted CPU or system pool); the GPU pods keep
theirs. The prefetch, which runs the vLLM image, also selects that image's architecture and tolerates the trays."""

from __future__ import annotations

from typing import Any

import kubernetes_validate

from k3deploy.profile import load_profile
from k3deploy.render.manifests import COMPONENT_LABEL, build
from tests.render.kube_schemas import K8S_VERSION

K3 = "kimi-k3-gb300-tp16"
POOL = ["kubernetes.routing=inference-pool", "kubernetes.gateway_namespace=envoy-gateway-system"]
PLACED = [
    "kubernetes.job_tolerations=[{key: dedicated, operator: Equal, value: cpu, effect: NoSchedule}]",
    "kubernetes.job_node_selector={node-role.example.com/cpu: 'true'}",
]
TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "cpu", "effect": "NoSchedule"}


def _pods(sets: list[str]) -> dict[str, dict[str, Any]]:
    """component -> pod spec of every Job and Deployment of the set."""
    pods = {}
    for m in build(load_profile(K3, sets)):
        if m.kind in {"Job", "Deployment"}:
            pods[m.obj["metadata"]["labels"][COMPONENT_LABEL]] = m.obj["spec"]["template"]["spec"]
    return pods


def test_the_pods_that_need_no_gpu_take_the_job_placement() -> None:
    pods = _pods([*POOL, *PLACED])
    for component in ("smoke", "endpoint-picker"):
        assert pods[component]["tolerations"] == [TOLERATION], component
    # The prefetch runs the (arm64) vLLM image: it also tolerates the GPU trays, where it may have to run.
    assert pods["prefetch"]["tolerations"] == [
        TOLERATION,
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    ]
    for component in ("prefetch", "smoke", "endpoint-picker"):
        assert pods[component]["nodeSelector"]["node-role.example.com/cpu"] == "true", component
    assert pods["prefetch"]["nodeSelector"]["kubernetes.io/arch"] == "arm64"
    # The node-preflight Job runs on the GPU nodes: the GPU placement, not the job one.
    assert TOLERATION not in pods["node-preflight"]["tolerations"]
    assert "node-role.example.com/cpu" not in pods["node-preflight"]["nodeSelector"]
    for m in build(load_profile(K3, [*POOL, *PLACED])):
        if m.kind in {"Job", "Deployment"}:
            assert kubernetes_validate.validate(m.obj, K8S_VERSION, strict=True) == K8S_VERSION


def test_by_default_they_carry_no_placement_but_the_prefetchs_arch() -> None:
    pods = _pods(POOL)
    for component in ("smoke", "endpoint-picker"):
        assert "tolerations" not in pods[component] and "nodeSelector" not in pods[component]
    assert pods["prefetch"]["nodeSelector"] == {"kubernetes.io/arch": "arm64"}
    assert pods["prefetch"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    own = _pods([*POOL, "kubernetes.prefetch_image=registry.example/hub-client:1"])["prefetch"]
    assert "tolerations" not in own and "nodeSelector" not in own  # its own image: any CPU node
