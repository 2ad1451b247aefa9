"""What `parallel.replicas` and `kubernetes.routing: inference-pool` render: the LWS group count and the
anti-affinity between groups, one ComputeDomain for all groups, the InferencePool and its endpoint picker (held to
the upstream CRD, Kubernetes 1.34's strict schemas and the restricted Pod Security Standard), and a GitOps folder
that `kubectl kustomize` builds.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from tests.conftest import EXAMPLE_SETS, run_cli, venv_tool
from tests.render.kube_schemas import K8S_VERSION, crd_schema, validator
from tests.render.test_pod_security import BASELINE, RESTRICTED
from tests.support import crds
from tests.support.selectors import match_label_selector

K3 = "kimi-k3-gb300-tp16"
SCALED = [
    "parallel.replicas=2",
    "kubernetes.routing=inference-pool",
    "kubernetes.gateway_namespace=envoy-gateway-system",
]
ANTI = "preferredDuringSchedulingIgnoredDuringExecution"


def _set(*sets: str) -> list[dict[str, Any]]:
    return [m.obj for m in build(load_profile(K3, list(sets)))]


def _one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind]
    return found


def _templates(lws: dict[str, Any]) -> list[dict[str, Any]]:
    template = lws["spec"]["leaderWorkerTemplate"]
    return [template["leaderTemplate"], template["workerTemplate"]]


def test_replicas_render_the_group_count_and_steer_groups_apart() -> None:
    one = _one(_set(), "LeaderWorkerSet")
    assert one["spec"]["replicas"] == 1
    assert all("podAntiAffinity" not in t["spec"]["affinity"] for t in _templates(one))
    four = _one(_set("parallel.replicas=4"), "LeaderWorkerSet")
    assert four["spec"]["replicas"] == 4
    for template in _templates(four):
        affinity = template["spec"]["affinity"]
        (required,) = affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        (preferred,) = affinity["podAntiAffinity"][ANTI]
        term = preferred["podAffinityTerm"]
        assert required["topologyKey"] == term["topologyKey"] == "nvidia.com/gpu.clique"
        assert term["mismatchLabelKeys"] == required["matchLabelKeys"] == ["leaderworkerset.sigs.k8s.io/group-key"]
    assert (
        kubernetes_validate.validate(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": _templates(four)[0]["spec"]},
            K8S_VERSION,
            strict=True,
        )
        == K8S_VERSION
    )


def test_one_compute_domain_serves_every_group() -> None:
    objects = _set("parallel.replicas=3")
    domain = _one(objects, "ComputeDomain")
    assert domain["spec"]["numNodes"] == 0
    template = domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
    for pod in _templates(_one(objects, "LeaderWorkerSet")):
        assert [c["resourceClaimTemplateName"] for c in pod["spec"]["resourceClaims"]] == [template]


def test_replicas_on_a_driver_without_per_clique_imex_domains_is_refused() -> None:
    done = run_cli(
        "render",
        "-p",
        K3,
        *EXAMPLE_SETS,
        "--set",
        "parallel.replicas=2",
        "--set",
        "kubernetes.dra_driver_version=25.3.2",
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("error: parallel.replicas 2 needs NVIDIA DRA driver >= 25.8 (or the renamed v0.4.0+)")
    assert lines[1].startswith("hint: upgrade the DRA driver")
    one = run_cli("render", "-p", K3, *EXAMPLE_SETS, "--set", "kubernetes.dra_driver_version=25.3.2")
    assert one.returncode == 0, one.stderr


def test_routing_service_renders_no_pool() -> None:
    kinds = {o["kind"] for o in _set("parallel.replicas=2")}
    assert "InferencePool" not in kinds and "Deployment" not in kinds


def test_the_inference_pool_matches_the_upstream_crd_and_selects_only_leaders() -> None:
    crds.require()
    objects = _set(*SCALED)
    pool = _one(objects, "InferencePool")
    validator(crd_schema("InferencePool", "v1")).validate(pool)
    assert pool["spec"]["targetPorts"] == [{"number": 8000}]
    service = next(o for o in objects if o["kind"] == "Service" and o["metadata"]["name"] == f"{K3}-epp")
    ref = pool["spec"]["endpointPickerRef"]
    assert ref["failureMode"] == "FailOpen"
    assert [p["port"] for p in service["spec"]["ports"] if p["name"] == "grpc-ext-proc"] == [ref["port"]["number"]]
    # The labels the LWS controller gives each pod (kubernetes-sigs/lws pkg/webhooks/pod_webhook.go) over the template's.
    lws = _one(objects, "LeaderWorkerSet")
    selected = []
    for group in range(2):
        for worker in range(4):
            template = _templates(lws)[0 if worker == 0 else 1]
            labels = {
                **template["metadata"]["labels"],
                "leaderworkerset.sigs.k8s.io/name": K3,
                "leaderworkerset.sigs.k8s.io/group-index": str(group),
                "leaderworkerset.sigs.k8s.io/worker-index": str(worker),
            }
            for gated in (False, True):
                # The mark a passed gate sets on a leader pod (k3deploy/traffic_gate.py); no template renders it.
                marked = {**labels, "k3deploy/gated": "true"} if gated else labels
                if match_label_selector(pool["spec"]["selector"], marked):
                    selected.append((group, worker, gated))
    assert "k3deploy/gated" not in json.dumps(lws)
    assert selected == [(0, 0, True), (1, 0, True)]


def test_a_pool_without_its_picker_port_fails_the_upstream_crd() -> None:
    crds.require()
    pool = _one(_set(*SCALED), "InferencePool")
    del pool["spec"]["targetPorts"]
    with pytest.raises(Exception, match="targetPorts"):
        validator(crd_schema("InferencePool", "v1")).validate(pool)


@pytest.mark.parametrize("kind", ["ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Deployment", "Service"])
def test_the_endpoint_picker_objects_validate_strictly(kind: str) -> None:
    for obj in [o for o in _set(*SCALED) if o["kind"] == kind]:
        assert kubernetes_validate.validate(obj, K8S_VERSION, strict=True) == K8S_VERSION


def test_the_endpoint_picker_reads_its_config_and_meets_restricted() -> None:
    objects = _set(*SCALED)
    deployment = _one(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    for rule in list(BASELINE.values()) + list(RESTRICTED.values()):
        if rule.__name__ != "app_armor":
            assert rule(pod) == [], rule.__name__
    (container,) = pod["containers"]
    args = container["args"]
    assert args[args.index("--pool-name") + 1] == K3 and args[args.index("--pool-namespace") + 1] == "kimi-k3"
    config_file = args[args.index("--config-file") + 1]
    config_map = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == f"{K3}-epp")
    mount = next(m for m in container["volumeMounts"] if config_file.startswith(m["mountPath"] + "/"))
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    plugins = yaml.safe_load(config_map["data"][config_file.rsplit("/", 1)[1]])
    assert {p["pluginRef"] for p in plugins["schedulingProfiles"][0]["plugins"]} == {
        "queue-scorer",
        "kv-cache-utilization-scorer",
        "prefix-cache-scorer",
    }
    assert match_label_selector(deployment["spec"]["selector"], deployment["spec"]["template"]["metadata"]["labels"])
    service = next(o for o in objects if o["kind"] == "Service" and o["metadata"]["name"] == f"{K3}-epp")
    assert match_label_selector(
        {"matchLabels": service["spec"]["selector"]}, deployment["spec"]["template"]["metadata"]["labels"]
    )
    role = next(o for o in objects if o["kind"] == "Role" and o["metadata"]["name"] == f"{K3}-epp")
    assert {(rule["apiGroups"][0], rule["resources"][0]) for rule in role["rules"]} == {
        ("", "pods"),
        ("inference.networking.k8s.io", "inferencepools"),
    }
    assert all(set(rule["verbs"]) == {"get", "list", "watch"} for rule in role["rules"])


@pytest.mark.integration
def test_the_scaled_gitops_folder_builds_with_kubectl_kustomize(tmp_path: Path) -> None:
    kubectl = venv_tool("kubectl")
    if not kubectl:
        pytest.skip("kubectl not installed (bash .ci/setup puts one in .venv/bin)")
    folder = tmp_path / "deploy"
    done = run_cli("render", "-p", K3, *EXAMPLE_SETS, *[a for s in SCALED for a in ("--set", s)], "-o", str(folder))
    assert done.returncode == 0, done.stderr
    built = subprocess.run(
        [kubectl, "kustomize", str(folder)], capture_output=True, text=True, timeout=120, check=False
    )
    assert built.returncode == 0, built.stderr
    objects = [doc for doc in yaml.safe_load_all(built.stdout) if doc is not None]
    assert objects == _set(*SCALED, "production=false")
    assert _one(objects, "LeaderWorkerSet")["spec"]["replicas"] == 2
    assert {"InferencePool", "Deployment"} <= {o["kind"] for o in objects}
