"""`k3deploy preflight --cluster` as a namespaced deployer on the real plane: real RBAC answers its
SelfSubjectAccessReviews, so a namespace `admin` without rights on the set's custom resources fails k8s.rbac, and
a Role granting them passes it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.plane import Plane

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]
RBAC = "rbac.authorization.k8s.io/v1"
#: What the deployer may read cluster-wide for preflight's node, storage, runtime and controller checks.
READ = (
    ["nodes", "namespaces", "pods", "persistentvolumes"],
    [
        ("storage.k8s.io", "storageclasses"),
        ("node.k8s.io", "runtimeclasses"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        ("apps", "deployments"),
        ("apps", "daemonsets"),
        ("resource.k8s.io", "deviceclasses"),
        ("resource.k8s.io", "resourceslices"),
    ],
)


def _binding(kind: str, name: str, role_kind: str, role: str, namespace: str | None = None) -> dict:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "apiVersion": RBAC,
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "realk8s-deployer"}],
    }


@pytest.fixture
def deployer(realk8s: Plane, namespace: str, tmp_path: Path) -> Iterator[Path]:
    """The deployer's kubeconfig: namespace `admin` in `namespace`, cluster-wide reads; the cluster roles removed after."""
    name = f"realk8s-deployer-{uuid.uuid4().hex[:6]}"
    core, grouped = READ
    rules = [{"apiGroups": [""], "resources": core, "verbs": ["get", "list", "watch"]}]
    rules += [{"apiGroups": [g], "resources": [r], "verbs": ["get", "list", "watch"]} for g, r in grouped]
    api = realk8s.api
    api.create(
        resource_path(RBAC, "clusterroles"),
        {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules},
    )
    api.create(resource_path(RBAC, "clusterrolebindings"), _binding("ClusterRoleBinding", name, "ClusterRole", name))
    api.create(
        resource_path(RBAC, "rolebindings", namespace),
        _binding("RoleBinding", "admin", "ClusterRole", "admin", namespace),
    )
    as_deployer = realk8s.client("realk8s-deployer")
    try:  # the authorizer's RBAC cache takes the new bindings a moment later
        wait_until(
            "the deployer's bindings", lambda: as_deployer.request("GET", "/api/v1/nodes").status_code == 200, 30
        )
    finally:
        as_deployer.close()
    yield realk8s.kubeconfig(tmp_path / "deployer.kubeconfig", "realk8s-deployer")
    api.delete(resource_path(RBAC, "clusterrolebindings", name=name))
    api.delete(resource_path(RBAC, "clusterroles", name=name))


def _rbac_check(kubeconfig: Path, namespace: str) -> dict:
    done = run_cli(
        "preflight",
        "--cluster",
        "-p",
        "kimi-k3-gb300-tp16",
        "--kubeconfig",
        str(kubeconfig),
        "-n",
        namespace,
        "--set",
        "kubernetes.compute_domain=false",
        "--set",
        "kubernetes.hf_token_secret=null",
        "-o",
        "json",
    )
    assert done.returncode in (0, 1), done.stderr
    return next(c for c in json.loads(done.stdout)["checks"] if c["name"] == "k8s.rbac")


def test_real_rbac_fails_then_passes_the_deployers_access_check(realk8s: Plane, namespace: str, deployer: Path) -> None:
    denied = _rbac_check(deployer, namespace)
    assert denied["status"] == "fail"
    assert f"denied in {namespace}: get leaderworkersets.leaderworkerset.x-k8s.io" in denied["detail"]
    assert "servicemonitors.monitoring.coreos.com" in denied["detail"]

    role = {
        "apiVersion": RBAC,
        "kind": "Role",
        "metadata": {"name": "k3deploy-custom-resources", "namespace": namespace},
        "rules": [
            {
                "apiGroups": ["leaderworkerset.x-k8s.io", "monitoring.coreos.com"],
                "resources": ["leaderworkersets", "servicemonitors", "prometheusrules"],
                "verbs": ["get", "list", "watch", "create", "patch", "update", "delete"],
            }
        ],
    }
    realk8s.api.create(resource_path(RBAC, "roles", namespace), role)
    realk8s.api.create(
        resource_path(RBAC, "rolebindings", namespace),
        _binding("RoleBinding", "k3deploy-custom-resources", "Role", "k3deploy-custom-resources", namespace),
    )
    # The authorizer reads RBAC from an informer cache: wait until the binding answers before preflight asks.
    as_deployer = realk8s.client("realk8s-deployer")
    try:
        lws = resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", namespace)
        wait_until("the RoleBinding to take effect", lambda: as_deployer.request("GET", lws).status_code == 200, 30)
    finally:
        as_deployer.close()
    granted = _rbac_check(deployer, namespace)
    assert granted["status"] == "pass", granted
