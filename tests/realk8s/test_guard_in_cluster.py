"""The in-cluster guard (kubernetes.guard) on the real plane: `k3deploy apply` creates its ServiceAccount, Role and
ClusterRole with the set; the real API server's RBAC (SubjectAccessReviews for the ServiceAccount) allows what the
guard's loop calls and denies what it does not need; and `guard --once` run with a token of that ServiceAccount (a
real TokenRequest) acts on a sick tray: the evidence in a new ConfigMap, the tray cordoned, the group deleted, the
Event said, the guard Lease taken and freed."""

from __future__ import annotations

import base64
import datetime
import json
from pathlib import Path

import pytest
import yaml

from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.cluster_fixtures import Deployment
from tests.realk8s.test_guard import FAULT, LWS, applied, group_pods, guard_events, node, set_fault, uncordon_after

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]
#: The plane has no PodMonitor CRD (and no Prometheus): the guard without its scrape.
ON = ("--set", "kubernetes.guard=true", "--set", "kubernetes.service_monitor=false")
RUN = ("--set", "guard.leader_health=false", "--set", "guard.confirm_after_s=0", "--set", "smoke.gate_traffic=false")
SA = f"{LWS}-guard"
AUTHZ = "authorization.k8s.io/v1"

#: (verb, group, resource, subresource, namespace: "ns" the release's / another / None cluster-wide, name).
NEEDED = [
    ("list", "", "nodes", "", None, ""),
    ("get", "", "nodes", "", None, "gb300-node-1"),
    ("patch", "", "nodes", "", None, "gb300-node-1"),
    ("list", "", "pods", "", None, ""),
    ("delete", "", "pods", "", "ns", f"{LWS}-0"),
    ("get", "", "pods", "log", "ns", f"{LWS}-0-1"),
    ("list", "", "events", "", "ns", ""),
    ("create", "", "events", "", "ns", ""),
    ("create", "", "configmaps", "", "ns", ""),
    ("get", "leaderworkerset.x-k8s.io", "leaderworkersets", "", "ns", LWS),
    ("create", "coordination.k8s.io", "leases", "", "ns", ""),
    ("get", "coordination.k8s.io", "leases", "", "ns", f"{LWS}-k3deploy-guard"),
    ("update", "coordination.k8s.io", "leases", "", "ns", f"{LWS}-k3deploy-guard"),
    ("patch", "coordination.k8s.io", "leases", "", "ns", f"{LWS}-k3deploy-guard"),
    # The re-gate (smoke.gate_traffic, rendered on by default): a leader read and labelled by name, the lock Lease
    # and the smoke Job read by name.
    ("get", "", "pods", "", "ns", f"{LWS}-0"),
    ("patch", "", "pods", "", "ns", f"{LWS}-0"),
    ("get", "leaderworkerset.x-k8s.io", "leaderworkersets", "", "ns", f"{LWS}-green"),
    ("get", "coordination.k8s.io", "leases", "", "ns", f"{LWS}-k3deploy-lock"),
    ("get", "batch", "jobs", "", "ns", f"{LWS}-smoke"),
]
NOT_NEEDED = [
    ("watch", "", "nodes", "", None, ""),
    ("update", "", "nodes", "", None, "gb300-node-1"),
    ("delete", "", "nodes", "", None, "gb300-node-1"),
    ("patch", "", "nodes", "status", None, "gb300-node-1"),
    ("delete", "", "pods", "", "default", "other-0"),
    ("create", "", "pods", "", "ns", ""),
    ("patch", "", "pods", "", "ns", f"{LWS}-0-1"),
    ("update", "", "pods", "", "ns", f"{LWS}-0"),
    ("patch", "", "pods", "status", "ns", f"{LWS}-0"),
    ("create", "", "pods", "eviction", "ns", f"{LWS}-0"),
    ("create", "", "pods", "exec", "ns", f"{LWS}-0"),
    ("get", "", "secrets", "", "ns", "hf-token"),
    ("list", "", "secrets", "", "ns", ""),
    ("get", "", "configmaps", "", "ns", f"{LWS}-profile"),
    ("update", "", "configmaps", "", "ns", f"{LWS}-profile"),
    ("delete", "", "configmaps", "", "ns", "x"),
    ("delete", "", "events", "", "ns", "x"),
    ("create", "", "events", "", "default", ""),
    ("update", "coordination.k8s.io", "leases", "", "ns", f"{LWS}-k3deploy-lock"),
    ("get", "batch", "jobs", "", "ns", f"{LWS}-prefetch"),
    ("create", "batch", "jobs", "", "ns", ""),
    ("delete", "coordination.k8s.io", "leases", "", "ns", f"{LWS}-k3deploy-guard"),
    ("get", "leaderworkerset.x-k8s.io", "leaderworkersets", "", "ns", "another"),
    ("patch", "leaderworkerset.x-k8s.io", "leaderworkersets", "", "ns", LWS),
    ("delete", "apps", "statefulsets", "", "ns", f"{LWS}-0"),
    ("list", "resource.nvidia.com", "computedomains", "", "ns", ""),
    ("create", "rbac.authorization.k8s.io", "rolebindings", "", "ns", ""),
    ("get", "", "pods", "log", "default", "other-0"),
]


