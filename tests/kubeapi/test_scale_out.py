"""Several serving groups (parallel.replicas) on the test API server with three cliques of four GB300 trays:
placement by the scheduler stand-in, one ComputeDomain with an IMEX domain per clique, and the InferencePool's
selector over the pods the LeaderWorkerSet stand-in creates.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.kubeapi.selectors import match_label_selector
from tests.kubeapi.server import KubeApiServer

pytestmark = pytest.mark.timeout(240)
PROFILE = "kimi-k3-gb300-tp16"
NS = "kimi-k3"
NAME = PROFILE
CLIQUES = [f"5b1c3a9e-2f4d-4e7a-9c1b-0d2e3f4a5b6c.{i}" for i in (1, 2, 3)]
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_LABEL = "leaderworkerset.sigs.k8s.io/group-index"


def three_cliques(kube: KubeApiServer, inference_pool: bool = False) -> KubeApiServer:
    """Three cliques of four free 4-GPU GB300 trays, the CRDs, a default RWX class and the nvidia RuntimeClass."""
    kube.add_crds(inference_pool=inference_pool)
    for index, clique in enumerate(CLIQUES, 1):
        kube.add_gb300_nodes(clique=clique, count=4, prefix=f"rack{index}")
    kube.add_storage_class(default=True)
    kube.add_runtime_class()
    return kube


def _clique_of(kube: KubeApiServer, node: str) -> str:
    return kube.store.get("nodes", node)["metadata"]["labels"]["nvidia.com/gpu.clique"]


def _pods(kube: KubeApiServer) -> list[dict]:
    return kube.store.list("pods", NS, label=f"{NAME_LABEL}={NAME}")


def test_two_groups_each_take_one_clique_and_both_become_available(kube: KubeApiServer) -> None:
    three_cliques(kube, inference_pool=True)
    done = run_cli(
        "apply",
        "-p",
        PROFILE,
        "--kubeconfig",
        str(kube.kubeconfig),
        "--timeout",
        "120s",
        "--set",
        "parallel.replicas=2",
        "--set",
        "kubernetes.routing=inference-pool",
        "--set",
        "kubernetes.unschedulable_grace_s=0",
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    lws = kube.store.get("leaderworkersets", NAME, NS)
    assert lws["spec"]["replicas"] == 2
    assert lws["status"]["readyReplicas"] == 2
    assert {c["type"]: c["status"] for c in lws["status"]["conditions"]}["Available"] == "True"

    groups: dict[str, set[str]] = {}
    for pod in _pods(kube):
        assert pod["status"]["phase"] == "Running", pod["metadata"]["name"]
        groups.setdefault(pod["metadata"]["labels"][GROUP_LABEL], set()).add(_clique_of(kube, pod["spec"]["nodeName"]))
    assert sorted(groups) == ["0", "1"]
    assert all(len(cliques) == 1 for cliques in groups.values()), groups  # each group inside one clique
    assert groups["0"] != groups["1"]  # and the two in different cliques: neither clique holds two groups

    # One ComputeDomain; the driver makes one IMEX domain per clique, so indices restart in each clique.
    (domain,) = kube.store.list("computedomains", NS)
    entries = domain["status"]["nodes"]
    assert domain["status"]["status"] == "Ready" and len(entries) == 8
    per_clique: dict[str, list[int]] = {}
    for entry in entries:
        per_clique.setdefault(entry["cliqueID"], []).append(entry["index"])
    assert sorted(sorted(indices) for indices in per_clique.values()) == [[0, 1, 2, 3], [0, 1, 2, 3]]


def test_the_inference_pool_selects_exactly_the_leaders(kube: KubeApiServer) -> None:
    three_cliques(kube, inference_pool=True)
    done = run_cli(
        "apply",
        "-p",
        PROFILE,
        "--kubeconfig",
        str(kube.kubeconfig),
        "--timeout",
        "120s",
        "-o",
        "json",
        "--set",
        "parallel.replicas=2",
        "--set",
        "kubernetes.routing=inference-pool",
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    actions = {o["object"]: o["action"] for o in json.loads(done.stdout)["objects"]}
    assert actions[f"{NS}/InferencePool/{NAME}"] == "created"
    pool = kube.store.get("inferencepools", NAME, NS)
    selector: dict[str, Any] = pool["spec"]["selector"]
    pods = _pods(kube)
    assert len(pods) == 8
    selected = sorted(p["metadata"]["name"] for p in pods if match_label_selector(selector, p["metadata"]["labels"]))
    assert selected == [f"{NAME}-0", f"{NAME}-1"]
    # The same leaders the API Service spreads over by default.
    service = kube.store.get("services", f"{NAME}-api", NS)
    behind = sorted(
        p["metadata"]["name"]
        for p in pods
        if match_label_selector({"matchLabels": service["spec"]["selector"]}, p["metadata"]["labels"])
    )
    assert behind == selected
    assert pool["spec"]["targetPorts"] == [{"number": 8000}]
    epp = pool["spec"]["endpointPickerRef"]
    assert kube.store.get("services", epp["name"], NS)["spec"]["ports"][0]["port"] == epp["port"]["number"]


def _leader(name: str, group: int, preferred: bool) -> dict:
    """A group's leader as LWS creates it from k3deploy's template: required affinity to its own group's clique,
    and (as rendered for replicas > 1) the preferred anti-affinity to other groups' cliques."""
    labels = {NAME_LABEL: name, GROUP_LABEL: str(group), "leaderworkerset.sigs.k8s.io/group-key": f"key-{group}"}
    affinity: dict[str, Any] = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": "nvidia.com/gpu.clique",
                    "labelSelector": {"matchLabels": {NAME_LABEL: name}},
                    "matchLabelKeys": ["leaderworkerset.sigs.k8s.io/group-key"],
                }
            ]
        }
    }
    if preferred:
        affinity["podAntiAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "topologyKey": "nvidia.com/gpu.clique",
                        "labelSelector": {"matchLabels": {NAME_LABEL: name}},
                        "mismatchLabelKeys": ["leaderworkerset.sigs.k8s.io/group-key"],
                    },
                }
            ]
        }
    return {
        "metadata": {"name": f"{name}-{group}", "labels": labels},
        "spec": {
            "affinity": affinity,
            "containers": [{"name": "vllm", "image": "vllm", "resources": {"limits": {"nvidia.com/gpu": "4"}}}],
        },
    }


@pytest.mark.parametrize("preferred", [False, True])
def test_leaders_share_a_clique_unless_steered_apart(kube: KubeApiServer, preferred: bool) -> None:
    """Pods are scheduled one at a time: without the preferred anti-affinity two leaders land in the first clique
    (equal scores, then the name), where only one group fits; with it the second leader goes to another clique."""
    three_cliques(kube)
    for group in (0, 1):
        kube.store.create("pods", _leader("m", group, preferred), "default")
    bound = kube.wait_for(
        lambda: all((kube.store.get("pods", f"m-{g}", "default")["spec"].get("nodeName")) for g in (0, 1))
    )
    assert bound
    cliques = {_clique_of(kube, kube.store.get("pods", f"m-{g}", "default")["spec"]["nodeName"]) for g in (0, 1)}
    assert len(cliques) == (2 if preferred else 1)
