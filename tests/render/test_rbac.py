"""The set's Kubernetes API permissions equal what its in-cluster commands call: nothing, but for the smoke Job's gate
(smoke.gate_traffic), which lists, reads and labels the leader pods and reads the LeaderWorkerSet.

The in-cluster commands are read from the rendered Jobs themselves (every container running the k3deploy image),
so a new Job or a changed command is covered without editing a test. Running each as its pod runs it, with a real
token of its identity, against the real API server, and judging the set's RBAC with the real authorizer is
tests/realk8s/render/test_rbac.py; here: the rendered set's own parts, and the helpers both use.
"""

from __future__ import annotations

from typing import Any

from k3deploy.profile import load_profile
from k3deploy.render.manifests import build

K3 = "kimi-k3-gb300-tp16"
#: A short smoke (the in-cluster profile with a few requests), so the run exercises every phase quickly.
FAST = ["smoke.requests=2", "smoke.output_tokens=8", "smoke.request_timeout_s=10", "smoke.overall_timeout_s=60"]
RBAC_KINDS = {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}


def in_cluster_commands(objects: list[dict[str, Any]], image: str) -> dict[str, list[str]]:
    """Args of every container of the set that runs the k3deploy image, by Job name."""
    out = {}
    for obj in objects:
        if obj["kind"] != "Job":
            continue
        for container in obj["spec"]["template"]["spec"]["containers"]:
            if container["image"] == image:
                out[obj["metadata"]["name"]] = list(container["args"])
    return out


def pod_specs(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every pod spec of the set: Jobs' templates and the LeaderWorkerSet's leader and worker templates."""
    specs = [o["spec"]["template"]["spec"] for o in objects if o["kind"] == "Job"]
    for o in objects:
        if o["kind"] == "LeaderWorkerSet":
            lwt = o["spec"]["leaderWorkerTemplate"]
            specs += [lwt["leaderTemplate"]["spec"], lwt["workerTemplate"]["spec"]]
    return specs


def granted(objects: list[dict[str, Any]], namespace: str) -> set[tuple[str, str, str]]:
    """(verb, apiGroup, resource) the set's Roles and ClusterRoles grant, through its bindings, to its pods' identities."""
    accounts = {spec.get("serviceAccountName", "default") for spec in pod_specs(objects)}
    roles = {(o["kind"], o["metadata"]["name"]): o for o in objects if o["kind"] in {"Role", "ClusterRole"}}
    out = set()
    for binding in (o for o in objects if o["kind"] in {"RoleBinding", "ClusterRoleBinding"}):
        subjects = {
            (s.get("namespace", namespace), s["name"])
            for s in binding.get("subjects") or []
            if s["kind"] == "ServiceAccount"
        }
        if not subjects & {(namespace, a) for a in accounts}:
            continue
        role = roles.get((binding["roleRef"]["kind"], binding["roleRef"]["name"]), {})
        for rule in role.get("rules") or []:
            out |= {
                (v, g, r) for v in rule["verbs"] for g in rule.get("apiGroups", [""]) for r in rule.get("resources", [])
            }
    return out


#: What the smoke Job's gate calls (targets/kubernetes/job_gates.py): the leaders listed, each read and labelled (a
#: server-side apply is a patch), the LeaderWorkerSet read for the revision a gate passed on.
GATE = {
    ("get", "", "pods"),
    ("list", "", "pods"),
    ("patch", "", "pods"),
    ("get", "leaderworkerset.x-k8s.io", "leaderworkersets"),
}


def test_the_in_cluster_commands_are_the_smoke_and_the_node_preflight_and_the_set_grants_the_gate_alone() -> None:
    p = load_profile(K3, FAST)
    objects = [m.obj for m in build(p)]
    assert set(in_cluster_commands(objects, p.kubernetes.smoke_image)) == {f"{K3}-smoke", f"{K3}-node-preflight"}
    assert granted(objects, p.kubernetes.namespace) == GATE
    role = next(o for o in objects if o["kind"] == "Role")
    assert role["rules"][1]["resourceNames"] == [K3, f"{K3}-green"]
    # Recording the revision a gate passed on is needed only to let restarts in without a smoke.
    copies = [m.obj for m in build(load_profile(K3, [*FAST, "smoke.gate_restarts=false"]))]
    assert granted(copies, p.kubernetes.namespace) == GATE | {("patch", "leaderworkerset.x-k8s.io", "leaderworkersets")}
    ungated = [m.obj for m in build(load_profile(K3, [*FAST, "smoke.gate_traffic=false"]))]
    assert granted(ungated, p.kubernetes.namespace) == set()
    assert not [o for o in ungated if o["kind"] in RBAC_KINDS]


def test_only_the_gating_smoke_job_mounts_a_service_account_token() -> None:
    """Nothing else calls the API, so no token: the pods opt out, and so do the set's ServiceAccounts; the smoke
    Job that gates leaders mounts its own account's."""
    objects = [m.obj for m in build(load_profile(K3))]
    mounted = [
        s["serviceAccountName"] for s in pod_specs(objects) if s.get("automountServiceAccountToken") is not False
    ]
    assert mounted == [f"{K3}-smoke-gate"]
    assert all(o["automountServiceAccountToken"] is False for o in objects if o["kind"] == "ServiceAccount")
    ungated = [m.obj for m in build(load_profile(K3, ["smoke.gate_traffic=false"]))]
    assert all(spec.get("automountServiceAccountToken") is False for spec in pod_specs(ungated))


def test_granted_reads_rules_through_bindings_to_the_sets_accounts() -> None:
    """The judge itself: a Role bound to the pods' account counts, one bound to another account does not."""
    objects = [m.obj for m in build(load_profile(K3, ["smoke.gate_traffic=false"]))]
    role = {
        "kind": "Role",
        "metadata": {"name": "r"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }

    def binding(account: str) -> dict[str, Any]:
        return {
            "kind": "RoleBinding",
            "metadata": {"name": "b"},
            "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": account}],
        }

    assert granted([*objects, role, binding("k3deploy")], "kimi-k3") == {("get", "", "pods")}
    assert granted([*objects, role, binding("someone-else")], "kimi-k3") == set()
