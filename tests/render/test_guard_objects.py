"""The in-cluster guard (kubernetes.guard, render/guard.py): off by default; on, a one-replica Deployment of
`k3deploy guard` on the profile ConfigMap's profile in the k3deploy image (refused by a production render until
pinned, like the Jobs'), its own ServiceAccount, Role and ClusterRole whose rules are the loop's calls, a PodMonitor
and the NetworkPolicy opening its metrics port to Prometheus. The RBAC's real answers are tests/realk8s/
test_guard_in_cluster.py's."""

from __future__ import annotations

from typing import Any

import yaml

from k3deploy.profile import load_profile
from k3deploy.render.manifests import FLOATING_ANNOTATION, PROFILE_KEY, PROFILE_MOUNT_DIR, build
from k3deploy.rollout.access import command_access
from tests.conftest import run_cli
from tests.preflight.test_checks_pinning import PINNED

K3 = "kimi-k3-gb300-tp16"
ON = ["kubernetes.guard=true"]
NAME = f"{K3}-guard"


def objects(sets: list[str]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(m.kind, m.name): m.obj for m in build(load_profile(K3, sets))}


def rules(obj: dict[str, Any]) -> set[tuple[str, str, str, str]]:
    """(group, resource, verb, resourceName or '') of every rule."""
    return {
        (group, resource, verb, name)
        for rule in obj["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
        for name in rule.get("resourceNames") or [""]
    }


def test_off_by_default() -> None:
    assert not [key for key in objects([]) if "guard" in key[1]]


def test_on_it_renders_the_deployment_its_identity_its_scrape_and_its_opening() -> None:
    got = objects(ON)
    cluster = f"k3deploy-guard-kimi-k3-{K3}"
    assert {key for key in got if "guard" in key[1]} == {
        ("ServiceAccount", NAME),
        ("Role", NAME),
        ("RoleBinding", NAME),
        ("ClusterRole", cluster),
        ("ClusterRoleBinding", cluster),
        ("Deployment", NAME),
        ("PodMonitor", NAME),
        ("NetworkPolicy", NAME),
    }
    assert "namespace" not in got[("ClusterRole", cluster)]["metadata"]
    binding = got[("ClusterRoleBinding", cluster)]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": NAME, "namespace": "kimi-k3"}]
    assert binding["roleRef"]["name"] == cluster
    monitor = got[("PodMonitor", NAME)]
    deployment = got[("Deployment", NAME)]
    assert monitor["spec"]["selector"]["matchLabels"] == deployment["spec"]["template"]["metadata"]["labels"]
    opening = got[("NetworkPolicy", NAME)]["spec"]
    assert opening["podSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    assert opening["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 9400}]
    assert opening["ingress"][0]["from"][0]["namespaceSelector"]["matchExpressions"][0]["values"] == ["monitoring"]
    without = objects([*ON, "kubernetes.service_monitor=false", "kubernetes.network_policy=false"])
    assert ("PodMonitor", NAME) not in without and ("NetworkPolicy", NAME) not in without


