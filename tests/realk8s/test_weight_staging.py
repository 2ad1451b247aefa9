"""kubernetes.weight_staging: node-local on the real plane: preflight's Pod Security and access reviews judge the
staging DaemonSet (a baseline namespace FAILs it for its hostPath, the real admission refuses it the same way; the
verbs `apply` needs on it are asked for), and once `k3deploy apply` made the set the real DaemonSet controller and
scheduler put one staging pod on each tray a group may use (the pinned clique's GB300 nodes, not the other cliques'
nor the CPU nodes), while the LWS controller's serving pods carry the tray's folder, the links' emptyDir and the one
weight claim. Without staging there is no DaemonSet and the serving pods mount the claim only and serve the Hub id
(on a real kubelet too: test_rendered_serving_pods.py)."""

from __future__ import annotations

from typing import Any

import pytest

from k3deploy.kube.client import KubeOptions
from k3deploy.pod_volumes import repeated_claims
from k3deploy.preflight.access import Access
from k3deploy.preflight.run import run_preflight
from k3deploy.profile import load_profile
from k3deploy.render.manifests import build, rendered_objects
from k3deploy.report.model import CheckResult, Status
from k3deploy.rollout.access import command_access
from tests.preflight.test_checks_pinning import PINNED
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.cluster_fixtures import LWS, NO_DRA, PROFILE, TIMEOUT, Deployment
from tests.realk8s.objects import clique_ids

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]
ENFORCE = "pod-security.kubernetes.io/enforce"
STAGING = f"{LWS}-weight-staging"


def _staged(clique: str) -> list[str]:
    return [
        "kubernetes.hf_token_secret=null",
        "kubernetes.weight_staging=node-local",
        "kubernetes.pod_security_level=privileged",
        f"kubernetes.clique={clique}",
    ]


def _eligible(deploy: Deployment, clique: str) -> set[str]:
    """The plane's nodes a serving pod of the pinned clique may take (GFD labels as the render selects them)."""
    nodes = deploy.plane.api.get("/api/v1/nodes")["items"]
    return {
        n["metadata"]["name"]
        for n in nodes
        if (n["metadata"].get("labels") or {}).get("nvidia.com/gpu.clique") == clique
        and (n["metadata"].get("labels") or {}).get("nvidia.com/gpu.product") == "NVIDIA-GB300"
    }


def _staging_pods(deploy: Deployment) -> list[dict[str, Any]]:
    return [
        p
        for p in deploy.pods(STAGING)
        if p["metadata"]["labels"].get("app.kubernetes.io/component") == "weight-staging"
    ]