def allowed(deploy: Deployment, verb: str, group: str, resource: str, sub: str, ns: str | None, name: str) -> bool:
    """The real API server's answer to a SubjectAccessReview for the guard's ServiceAccount."""
    where = {"ns": deploy.namespace}.get(ns or "", ns)
    attributes = {"verb": verb, "group": group, "resource": resource, "subresource": sub, "name": name}
    if where:
        attributes["namespace"] = where
    review = {
        "apiVersion": AUTHZ,
        "kind": "SubjectAccessReview",
        "spec": {
            "user": f"system:serviceaccount:{deploy.namespace}:{SA}",
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{deploy.namespace}", "system:authenticated"],
            "resourceAttributes": attributes,
        },
    }
    answer = deploy.plane.api.create(resource_path(AUTHZ, "subjectaccessreviews"), review)
    return bool(answer["status"].get("allowed"))


def sa_kubeconfig(deploy: Deployment, path: Path) -> Path:
    """A kubeconfig with a short-lived token of the guard's ServiceAccount (TokenRequest, as the kubelet mounts)."""
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 900}}
    answer = deploy.plane.api.create(resource_path("v1", "serviceaccounts", deploy.namespace, SA) + "/token", request)
    ca = base64.b64encode(deploy.plane.ca_file.read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "p", "cluster": {"server": deploy.plane.url, "certificate-authority-data": ca}}],
        "users": [{"name": SA, "user": {"token": answer["status"]["token"]}}],
        "contexts": [{"name": "p", "context": {"cluster": "p", "user": SA}}],
        "current-context": "p",
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def test_the_guards_rbac_is_the_least_that_works_and_its_loop_acts_on_it(deploy: Deployment, tmp_path: Path) -> None:
    before = applied(deploy, *ON)
    cluster = f"k3deploy-guard-{deploy.namespace}-{LWS}"
    rbac = "rbac.authorization.k8s.io/v1"
    scoped = [
        resource_path(rbac, "clusterrolebindings", name=cluster),
        resource_path(rbac, "clusterroles", name=cluster),
    ]
    for path in scoped:  # cluster-scoped: the namespace's deletion does not take them (`down` below does)
        deploy.on_teardown(lambda p=path: deploy.plane.api.delete(p))
    assert all(deploy.plane.api.find(path) is not None for path in scoped)
    assert SA in {o["metadata"]["name"] for o in deploy.list("serviceaccounts")}
    assert SA in {o["metadata"]["name"] for o in deploy.list("roles")}

    denied = [n for n in NEEDED if not allowed(deploy, *n)]
    assert denied == [], "the guard's ServiceAccount lacks what its loop calls"
    granted = [n for n in NOT_NEEDED if allowed(deploy, *n)]
    assert granted == [], "the guard's ServiceAccount may do more than its loop calls"

    # The loop, once, as the ServiceAccount: a sick tray under group 0.
    sick = next(p["spec"]["nodeName"] for n, p in before.items() if n != LWS + "-0")
    set_fault(deploy, sick)
    uncordon_after(deploy, sick)
    config = sa_kubeconfig(deploy, tmp_path / "guard.kubeconfig")
    done = deploy.k3("guard", "--once", "--evidence-configmap", "-o", "json", *ON, *RUN, kubeconfig=config)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["cordoned"] == [sick]
    assert sorted(report["deleted_pods"]) == sorted(before)
    [where] = report["evidence"]
    assert where.startswith(f"ConfigMap/{deploy.namespace}/{LWS}-group-0-")
    kept = deploy.get("configmaps", where.rpartition("/")[2])
    assert kept is not None and kept["metadata"]["labels"]["k3deploy/guard-evidence"] == LWS
    bundle = json.loads(kept["data"]["bundle.json"])
    assert sorted(p["name"] for p in bundle["pods"]) == sorted(before)
    assert any(c["type"] == FAULT for n in bundle["nodes"] if n["name"] == sick for c in n["conditions"])
    assert node(deploy, sick)["spec"]["unschedulable"] is True
    [said] = guard_events(deploy)
    assert said["reason"] == "TrayUnhealthy" and kept["metadata"]["name"] in said["message"]
    lease = deploy.get("leases", f"{LWS}-k3deploy-guard")
    assert lease is not None and lease["spec"].get("holderIdentity") is None  # taken for the pass, freed after
    # The leader goes in the foreground: the garbage collector removes its workers first, a moment after the pass.
    old_uids = {p["metadata"]["uid"] for p in before.values()}
    wait_until(
        "the group's old pods gone",
        lambda: not {p["metadata"]["uid"] for p in group_pods(deploy).values()} & old_uids or None,
        timeout_s=120,
    )

    # `down` removes what k3deploy created outside the namespace too.
    down = deploy.k3("down", "--yes", "--timeout", "120s", *ON)
    assert down.returncode == 0, down.stderr
    assert all(deploy.plane.api.find(path) is None for path in scoped)