def test_the_deployment_runs_the_loop_on_the_mounted_profile_in_the_k3deploy_image() -> None:
    profile = load_profile(K3, ON)
    deployment = objects(ON)[("Deployment", NAME)]
    spec = deployment["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == NAME and pod["automountServiceAccountToken"] is True
    [container] = pod["containers"]
    assert container["image"] == profile.kubernetes.smoke_image
    args = container["args"]
    assert args[:3] == ["guard", "-p", f"{PROFILE_MOUNT_DIR}/{PROFILE_KEY}"]
    assert "--once" not in args and "--dry-run" not in args and "--evidence-configmap" in args
    assert args[args.index("--metrics-port") + 1] == "9400"
    assert container["ports"] == [{"name": "metrics", "containerPort": 9400, "protocol": "TCP"}]
    [profile_volume] = [v for v in pod["volumes"] if v["name"] == "profile"]
    assert profile_volume["configMap"]["name"] == f"{K3}-profile"
    assert {"name": "profile", "mountPath": PROFILE_MOUNT_DIR, "readOnly": True} in container["volumeMounts"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert "kubernetes.smoke_image=" in deployment["metadata"]["annotations"][FLOATING_ANNOTATION]


def test_a_production_render_refuses_the_guards_floating_image_and_takes_it_pinned() -> None:
    sets = [s for s in PINNED if not s.startswith("kubernetes.smoke_image")] + ON
    refused = run_cli("render", "-p", K3, *[a for s in sets for a in ("--set", s)], "-o", "-")
    assert refused.returncode == 2 and "kubernetes.smoke_image=" in refused.stderr
    pinned = run_cli("render", "-p", K3, *[a for s in [*PINNED, *ON] for a in ("--set", s)], "-o", "-")
    assert pinned.returncode == 0, pinned.stderr
    [deployment] = [d for d in yaml.safe_load_all(pinned.stdout) if d["kind"] == "Deployment"]
    assert "@sha256:" in deployment["spec"]["template"]["spec"]["containers"][0]["image"]


#: The fault loop's rules in the release's namespace (the LeaderWorkerSet's get is its Events').
FAULTS = {
    ("", "pods", "delete", ""),
    ("", "pods/log", "get", ""),
    ("", "events", "list", ""),
    ("", "events", "create", ""),
    ("", "configmaps", "create", ""),
    ("leaderworkerset.x-k8s.io", "leaderworkersets", "get", K3),
    ("resource.nvidia.com", "computedomains", "list", ""),
    ("coordination.k8s.io", "leases", "create", ""),
    ("coordination.k8s.io", "leases", "get", f"{K3}-k3deploy-guard"),
    ("coordination.k8s.io", "leases", "update", f"{K3}-k3deploy-guard"),
    ("coordination.k8s.io", "leases", "patch", f"{K3}-k3deploy-guard"),
}


def _regate(replicas: int) -> set[tuple[str, str, str, str]]:
    """The re-gate's rules (smoke.gate_traffic, targets/kubernetes/regate.py): each leader pod of either colour read
    and labelled by name, either colour's LeaderWorkerSet read, the lock Lease and the smoke Job read by name."""
    leaders = [f"{lws}-{g}" for lws in (K3, f"{K3}-green") for g in range(replicas)]
    return {
        *{("", "pods", verb, pod) for pod in leaders for verb in ("get", "patch")},
        ("leaderworkerset.x-k8s.io", "leaderworkersets", "get", f"{K3}-green"),
        ("coordination.k8s.io", "leases", "get", f"{K3}-k3deploy-lock"),
        ("batch", "jobs", "get", f"{K3}-smoke"),
    }


def test_the_rules_are_the_loops_calls_and_nothing_more() -> None:
    got = objects(ON)
    # smoke.gate_traffic is on by default: the loop re-gates the leaders out of traffic.
    assert rules(got[("Role", NAME)]) == FAULTS | _regate(1)
    assert rules(objects([*ON, "smoke.gate_traffic=false"])[("Role", NAME)]) == FAULTS
    # The leaders of every group, by name; with smoke.gate_restarts off it records the gated revision (patch).
    three = rules(objects([*ON, "parallel.replicas=3", "smoke.gate_restarts=false"])[("Role", NAME)])
    records = {("leaderworkerset.x-k8s.io", "leaderworkersets", "patch", lws) for lws in (K3, f"{K3}-green")}
    assert three == FAULTS | _regate(3) | records
    assert rules(got[("ClusterRole", f"k3deploy-guard-kimi-k3-{K3}")]) == {
        ("", "nodes", "get", ""),
        ("", "nodes", "list", ""),
        ("", "nodes", "patch", ""),
        ("", "pods", "list", ""),
    }
    # Without a ComputeDomain (or with guard.compute_domain off) there is none to read.
    for off in ("kubernetes.compute_domain=false", "guard.compute_domain=false"):
        role = objects([*ON, off])[("Role", NAME)]
        assert not [r for r in rules(role) if r[1] == "computedomains"]


def test_up_asks_for_the_cluster_scoped_rbac_cluster_wide() -> None:
    access = command_access([m.obj for m in build(load_profile(K3, ON))])
    cluster = [a for a in access if a.resource in ("clusterroles", "clusterrolebindings")]
    assert cluster and all(not a.namespaced for a in cluster)
    assert {a.verb for a in cluster if a.resource == "clusterroles"} == {"get", "create", "patch", "delete"}
    assert all(a.namespaced for a in access if a.resource in ("roles", "deployments", "serviceaccounts"))


def test_up_holds_every_permission_the_re_gate_rules_grant() -> None:
    """The API server lets `up` create a Role only with permissions its user holds (RBAC's escalation check): each
    re-gate rule's verb is one `up` itself asks preflight for."""
    for sets in (ON, [*ON, "smoke.gate_restarts=false"]):
        built = [m.obj for m in build(load_profile(K3, sets))]
        asked = {(a.verb, a.resource, a.group) for a in command_access(built)}
        [role] = [o for o in built if o["kind"] == "Role" and o["metadata"]["name"] == NAME]
        granted = {
            (verb, resource, group) for group, resource, verb, name in rules(role) if name and "guard" not in name
        }
        assert ("patch", "pods", "") in granted and ("get", "jobs", "batch") in granted
        assert granted <= asked, granted - asked