def test_preflight_judges_the_daemonset_then_it_lands_on_the_groups_trays_only(deploy: Deployment) -> None:
    clique = clique_ids(3)[1]
    profile = load_profile(PROFILE, [*PINNED, NO_DRA[1], *_staged(clique), f"kubernetes.namespace={deploy.namespace}"])
    objects = rendered_objects(profile)
    needs = command_access(objects)
    for verb in ("get", "create", "patch", "delete"):
        assert Access(verb, "daemonsets", "apps") in needs, verb

    # A namespace made beforehand at baseline: the DaemonSet's and the serving pods' hostPath are refused, by
    # preflight and by the real admission alike; the hint's level admits them.
    deploy.create_namespace()
    wait_until("the default ServiceAccount", lambda: deploy.get("serviceaccounts", "default"), 60)
    deploy.patch(f"/api/v1/namespaces/{deploy.namespace}", {"metadata": {"labels": {ENFORCE: "baseline"}}})
    kube = KubeOptions(kubeconfig=str(deploy.plane.admin_kubeconfig))

    def preflight() -> dict[str, CheckResult]:
        return {r.name: r for r in run_preflight(profile, False, True, kube, objects=objects, needs=needs)}

    psa = preflight()["k8s.pod_security"]
    assert psa.status is Status.FAIL and f"DaemonSet/{STAGING}: host-path-volumes" in psa.detail, psa
    assert f"{ENFORCE}=privileged" in (psa.hint or ""), psa
    [ds] = [o for o in objects if o["kind"] == "DaemonSet"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "staging-admission", "namespace": deploy.namespace},
        "spec": {**ds["spec"]["template"]["spec"], "serviceAccountName": "default"},
    }
    refused = deploy.plane.api.request("POST", deploy.path("pods"), params={"dryRun": "All"}, json=pod)
    assert refused.status_code == 403 and "hostPath volumes" in refused.text, refused.text
    deploy.patch(f"/api/v1/namespaces/{deploy.namespace}", {"metadata": {"labels": {ENFORCE: "privileged"}}})
    checks = preflight()
    assert checks["k8s.pod_security"].status is Status.PASS, checks["k8s.pod_security"]
    assert checks["k8s.rbac"].status is Status.PASS, checks["k8s.rbac"]

    applied = deploy.k3("apply", *TIMEOUT, *[a for s in _staged(clique) for a in ("--set", s)])
    assert applied.returncode == 0, applied.stderr
    assert f"DaemonSet/{STAGING} created" in applied.stderr
    eligible = _eligible(deploy, clique)
    assert len(eligible) == 4

    def daemonset() -> dict[str, Any]:
        return dict(deploy.plane.api.find(resource_path("apps/v1", "daemonsets", deploy.namespace, STAGING)) or {})

    def landed() -> bool:
        live = daemonset()
        pods = _staging_pods(deploy)
        return (live.get("status") or {}).get("desiredNumberScheduled") == len(eligible) and len(pods) == len(eligible)

    wait_until("one staging pod per eligible tray", landed, 120)
    assert {p["spec"].get("nodeName") for p in _staging_pods(deploy)} <= eligible
    wait_until(
        "the staging pods bound", lambda: {p["spec"].get("nodeName") for p in _staging_pods(deploy)} == eligible, 120
    )

    serving = deploy.pods(f"{LWS}-0")
    assert serving, "the LWS controller made no serving pod"
    for pod in serving:
        spec = pod["spec"]
        assert spec["nodeName"] in eligible
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert volumes["node-weights"]["hostPath"]["path"] == profile.kubernetes.staging_path
        assert "emptyDir" in volumes["weights"] and repeated_claims(spec) == []
        assert [c["name"] for c in spec["initContainers"]][-2:] == ["wait-for-weights", "pick-weights"]
        [vllm] = [c for c in spec["containers"] if c["name"] == "vllm"]
        assert vllm["command"][2] == "/k3deploy-weights/target"
    rendered_ds = next(m.obj for m in build(profile) if m.kind == "DaemonSet")
    assert rendered_ds["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.clique"] == clique


def test_without_staging_no_daemonset_and_the_serving_pods_load_the_weight_volume(deploy: Deployment) -> None:
    applied = deploy.k3("apply", *TIMEOUT, "--set", "kubernetes.hf_token_secret=null")
    assert applied.returncode == 0, applied.stderr
    listed = deploy.plane.api.get(resource_path("apps/v1", "daemonsets", deploy.namespace))["items"]
    assert listed == []
    serving = deploy.pods(f"{LWS}-0")
    assert serving, "the LWS controller made no serving pod"
    for pod in serving:
        spec = pod["spec"]
        assert not [v for v in spec["volumes"] if "hostPath" in v or v["name"] == "weights"]
        assert "pick-weights" not in [c["name"] for c in spec["initContainers"]]
        [claim] = [v for v in spec["volumes"] if "persistentVolumeClaim" in v]
        assert claim["persistentVolumeClaim"]["claimName"] == f"{LWS}-model-cache"
        [vllm] = [c for c in spec["containers"] if c["name"] == "vllm"]
        assert vllm["command"][2] == "moonshotai/Kimi-K3" and "--revision" in vllm["command"]