def test_a_guard_that_does_not_hold_the_lease_does_not_act(deploy: Deployment) -> None:
    """Another guard leads (a live Lease of another holder): `--once` exits 3 naming it, the loop stands by."""
    deploy.create_namespace()
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    leader = "k3deploy@kimi-k3-gb300-tp16-guard-7d9f8c6b5-x2x4q pid 1 (guard)"
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": f"{LWS}-k3deploy-guard"},
        "spec": {"holderIdentity": leader, "leaseDurationSeconds": 600, "acquireTime": now, "renewTime": now},
    }
    deploy.plane.api.create(resource_path("coordination.k8s.io/v1", "leases", deploy.namespace), lease)

    once = deploy.k3("guard", "--once", *RUN)
    assert once.returncode == 3, once.stderr
    assert f"is led by {leader}: only the leader acts" in once.stderr
    looking = deploy.k3("guard", "--once", "--dry-run", *RUN)
    assert looking.returncode == 0, looking.stderr
    loop = deploy.k3("guard", "--timeout", "5s", "--interval", "1s", *RUN)
    assert loop.returncode == 0, loop.stderr
    assert f"guard: standing by: {leader} leads" in loop.stderr
    assert "leading" not in loop.stderr
    held = deploy.get("leases", f"{LWS}-k3deploy-guard")
    assert held is not None and held["spec"]["holderIdentity"] == leader

    # The leader stops renewing (its lease lapsed an hour ago by its own renewTime, 5 s long): one read cannot tell a
    # stopped guard from clocks that differ, so `--once` still exits 3 at once (before: it watched the lease for its
    # whole duration, 600 s, then took it); the loop takes it over once the record stayed unchanged for its duration
    # on its own clock (client-go's rule), acts, and frees it at its end.
    lapsed = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)
    held["spec"]["renewTime"] = lapsed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    held["spec"]["leaseDurationSeconds"] = 5
    deploy.plane.api.request(
        "PUT", resource_path("coordination.k8s.io/v1", "leases", deploy.namespace, f"{LWS}-k3deploy-guard"), json=held
    )
    refused = deploy.k3("guard", "--once", *RUN)
    assert refused.returncode == 3, refused.stderr
    assert f"is led by {leader}: only the leader acts" in refused.stderr
    assert "looks lapsed by its holder's renewTime" in refused.stderr
    assert deploy.get("leases", f"{LWS}-k3deploy-guard")["spec"]["holderIdentity"] == leader
    taken = deploy.k3("guard", "--timeout", "20s", "--interval", "1s", *RUN)
    assert taken.returncode == 0, taken.stderr
    assert f"guard: standing by: {leader} leads" in taken.stderr
    assert f"guard: took over the lease of {leader}: unchanged for its whole duration" in taken.stderr
    assert f"guard: leading: holds Lease/{LWS}-k3deploy-guard" in taken.stderr
    after = deploy.get("leases", f"{LWS}-k3deploy-guard")
    assert after is not None and after["spec"].get("holderIdentity") is None
    assert after["spec"]["leaseTransitions"] == 1
